"""16 processes claim from one pool at once: no address handed out twice, every claim answered."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from ansible_collections.baremetal.capi.plugins.module_utils.metal3.ipam import IPAM
from ansible_collections.baremetal.capi.plugins.module_utils.model import kinds, meta

REPO = Path(__file__).resolve().parents[3]
PROCS, PER_PROC, CAPACITY = 16, 8, 100

WORKER = r"""
import json, os, sys, time
from ansible_collections.baremetal.capi.plugins.module_utils.store.sqlite import SqliteStore
from ansible_collections.baremetal.capi.plugins.module_utils.metal3.ipam import IPAM, AllocationFailed
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta

path, go, worker, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
store = SqliteStore(path)
ipam = IPAM(store)
while not os.path.exists(go):  # start together: as much contention as possible
    time.sleep(0.001)
names = [f"w{worker}-c{i}" for i in range(count)] + ["shared"]
for name in names:
    claim = meta.new("IPClaim", name, "race", spec={"pool": {"name": "p"}})
    try:
        _, _, addr = ipam.apply_claim(claim)
        print(json.dumps({"claim": name, "address": addr["spec"]["address"]}), flush=True)
    except AllocationFailed as exc:
        print(json.dumps({"claim": name, "error": exc.message}), flush=True)
"""


def test_sixteen_processes_claim_concurrently(store, tmp_path):
    ipam = IPAM(store)
    ipam.apply_pool(
        meta.new(
            "IPPool",
            "p",
            "race",
            spec={
                "namePrefix": "race",
                "pools": [{"start": "10.0.0.1", "end": "10.0.0.60"}, {"subnet": "10.0.1.0/26", "start": "10.0.1.24"}],
            },
        )
    )
    assert ipam.pool_info(store.get("IPPool", "p", "race"))["capacity"] == CAPACITY
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    go = tmp_path / "go"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO / "build"), str(REPO)]))
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), store.path, str(go), str(w), str(PER_PROC)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for w in range(PROCS)
    ]
    time.sleep(1.0)  # let every interpreter reach the start line
    go.write_text("go")
    answers = []
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        answers += [json.loads(line) for line in out.splitlines()]

    # every claim answered, once per asking process
    assert len(answers) == PROCS * (PER_PROC + 1)
    own = [a for a in answers if a["claim"] != "shared"]
    assert len({a["claim"] for a in own}) == PROCS * PER_PROC
    # the shared claim got one address, whoever asked
    shared = {a.get("address") for a in answers if a["claim"] == "shared"}
    assert len(shared) == 1 and None not in shared
    # exactly the capacity handed out, no address twice, the rest told the pool is exhausted
    given = [a["address"] for a in own if "address" in a] + list(shared)
    assert len(given) == len(set(given)) == CAPACITY
    assert {a["error"] for a in own if "error" in a} == {"Exhausted IP Pools"}
    # the store agrees with the answers
    stored = {o["spec"]["address"]: o["spec"]["claim"]["name"] for o in store.list(kinds.M3_IPADDRESS, "race")}
    assert set(stored) == set(given)
    for a in own + [{"claim": "shared", "address": shared.pop()}]:
        claim = store.get("IPClaim", a["claim"], "race")
        if "address" in a:
            assert stored[a["address"]] == a["claim"]
            assert claim["status"]["address"]["name"] == "race-" + a["address"].replace(".", "-")
        else:
            assert claim["status"] == {"errorMessage": "Exhausted IP Pools"}
    # and a released address goes to the next asker
    victim = next(a for a in own if "address" in a)
    assert ipam.delete_claim(victim["claim"], "race")
    _, _, addr = ipam.apply_claim(meta.new("IPClaim", "late", "race", spec={"pool": {"name": "p"}}))
    assert addr["spec"]["address"] == victim["address"]
