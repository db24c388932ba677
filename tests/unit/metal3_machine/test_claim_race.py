"""Two playbooks racing must never claim the same host: 8 processes x 3 machines on one sqlite file.

Each process is what one ansible-playbook run of metal3_machine does: open the
store, and reconcile its own three Metal3Machines concurrently (runner.run, one
step each = associate).  They start together behind a barrier.
"""

from __future__ import annotations

import multiprocessing
import sys
from pathlib import Path

import pytest
from flow_world import add_machine, make_world

PROCS, PER_PROC = 8, 3
HERE = Path(__file__).resolve().parent


def _worker(db: str, proc: int, barrier, out, paths):
    sys.path[:0] = paths
    from flow_world import manager

    from ansible_collections.baremetal.capi.plugins.module_utils import runner
    from ansible_collections.baremetal.capi.plugins.module_utils.errors import NoHostAvailable
    from ansible_collections.baremetal.capi.plugins.module_utils.store.sqlite import SqliteStore

    store = SqliteStore(db)
    mgr = manager(store)
    keys = [("default", f"m-{proc}-{i}") for i in range(PER_PROC)]

    def until_associated(key):
        # What metal3_machine does for these machines up to the association: steps (retried on a
        # Conflict by the runner) until the machine has a host, or is told there is none.
        try:
            step = mgr.step(key[1], key[0])
        except NoHostAvailable as exc:
            return runner.Step(done=True, message=exc.message)
        step.done = step.done or step.message.startswith("associated with host")
        return step

    barrier.wait()
    results = runner.run(keys, until_associated, key=lambda k: f"{k[0]}/{k[1]}", workers=PER_PROC, timeout=240)
    out.put([(r.key, r.done, r.failed, r.message, r.data.get("host")) for r in results])
    store.close()


def _race(store, n_hosts):
    make_world(store, n_hosts=n_hosts)
    for p in range(PROCS):
        for i in range(PER_PROC):
            add_machine(store, f"m-{p}-{i}")
    ctx = multiprocessing.get_context("spawn")
    barrier, out = ctx.Barrier(PROCS), ctx.Queue()
    paths = [str(HERE), str(HERE.parent / "capi"), *sys.path]
    procs = [ctx.Process(target=_worker, args=(store.path, p, barrier, out, paths)) for p in range(PROCS)]
    for proc in procs:
        proc.start()
    results = [r for _ in procs for r in out.get(timeout=300)]
    for proc in procs:
        proc.join(timeout=60)
        assert proc.exitcode == 0
    return results


def _claims(store):
    """host -> machine from the hosts' consumerRef, and machine -> host from the machines' annotation."""
    by_host = {
        h["metadata"]["name"]: h["spec"]["consumerRef"]["name"]
        for h in store.list("BareMetalHost", "default")
        if h["spec"].get("consumerRef")
    }
    by_machine = {
        m["metadata"]["name"]: m["metadata"]["annotations"]["metal3.io/BareMetalHost"].split("/")[1]
        for m in store.list("Metal3Machine", "default")
        if (m["metadata"].get("annotations") or {}).get("metal3.io/BareMetalHost")
    }
    return by_host, by_machine


@pytest.mark.timeout(600)
def test_24_machines_24_hosts_all_distinct(store):
    results = _race(store, 24)
    assert len(results) == PROCS * PER_PROC
    failed = [r for r in results if r[2]]
    assert not failed, failed
    by_host, by_machine = _claims(store)
    assert len(by_machine) == 24
    assert len(set(by_machine.values())) == 24  # every machine a distinct host
    assert {h: m for m, h in by_machine.items()} == by_host  # and each host names exactly its machine


@pytest.mark.timeout(600)
def test_fewer_hosts_losers_say_no_available_host(store):
    results = _race(store, 20)
    by_host, by_machine = _claims(store)
    assert len(by_machine) == 20 and len(set(by_machine.values())) == 20
    assert {h: m for m, h in by_machine.items()} == by_host
    losers = [r for r in results if r[0].split("/")[1] not in by_machine]
    assert len(losers) == 4
    for _key, done, failed, message, host in losers:
        assert not failed and done and host is None
        assert "No available host found" in message, message
