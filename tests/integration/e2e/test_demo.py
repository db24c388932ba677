"""``make demo`` as a new user runs the README's first command: in a lab folder of its own that starts empty (its
own ports and loopback prefix, beside the lab of the other tests), nothing prepared by a fixture.

Both clusters (3 control planes + 2 workers each, Metal3 and MAAS) end with every machine Running, with a
providerID and a Ready Node in its own workload API; the inventory plugin file the demo writes lists the ten
machines, grouped by cluster and role, and an ad-hoc ``ansible ... -m ping -c local`` reaches every one. Then
every file the lab wrote besides the services' own state is removed and ``make demo`` runs again on the running
lab (it converges, changing nothing); last ``make demo-down``, the README's tear-down, deprovisions both clusters
and stops every process of that lab.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.store.sqlite import SqliteStore
from lab import config, process
from lab.config import REPO
from tests.integration.inventory.test_inventory_lab import _unwrap
from tests.integration.net import free_port_base

pytestmark = pytest.mark.timeout(2400)

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
    env.pop("BMCAPI_LAB_DIR", None)
    argv = [str(Path(sys.executable).with_name(name)), *args]
    return subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)


def _failure(out: str) -> str:
    """What a failed run said: every task failure whole (they come first and scroll out of a tail), then the tail."""
    lines = out.splitlines()
    fatal = [i for i, line in enumerate(lines) if line.startswith(("fatal: ", "failed: ")) or "FAILED!" in line]
    blocks = ["\n".join(lines[i : i + 12])[:3000] for i in fatal[:4]]
    return "\n--\n".join(["task failures:", *blocks, "the end of the output:", out[-5000:]])


# What the test run's own lab settings are (run_integration.sh's fast simulator timings): a user has none of them.
TEST_ONLY = ("BMCAPI_NODESIM_TIMINGS", "BMCAPI_MAAS_TIMINGS", "BMCAPI_KEEP_LAB")


@pytest.fixture
def user_lab(tmp_path):
    """The environment of a user whose lab folder is empty: its own folder, ports and loopback prefix (so that it
    never meets the other tests' lab); every process of it stopped by PID at the end, whatever happened."""
    root = tmp_path / "lab"
    env = {k: v for k, v in os.environ.items() if k not in TEST_ONLY}
    env.update(BMCAPI_LAB_DIR=str(root), BMCAPI_LAB_PORT_BASE=str(free_port_base()), BMCAPI_LAB_LOOPBACK="127.233")
    yield root, env
    down = subprocess.run([sys.executable, "-m", "lab", "down"], cwd=REPO, env=env, capture_output=True, text=True)
    assert down.returncode == 0, down.stdout + down.stderr


def _make(target: str, env: dict, timeout: int = 1500) -> tuple[int, str]:
    proc = subprocess.run(["make", target], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)
    return proc.returncode, proc.stdout + proc.stderr


def _check_demo(out: str, root: Path) -> None:
    assert "make demo: done in" in out and "make demo-down" in out
    assert "FAILED" not in out
    for cluster, scheme in CLUSTERS.items():
        rows = _table(out, cluster)
        assert sorted(r[1] for r in rows) == ["control-plane"] * 3 + ["worker"] * 2, rows
        for row in rows:
            machine, role, _host, address, state, provider_id, ready, certs = row
            assert (certs != "-") == (role == "control-plane"), row
            assert state == "Running" and ready == "True" and provider_id.startswith(scheme), row
            assert address.startswith("127.233."), row  # the user's lab's own loopback prefix


# The files the lab writes that are no service's own state: the inventories' and scenarios' (lab/bringup.py) and
# the demo's inventory source.
WRITTEN = ("inventory/lab.json", "inventory/ironic.json", "inventory/clouds.yaml", "demo/demo.capi.machines.yml")


def test_make_demo_from_an_empty_lab_folder_provisions_both_clusters_and_tears_down(user_lab):
    root, env = user_lab
    assert not root.exists()
    rc, out = _make("demo", env)
    assert rc == 0, _failure(out)
    _check_demo(out, root)

    inventory = root / "demo" / "demo.capi.machines.yml"
    listed = _tool("ansible-inventory", "-i", str(inventory), "--list")
    assert listed.returncode == 0, listed.stderr[-4000:]
    groups = _unwrap(json.loads(listed.stdout))  # ansible-inventory marks unsafe strings
    for cluster in CLUSTERS:
        group = cluster.replace("-", "_")
        assert len(groups[f"cluster_{group}"]["hosts"]) == 5
        assert len(groups[f"{group}_control_plane"]["hosts"]) == 3
        assert len(groups[f"{group}_workers"]["hosts"]) == 2
    hostvars = groups["_meta"]["hostvars"]
    assert len(hostvars) == 10 and all(v["ansible_host"].startswith("127.233.") for v in hostvars.values())
    ping = _tool(
        "ansible", "-i", str(inventory), "all", "-m", "ansible.builtin.ping", "-c", "local",
        "-e", f"ansible_python_interpreter={sys.executable}",
    )  # fmt: skip
    assert ping.returncode == 0, ping.stdout[-4000:] + ping.stderr[-2000:]
    assert ping.stdout.count('"ping": "pong"') == 10, ping.stdout[-4000:]

    # every file the lab wrote outside the services' own state removed, the lab still running: the demo again
    for rel in WRITTEN:
        (root / rel).unlink()
    rc, out = _make("demo", env)
    assert rc == 0, _failure(out)
    _check_demo(out, root)
    assert all((root / rel).is_file() for rel in WRITTEN)

    rc, out = _make("demo-down", env, timeout=1200)
    assert rc == 0, out[-8000:]
    store = SqliteStore(str(root / "demo" / "state.db"))
    try:
        for cluster in CLUSTERS:
            assert store.list("Machine", cluster) == [] and store.list("Cluster", cluster) == []
    finally:
        store.close()
    cfg = config.LabConfig(root=root)
    assert process.running(cfg) == {}, process.running(cfg)  # the tear-down stopped the whole lab
