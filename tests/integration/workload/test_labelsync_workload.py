"""Label sync, host -> Node (CAPM3 baremetal/metal3labelsync_manager.go): the pure rule, and one sync against the
lab's kube-apiserver."""

from __future__ import annotations

from ansible_collections.baremetal.capi.plugins.module_utils.metal3 import labelsync

P = {"a.example.com", "b.example.com"}


def _world(store, node_name: str, host_labels: dict):
    ns, infra = "ls", "infrastructure.cluster.x-k8s.io"
    store.create(
        {
            "apiVersion": "cluster.x-k8s.io/v1beta2",
            "kind": "Cluster",
            "metadata": {"name": "c", "namespace": ns},
            "spec": {"infrastructureRef": {"apiGroup": infra, "kind": "Metal3Cluster", "name": "c"}},
        }
    )
    store.create(
        {
            "apiVersion": f"{infra}/v1beta2",
            "kind": "Metal3Cluster",
            "metadata": {
                "name": "c",
                "namespace": ns,
                "annotations": {"metal3.io/metal3-label-sync-prefixes": "a.example.com"},
            },
            "spec": {"controlPlaneEndpoint": {"host": "127.0.0.1", "port": 6443}},
        }
    )
    machine = store.create(
        {
            "apiVersion": "cluster.x-k8s.io/v1beta2",
            "kind": "Machine",
            "metadata": {"name": "m", "namespace": ns},
            "spec": {
                "clusterName": "c",
                "infrastructureRef": {"apiGroup": infra, "kind": "Metal3Machine", "name": "m"},
            },
        }
    )
    machine["status"] = {"nodeRef": {"name": node_name}}
    store.update_status(machine)
    m3m = {
        "apiVersion": f"{infra}/v1beta2",
        "kind": "Metal3Machine",
        "metadata": {"name": "m", "namespace": ns},
        "spec": {},
    }
    m3m["metadata"]["ownerReferences"] = [{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine", "name": "m",
                                           "uid": machine["metadata"]["uid"]}]  # fmt: skip
    store.create(m3m)
    store.create(
        {
            "apiVersion": "metal3.io/v1alpha1",
            "kind": "BareMetalHost",
            "metadata": {"name": "h", "namespace": ns, "labels": host_labels},
            "spec": {
                "consumerRef": {"apiVersion": f"{infra}/v1beta2", "kind": "Metal3Machine", "name": "m", "namespace": ns}
            },
        }
    )
    return ns


def test_sync_host_against_a_real_node(store, workload):
    n = workload.make_node(labels={"plain": "keep", "a.example.com/stale": "x", "c.example.com/other": "y"})
    name = n["metadata"]["name"]
    ns = _world(store, name, {"a.example.com/rack": "r1", "unprefixed": "no"})
    check = labelsync.sync_host(store, (ns, "h"), workload=workload, check=True)
    assert check.changed and workload.get_node(name)["metadata"]["labels"].get("a.example.com/rack") is None
    step = labelsync.sync_host(store, (ns, "h"), workload=workload)
    assert step.changed and step.data["removed"] == ["a.example.com/stale"]
    labels = workload.get_node(name)["metadata"]["labels"]
    assert labels["a.example.com/rack"] == "r1" and "a.example.com/stale" not in labels
    assert labels["plain"] == "keep" and labels["c.example.com/other"] == "y" and "unprefixed" not in labels
    assert not labelsync.sync_host(store, (ns, "h"), workload=workload).changed
