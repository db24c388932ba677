"""Cluster deletion in the loop: stop_when ``workers_deleted`` ends it once the workers are gone, whatever the
control plane's state (a control plane whose Node is not Ready must not hold a teardown up until the deadline);
and the whole deletion, the KubeadmControlPlane's included, in one loop."""

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


def test_cluster_deletion_runs_in_one_loop_workers_first_then_the_control_plane(store):
    """deprovision_cluster.yml's loop: the KubeadmControlPlane, deleted with the MachineDeployments, waits for the
    worker Machines, then deletes its Machines (their kcp-cleanup hook released) and goes once none is left."""
    from ansible_collections.baremetal.capi.plugins.module_utils.errors import NotFound
    from ansible_collections.baremetal.capi.plugins.module_utils.model import meta, names

    make_world(store, n_hosts=0)
    put(store, metal3_machine("cp-keep", "default"))
    cp = store.get("Machine", "cp-keep", "default")
    cp["metadata"]["labels"][names.CONTROL_PLANE_NAME_LABEL] = "c1-cp"
    cp["metadata"]["annotations"] = {names.KCP_CLEANUP_HOOK: ""}
    cp["metadata"]["finalizers"] = [names.MACHINE_FINALIZER]
    store.update(cp)
    cluster = store.get("Cluster", "c1", "default")
    cp_ref = {"apiGroup": "controlplane.cluster.x-k8s.io", "kind": "KubeadmControlPlane", "name": "c1-cp"}
    cluster["spec"]["controlPlaneRef"] = cp_ref
    store.update(cluster)
    template = {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "Metal3MachineTemplate", "name": "t"}
    spec = {"replicas": 1, "version": "v1.34.1", "machineTemplate": {"spec": {"infrastructureRef": template}}}
    labels = {names.CLUSTER_NAME_LABEL: "c1"}
    store.create(meta.new("KubeadmControlPlane", "c1-cp", "default", spec=spec, labels=labels,
                          finalizers=[names.KCP_FINALIZER]))  # fmt: skip
    for name in ("w1", "w2"):
        add_machine(store, name)
        w = store.get("Machine", name, "default")
        w["metadata"]["finalizers"] = [names.MACHINE_FINALIZER]
        store.update(w)
    store.delete("KubeadmControlPlane", "c1-cp", "default")
    for name in ("w1", "w2"):  # what the MachineDeployments' deletion does to their Machines
        store.delete("Machine", name, "default")

    gone = []
    conv = Converger(store, manager(store), "c1", "default", infra_kind="Metal3Machine")
    report = conv.converge(
        timeout=30,
        poll=0.2,
        progress=lambda row, _t: gone.append(row["machine"]) if row["state"] == "Deleted" else None,
    )
    assert report["done"] and not report["timed_out"] and report["machines"] == []
    assert sorted(gone[:2]) == ["w1", "w2"] and gone[2:] == ["cp-keep"]
    assert store.list("Machine", "default") == []
    try:
        store.get("KubeadmControlPlane", "c1-cp", "default")
        raise AssertionError("the KubeadmControlPlane is still there")
    except NotFound:
        pass


def test_a_conflict_on_the_cluster_step_is_retried_not_a_crash(store, monkeypatch):
    """The cluster item's first step meeting a Conflict (another writer: a killed run's worker finishing its step)
    is requeued like any step; the loop read the step's data as if it had some, and the task failed with
    KeyError 'changed' (seen in the kill -9 test's re-run after four kills)."""
    from ansible_collections.baremetal.capi.plugins.module_utils.errors import Conflict

    _world(store)
    conv = Converger(store, manager(store), "c1", "default", infra_kind="Metal3Machine")
    real, calls = conv.cluster_step, []

    def first_conflicts(check=False):
        calls.append(check)
        if len(calls) == 1:
            raise Conflict("Cluster default/c1: the object has been modified")
        return real(check=check)

    monkeypatch.setattr(conv, "cluster_step", first_conflicts)
    report = conv.converge(timeout=30, poll=0.2, until=converge_task.workers_deleted)
    assert len(calls) >= 2 and not report["timed_out"]
    assert [r["machine"] for r in report["machines"]] == ["cp-keep"]
