"""The metal3_cluster module: webhook, controller, Cluster API core marking, deletion waiting for machines."""

from __future__ import annotations

from capi_objects import cluster, machine, metal3_machine, put

from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions, names
from ansible_collections.baremetal.capi.plugins.modules import metal3_cluster

ARGS = {"name": "c1", "control_plane_endpoint": {"host": "192.0.2.10"}, "wait_timeout": 5, "wait_sleep": 0.1}


def test_create_defaults_and_marks_cluster(run, store):
    put(store, cluster())
    res = run(metal3_cluster, ARGS)
    assert res["changed"] and res["endpoint"] == {"host": "192.0.2.10", "port": 6443}
    m3c = store.get("Metal3Cluster", "c1", "default")
    assert m3c["spec"]["cloudProviderEnabled"] is False
    assert m3c["metadata"]["finalizers"] == [names.METAL3_CLUSTER_FINALIZER]
    assert m3c["status"]["initialization"]["provisioned"] is True
    assert conditions.is_true(m3c, names.READY) and conditions.is_true(m3c, names.BAREMETAL_INFRASTRUCTURE_READY)
    assert m3c["metadata"]["labels"][names.CLUSTER_NAME_LABEL] == "c1"
    c = store.get("Cluster", "c1", "default")
    assert c["status"]["initialization"]["infrastructureProvisioned"] is True
    assert c["spec"]["controlPlaneEndpoint"] == {"host": "192.0.2.10", "port": 6443}
    again = run(metal3_cluster, ARGS)
    assert not again["changed"], again


def test_check_mode_writes_nothing(run, store):
    put(store, cluster())
    res = run(metal3_cluster, ARGS, check=True)
    assert res["changed"]
    assert store.list("Metal3Cluster", "default") == []


def test_missing_host_fails_naming_the_field(run, store):
    res = run(metal3_cluster, dict(ARGS, control_plane_endpoint={"host": ""}))
    assert res["failed"] and "spec.controlPlaneEndpoint.host" in res["msg"]
    assert store.list("Metal3Cluster", "default") == []


def test_absent_waits_for_machines(run, store):
    put(store, cluster())
    run(metal3_cluster, ARGS)
    put(store, machine("w1"))
    m3m = metal3_machine("w1")
    m3m["metadata"]["labels"] = {names.CLUSTER_NAME_LABEL: "c1"}
    put(store, m3m)
    res = run(metal3_cluster, {"name": "c1", "state": "absent", "wait_timeout": 1, "wait_sleep": 0.2})
    assert res["failed"] and "Metal3Machine w1" in res["msg"]
    assert store.get("Metal3Cluster", "c1", "default")["metadata"]["deletionTimestamp"]
    store.delete("Metal3Machine", "w1", "default")
    store.delete("Machine", "w1", "default")
    res = run(metal3_cluster, {"name": "c1", "state": "absent", "wait_timeout": 5, "wait_sleep": 0.2})
    assert res["changed"] and not res.get("failed")
    assert store.list("Metal3Cluster", "default") == []
    assert not run(metal3_cluster, {"name": "c1", "state": "absent"})["changed"]
