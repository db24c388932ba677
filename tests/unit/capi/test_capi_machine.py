"""Cluster API core duties for a Machine: pure functions, then reconcile against sqlite + the lab's kube-apiserver."""

from __future__ import annotations

import pytest
from capi_objects import cluster, machine, metal3_cluster, metal3_machine, put, set_status

from ansible_collections.baremetal.capi.plugins.module_utils.capi import cluster as capi_cluster
from ansible_collections.baremetal.capi.plugins.module_utils.capi import machine as capi_machine
from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions, names

UNINIT = {"key": "node.cluster.x-k8s.io/uninitialized", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    "spec, status, deleting, want",
    [
        ({}, {}, False, "Pending"),
        ({"bootstrap": {"dataSecretName": "b"}}, {}, False, "Provisioning"),
        ({"bootstrap": {"dataSecretName": "b"}, "providerID": "metal3://a/b/c"}, {}, False, "Provisioned"),
        (
            {"bootstrap": {"dataSecretName": "b"}, "providerID": "metal3://a/b/c"},
            {"initialization": {"infrastructureProvisioned": True}, "nodeRef": {"name": "n"}},
            False,
            "Running",
        ),
        ({"providerID": "p"}, {"nodeRef": {"name": "n"}}, False, "Provisioned"),  # nodeRef without infra provisioned
        ({"providerID": "p"}, {}, True, "Deleting"),
    ],
)
def test_phase(spec, status, deleting, want):
    m = {"metadata": {"name": "m"}, "spec": spec, "status": status}
    if deleting:
        m["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert capi_machine.phase(m) == want


def test_node_patch_annotations_labels_taint():
    m = machine("m1", labels={"node-role.kubernetes.io/worker": "", "x.node.cluster.x-k8s.io/pool": "a", "other": "z"})
    m["metadata"]["ownerReferences"] = [
        {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineSet", "name": "ms", "uid": "u", "controller": True}
    ]
    node = {
        "metadata": {
            "name": "n1",
            "labels": {"node.cluster.x-k8s.io/old": "x"},
            "annotations": {names.LABELS_FROM_MACHINE_ANNOTATION: "node.cluster.x-k8s.io/old"},
        },
        "spec": {"taints": [UNINIT, {"key": "keep", "effect": "NoExecute"}]},
    }
    patch = capi_machine.node_patch(m, node)
    ann = patch["metadata"]["annotations"]
    assert ann[names.CLUSTER_NAME_ANNOTATION] == "c1"
    assert ann[names.CLUSTER_NAMESPACE_ANNOTATION] == "default"
    assert ann[names.MACHINE_ANNOTATION] == "m1"
    assert ann[names.OWNER_KIND_ANNOTATION] == "MachineSet" and ann[names.OWNER_NAME_ANNOTATION] == "ms"
    assert ann[names.LABELS_FROM_MACHINE_ANNOTATION] == "node-role.kubernetes.io/worker,x.node.cluster.x-k8s.io/pool"
    assert patch["metadata"]["labels"] == {
        "node-role.kubernetes.io/worker": "",
        "x.node.cluster.x-k8s.io/pool": "a",
        "node.cluster.x-k8s.io/old": None,
    }
    assert patch["spec"]["taints"] == [{"key": "keep", "effect": "NoExecute"}]


def test_node_patch_none_when_in_line():
    m = machine("m1")
    node = {
        "metadata": {
            "name": "n1",
            "annotations": {
                names.CLUSTER_NAME_ANNOTATION: "c1",
                names.CLUSTER_NAMESPACE_ANNOTATION: "default",
                names.MACHINE_ANNOTATION: "m1",
                names.LABELS_FROM_MACHINE_ANNOTATION: "",
            },
        },
        "spec": {},
    }
    assert capi_machine.node_patch(m, node) is None


def test_reconcile_waits_for_infrastructure(store):
    put(store, cluster())
    put(store, machine("m1"))
    put(store, metal3_machine("m1"))
    step = capi_machine.reconcile(store, store.get("Machine", "m1", "default"))
    assert not step.done
    m = store.get("Machine", "m1", "default")
    assert m["status"]["phase"] == "Provisioning"
    cond = conditions.get(m, names.INFRASTRUCTURE_READY)
    assert cond["status"] == "False" and cond["reason"] == names.INFRASTRUCTURE_NOT_READY_REASON


def test_paused_cluster_stops_machine(store):
    put(store, cluster(paused=True))
    put(store, machine("m1"))
    step = capi_machine.reconcile(store, store.get("Machine", "m1", "default"))
    assert not step.done and step.message == "paused"
    assert conditions.is_true(store.get("Machine", "m1", "default"), names.PAUSED)


def test_cluster_infrastructure_provisioned(store):
    put(store, cluster())
    put(store, metal3_cluster(port=6443))
    step = capi_cluster.reconcile(store, store.get("Cluster", "c1", "default"))
    assert not step.done
    c = store.get("Cluster", "c1", "default")
    assert c["spec"]["controlPlaneEndpoint"] == {"host": "192.0.2.10", "port": 6443}
    assert c["status"]["phase"] == "Provisioning"
    m3c = store.get("Metal3Cluster", "c1", "default")
    assert m3c["metadata"]["labels"][names.CLUSTER_NAME_LABEL] == "c1"
    assert m3c["metadata"]["ownerReferences"][0]["kind"] == "Cluster"
    set_status(store, "Metal3Cluster", "c1", "default", initialization={"provisioned": True})
    step = capi_cluster.reconcile(store, store.get("Cluster", "c1", "default"))
    assert step.done and step.changed
    c = store.get("Cluster", "c1", "default")
    assert c["status"]["initialization"]["infrastructureProvisioned"] is True
    assert c["status"]["phase"] == "Provisioned"
    assert conditions.is_true(c, names.INFRASTRUCTURE_READY)
    # Set once: it never flips back.
    set_status(store, "Metal3Cluster", "c1", "default", initialization={"provisioned": False})
    capi_cluster.reconcile(store, store.get("Cluster", "c1", "default"))
    assert store.get("Cluster", "c1", "default")["status"]["initialization"]["infrastructureProvisioned"] is True
