"""One Metal3Machine from associate to Running and back, on sqlite + the lab's kube-apiserver as workload API."""

from __future__ import annotations

import pytest
from flow_world import add_machine, host_of, make_world, manager, play_bmo_available, play_bmo_provisioned

from ansible_collections.baremetal.capi.plugins.module_utils.errors import CapiError, NotFound, Requeue
from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions, names


def test_associate_provision_provider_id_and_running(store, workload, workload_kubeconfig):
    make_world(store, workload_kubeconfig)
    add_machine(store, "w1")
    mgr = manager(store)

    step = mgr.step("w1", "default")
    assert step.changed and step.message.startswith("associated with host")
    hname = host_of(store, "w1")
    host = store.get("BareMetalHost", hname, "default")
    assert host["spec"]["consumerRef"]["name"] == "w1"
    assert host["metadata"]["labels"][names.CLUSTER_NAME_LABEL] == "c1"
    # no data template: the host spec went in with the claim
    assert host["spec"]["image"]["url"] == "http://192.0.2.1/img.qcow2" and host["spec"]["online"] is True
    assert host["spec"]["userData"] == {"name": "bootstrap", "namespace": "default"}
    secret = store.get("Secret", f"{hname}-bmc", "default")
    assert secret["metadata"]["labels"][names.CLUSTER_NAME_LABEL] == "c1"
    m3m = store.get("Metal3Machine", "w1", "default")
    assert conditions.get(m3m, names.ASSOCIATE_BMH)["reason"] == names.ASSOCIATE_BMH_SUCCESS_REASON
    assert m3m["metadata"]["ownerReferences"][0]["kind"] == "Machine"

    step = mgr.step("w1", "default")
    assert not step.done and "wants provisioned" in step.message
    assert names.BLOCK_MOVE_ANNOTATION in store.get("BareMetalHost", hname, "default")["metadata"]["annotations"]

    play_bmo_provisioned(store, hname)
    with pytest.raises(Requeue, match="metal3.io/uuid"):
        mgr.step("w1", "default")  # no Node yet

    node = workload.make_node(
        labels={"metal3.io/uuid": host["metadata"]["uid"]},
        taints=[{"key": names.NODE_UNINITIALIZED_TAINT, "effect": "NoSchedule"}],
    )
    step = mgr.step("w1", "default")
    assert step.done, step.message
    want = f"metal3://default/{hname}/w1"
    assert workload.get_node(node["metadata"]["name"])["spec"]["providerID"] == want
    taints = workload.get_node(node["metadata"]["name"])["spec"].get("taints") or []
    assert names.NODE_UNINITIALIZED_TAINT not in [t["key"] for t in taints]
    m3m = store.get("Metal3Machine", "w1", "default")
    assert m3m["spec"]["providerID"] == want
    assert m3m["status"]["initialization"]["provisioned"] is True
    assert {"type": "InternalIP", "address": "192.0.2.31"} in m3m["status"]["addresses"]
    mach = store.get("Machine", "w1", "default")
    assert mach["spec"]["providerID"] == want
    assert mach["status"]["phase"] == "Running"
    assert mach["status"]["nodeRef"]["name"] == node["metadata"]["name"]
    cl = store.get("Cluster", "c1", "default")
    assert cl["status"]["initialization"]["infrastructureProvisioned"] is True

    again = mgr.step("w1", "default")
    assert again.done and not again.changed

    # delete: deprovision, release, Node last
    step = mgr.delete_step("w1", "default")
    assert not step.done
    host = store.get("BareMetalHost", hname, "default")
    assert "image" not in host["spec"] and "userData" not in host["spec"] and host["spec"]["online"] is False
    assert host["spec"]["consumerRef"]["name"] == "w1"  # kept until the host is deprovisioned
    assert workload.get_node(node["metadata"]["name"]) is not None
    play_bmo_available(store, hname)
    step = mgr.delete_step("w1", "default")
    assert step.done, step.message
    host = store.get("BareMetalHost", hname, "default")
    assert "consumerRef" not in host["spec"]
    assert names.CLUSTER_NAME_LABEL not in (host["metadata"].get("labels") or {})
    assert names.BLOCK_MOVE_ANNOTATION not in (host["metadata"].get("annotations") or {})
    assert names.CLUSTER_NAME_LABEL not in (
        store.get("Secret", f"{hname}-bmc", "default")["metadata"].get("labels") or {}
    )
    for kind in ("Metal3Machine", "Machine"):
        with pytest.raises(NotFound):
            store.get(kind, "w1", "default")
    assert workload.get_node(node["metadata"]["name"]) is None
    assert mgr.delete_step("w1", "default").message == "absent"


def test_provider_id_by_hostname(store, workload, workload_kubeconfig):
    import uuid

    make_world(store, workload_kubeconfig, n_hosts=1)
    add_machine(store, "w1")
    mgr = manager(store)
    mgr.step("w1", "default")
    hostname = f"host-{uuid.uuid4().hex[:8]}"
    play_bmo_provisioned(store, "h0", hostname=hostname)
    node = workload.make_node(labels={"kubernetes.io/hostname": hostname})
    step = mgr.step("w1", "default")
    assert step.done, step.message
    assert workload.get_node(node["metadata"]["name"])["spec"]["providerID"] == "metal3://default/h0/w1"


def test_foreign_provider_id_is_an_error(store, workload, workload_kubeconfig):
    make_world(store, workload_kubeconfig, n_hosts=1)
    add_machine(store, "w1")
    mgr = manager(store)
    mgr.step("w1", "default")
    play_bmo_provisioned(store, "h0")
    uid = store.get("BareMetalHost", "h0", "default")["metadata"]["uid"]
    workload.make_node(labels={"metal3.io/uuid": uid}, provider_id="metal3://legacy-uuid")
    with pytest.raises(CapiError, match="unsupported providerID format"):
        mgr.step("w1", "default")
