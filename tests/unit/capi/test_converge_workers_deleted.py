"""Cluster deletion's first loop ends once the workers are gone, whatever the control plane's state: a control
plane whose Node is not Ready (no CNI, an API that does not answer) must not hold the teardown up until the
deadline (stop_when ``workers_deleted``)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "metal3_machine"))

from capi_objects import metal3_machine, put  # noqa: E402
from flow_world import add_machine, make_world, manager  # noqa: E402

from ansible_collections.baremetal.capi.plugins.module_utils.capi import converge_task  # noqa: E402
from ansible_collections.baremetal.capi.plugins.module_utils.capi.converge import Converger  # noqa: E402


def _world(store):
    # cp-keep: a control-plane Machine that never gets a host, so the cluster never converges
    make_world(store, n_hosts=0)
    put(store, metal3_machine("cp-keep", "default"))
    add_machine(store, "w1")
    add_machine(store, "w2")
    store.delete("Machine", "w1", "default")
    store.delete("Machine", "w2", "default")


def test_workers_deleted_stops_once_no_worker_is_left(store):
    _world(store)
    conv = Converger(store, manager(store), "c1", "default", infra_kind="Metal3Machine")
    report = conv.converge(timeout=30, poll=0.2, until=converge_task.workers_deleted)
    assert not report["timed_out"] and not report["done"]
    assert [r["machine"] for r in report["machines"]] == ["cp-keep"]
    assert store.list("Machine", "default") and {m["metadata"]["name"] for m in store.list("Machine", "default")} == {
        "cp-keep"
    }
    params = {"cluster": "c1", "wait": True, "wait_timeout": 30, "stop_when": "workers_deleted"}
    assert converge_task.outcome(params, "default", report, check_mode=False)[1] is None


def test_converged_waits_for_the_control_plane_until_the_deadline(store):
    _world(store)
    conv = Converger(store, manager(store), "c1", "default", infra_kind="Metal3Machine")
    report = conv.converge(timeout=2, poll=0.2)
    assert report["timed_out"] and not report["done"]
    params = {"cluster": "c1", "wait": True, "wait_timeout": 2, "stop_when": "converged"}
    msg = converge_task.outcome(params, "default", report, check_mode=False)[1]
    assert msg.startswith("cluster default/c1 not converged after 2s: cp-keep"), msg


def test_workers_deleted_is_not_reached_while_a_worker_is_left():
    rows = [{"machine": "cp", "role": "control-plane"}, {"machine": "w", "role": "worker", "state": None}]
    assert not converge_task.workers_deleted(rows)
    assert converge_task.workers_deleted(rows[:1])
    assert converge_task.workers_deleted([])
