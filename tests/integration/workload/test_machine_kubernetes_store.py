"""The Metal3Machine flow on the kubernetes store: the lab's kube-apiserver is the management cluster
(CRDs served, optimistic concurrency by the API server) and, here, the workload cluster too."""

from __future__ import annotations

import uuid

import pytest
from flow_world import add_machine, host_of, make_world, manager, play_bmo_available, play_bmo_provisioned

from ansible_collections.baremetal.capi.plugins.module_utils.errors import NotFound
from ansible_collections.baremetal.capi.plugins.module_utils.model import names


@pytest.fixture
def kstore(lab):
    from ansible_collections.baremetal.capi.plugins.module_utils.store.base import open_store
    from lab.services import kube

    lab.need("kube")
    store = open_store({"kind": "kubernetes", "kubeconfig": str(kube.kubeconfig_path(lab.cfg))})
    ns = f"m3m-{uuid.uuid4().hex[:8]}"
    yield store, ns
    try:
        kube.delete_namespace(kube.api_client(lab.cfg), ns)
    finally:
        store.close()


def test_flow_on_the_kubernetes_store(kstore, workload, workload_kubeconfig):
    store, ns = kstore
    make_world(store, workload_kubeconfig, n_hosts=2, ns=ns)
    add_machine(store, "w1", ns=ns)
    mgr = manager(store)
    assert mgr.step("w1", ns).message.startswith("associated with host")
    hname = host_of(store, "w1", ns)
    assert store.get("BareMetalHost", hname, ns)["spec"]["consumerRef"]["name"] == "w1"
    mgr.step("w1", ns)
    play_bmo_provisioned(store, hname, ns)
    uid = store.get("BareMetalHost", hname, ns)["metadata"]["uid"]
    node = workload.make_node(labels={"metal3.io/uuid": uid})
    step = mgr.step("w1", ns)
    assert step.done, step.message
    assert workload.get_node(node["metadata"]["name"])["spec"]["providerID"] == f"metal3://{ns}/{hname}/w1"
    assert store.get("Machine", "w1", ns)["status"]["phase"] == "Running"
    assert not mgr.step("w1", ns).changed

    assert not mgr.delete_step("w1", ns).done
    play_bmo_available(store, hname, ns)
    assert mgr.delete_step("w1", ns).done
    with pytest.raises(NotFound):
        store.get("Metal3Machine", "w1", ns)
    host = store.get("BareMetalHost", hname, ns)
    assert "consumerRef" not in host["spec"]
    assert names.CLUSTER_NAME_LABEL not in (host["metadata"].get("labels") or {})
    assert workload.get_node(node["metadata"]["name"]) is None
