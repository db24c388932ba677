"""Several processes render data for machines of one template at once: indexes and addresses never shared."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from m3_objects import machine_set

from ansible_collections.baremetal.capi.plugins.module_utils.metal3.data import DataManager
from ansible_collections.baremetal.capi.plugins.module_utils.model import kinds, meta

REPO = Path(__file__).resolve().parents[3]
PROCS, PER_PROC, NS = 8, 4, "metal3"

WORKER = r"""
import json, os, sys, time
from ansible_collections.baremetal.capi.plugins.module_utils.store.sqlite import SqliteStore
from ansible_collections.baremetal.capi.plugins.module_utils.metal3.data import DataManager

path, go, names = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
dm = DataManager(SqliteStore(path))
while not os.path.exists(go):
    time.sleep(0.001)
for name in names:
    r = dm.reconcile(name, "metal3")
    print(json.dumps({"m3m": name, "index": r["index"], "ip": r["metaData"]["ip"], "nd": r["networkData"]}), flush=True)
"""


def test_concurrent_machines_get_distinct_indexes_and_addresses(store, tmp_path):
    dm = DataManager(store)
    for name, subnet in (("prov", "172.22.0.0/24"), ("bm", "192.168.111.0/24")):
        dm.ipam.apply_pool(
            meta.new("IPPool", name, NS, spec={"namePrefix": name, "pools": [{"subnet": subnet}], "prefix": 24})
        )
    dm.apply_template(
        meta.new(
            "Metal3DataTemplate",
            "t",
            NS,
            spec={
                "metaData": {"ipAddressesFromPool": [{"key": "ip", "name": "prov"}], "indexes": [{"key": "i"}]},
                "networkData": {"networks": {"ipv4": [{"id": "n", "link": "eth0", "ipAddressFromIPPool": "bm"}]}},
            },
        )
    )
    names = [f"m-{i}" for i in range(PROCS * PER_PROC)]
    for i, name in enumerate(names):
        machine_set(store, m3m=name, machine=f"mach-{i}", bmh=f"host-{i}", template="t")
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    go = tmp_path / "go"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO / "build"), str(REPO)]))
    # every process renders its own machines, and all of them also render m-0 (the same machine, racing)
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                str(script),
                store.path,
                str(go),
                ",".join(names[w * PER_PROC : (w + 1) * PER_PROC] + ["m-0"]),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for w in range(PROCS)
    ]
    time.sleep(1.0)
    go.write_text("go")
    answers = []
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        answers += [json.loads(line) for line in out.splitlines()]
    assert len(answers) == PROCS * (PER_PROC + 1)
    by_machine = {}
    for a in answers:
        by_machine.setdefault(a["m3m"], set()).add((a["index"], a["ip"], a["nd"]["networks"][0]["ip_address"]))
    assert all(len(v) == 1 for v in by_machine.values())  # m-0 got one answer, whoever asked
    got = [next(iter(v)) for v in by_machine.values()]
    assert sorted(g[0] for g in got) == list(range(PROCS * PER_PROC))
    assert len({g[1] for g in got}) == len({g[2] for g in got}) == PROCS * PER_PROC
    assert len(store.list("Metal3Data", NS)) == PROCS * PER_PROC
    assert len(store.list(kinds.M3_IPADDRESS, NS)) == 2 * PROCS * PER_PROC
    assert len(store.list("Secret", NS)) == 2 * PROCS * PER_PROC
    indexes = store.get("Metal3DataTemplate", "t", NS)["status"]["indexes"]
    assert sorted(e["index"] for e in indexes) == list(range(PROCS * PER_PROC))
