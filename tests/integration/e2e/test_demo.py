"""``make demo`` as the README's first command runs it (``python -m lab.demo`` on the running lab).

Both clusters (3 control planes + 2 workers each, Metal3 and MAAS) end with every machine Running, with a
providerID and a Ready Node in its own workload API; the inventory plugin file the demo writes lists the ten
machines, grouped by cluster and role, and an ad-hoc ``ansible ... -m ping -c local`` reaches every one; then
``python -m lab.demo --down`` deprovisions both clusters.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from ansible_collections.baremetal.capi.plugins.module_utils.store.sqlite import SqliteStore
from lab.config import REPO
from tests.integration.inventory.test_inventory_lab import _unwrap

from .conftest import MAAS_FAST

pytestmark = pytest.mark.timeout(1800)

CLUSTERS = {"demo-metal3": "metal3://", "demo-maas": "maas:///"}


def _table(out: str, cluster: str) -> list[list[str]]:
    """The rows of the progress callback's final table for a cluster (after its header line)."""
    marker = f"Machines of {cluster}/{cluster}:\n"
    assert marker in out, out[-4000:]
    block = out.rsplit(marker, 1)[1].split("\n\n", 1)[0].splitlines()
    assert block[0].split() == [
        "MACHINE", "ROLE", "HOST/SYSTEM", "ADDRESS", "STATE", "PROVIDER", "ID", "NODE", "READY", "CERTS", "EXPIRE"
    ]  # fmt: skip
    assert block[-1].startswith("cluster CA expires "), block
    return [line.split() for line in block[1:-1]]


def _tool(name: str, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"))
    argv = [str(Path(sys.executable).with_name(name)), *args]
    return subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)


def _failure(out: str) -> str:
    """What a failed run said: every task failure whole (they come first and scroll out of a tail), then the tail."""
    lines = out.splitlines()
    fatal = [i for i, line in enumerate(lines) if line.startswith(("fatal: ", "failed: ")) or "FAILED!" in line]
    blocks = ["\n".join(lines[i : i + 12])[:3000] for i in fatal[:4]]
    return "\n--\n".join(["task failures:", *blocks, "the end of the output:", out[-5000:]])


def test_demo_provisions_both_clusters_and_the_inventory_reaches_their_machines(e2e_lab):
    store_path = e2e_lab.cfg.root / "demo" / "state.db"
    proc = subprocess.run([sys.executable, "-m", "lab.demo"], cwd=REPO, capture_output=True, text=True, timeout=1500)
    out = proc.stdout + proc.stderr
    try:
        assert proc.returncode == 0, _failure(out)
        assert "make demo: done in" in out and "python -m lab.demo --down" in out
        for cluster, scheme in CLUSTERS.items():
            rows = _table(out, cluster)
            assert sorted(r[1] for r in rows) == ["control-plane"] * 3 + ["worker"] * 2, rows
            for row in rows:
                machine, role, _host, address, state, provider_id, ready, certs = row
                assert (certs != "-") == (role == "control-plane"), row
                assert state == "Running" and ready == "True" and provider_id.startswith(scheme), row
                assert address.startswith("127."), row

        inventory = e2e_lab.cfg.root / "demo" / "demo.capi.machines.yml"
        listed = _tool("ansible-inventory", "-i", str(inventory), "--list")
        assert listed.returncode == 0, listed.stderr[-4000:]
        groups = _unwrap(json.loads(listed.stdout))  # ansible-inventory marks unsafe strings
        for cluster in CLUSTERS:
            group = cluster.replace("-", "_")
            assert len(groups[f"cluster_{group}"]["hosts"]) == 5
            assert len(groups[f"{group}_control_plane"]["hosts"]) == 3
            assert len(groups[f"{group}_workers"]["hosts"]) == 2
        hostvars = groups["_meta"]["hostvars"]
        assert len(hostvars) == 10 and all(v["ansible_host"].startswith("127.") for v in hostvars.values())

        ping = _tool(
            "ansible", "-i", str(inventory), "all", "-m", "ansible.builtin.ping", "-c", "local",
            "-e", f"ansible_python_interpreter={sys.executable}",
        )  # fmt: skip
        assert ping.returncode == 0, ping.stdout[-4000:] + ping.stderr[-2000:]
        assert ping.stdout.count('"ping": "pong"') == 10, ping.stdout[-4000:]
    finally:
        down = subprocess.run(
            [sys.executable, "-m", "lab.demo", "--down"], cwd=REPO, capture_output=True, text=True, timeout=1200
        )
        # the demo set the simulator's (slower) timings of its own; the other tests' again
        requests.post(e2e_lab.info["maas"]["control_url"] + "timings", json=MAAS_FAST, timeout=30)
    assert down.returncode == 0, (down.stdout + down.stderr)[-8000:]
    store = SqliteStore(str(store_path))
    try:
        for cluster in CLUSTERS:
            assert store.list("Machine", cluster) == [] and store.list("Cluster", cluster) == []
    finally:
        store.close()
