"""One Metal3Machine from associate to Running and back, on sqlite + the lab's kube-apiserver as workload API."""

from __future__ import annotations

import pytest
from flow_world import add_machine, host_of, make_world, manager, play_bmo_available, play_bmo_provisioned

from ansible_collections.baremetal.capi.plugins.module_utils.errors import CapiError, Requeue
from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions, names


def test_check_mode_reports_host_and_writes_nothing(store):
    make_world(store, n_hosts=1)
    add_machine(store, "w1")
    before = {h["metadata"]["name"]: h["metadata"]["resourceVersion"] for h in store.list("BareMetalHost", "default")}
    m3m_rv = store.get("Metal3Machine", "w1", "default")["metadata"]["resourceVersion"]
    step = manager(store).step("w1", "default", check=True)
    assert step.changed and step.data["host"] == "h0" and "would associate" in step.message
    after = {h["metadata"]["name"]: h["metadata"]["resourceVersion"] for h in store.list("BareMetalHost", "default")}
    assert after == before
    assert store.get("Metal3Machine", "w1", "default")["metadata"]["resourceVersion"] == m3m_rv


def test_no_available_host(store):
    make_world(store, n_hosts=0)
    add_machine(store, "w1")
    with pytest.raises(Requeue, match="No available host found"):
        manager(store).step("w1", "default")
    cond = conditions.get(store.get("Metal3Machine", "w1", "default"), names.ASSOCIATE_BMH)
    assert cond["status"] == "False" and "No available host found" in cond["message"]


def test_waits_for_bootstrap_data(store):
    make_world(store, n_hosts=1)
    put_machine = add_machine(store, "w1")
    mach = store.get("Machine", "w1", "default")
    mach["spec"]["bootstrap"] = {}
    store.update(mach)
    assert put_machine
    with pytest.raises(Requeue, match="bootstrap data"):
        manager(store).step("w1", "default")
    assert "consumerRef" not in store.get("BareMetalHost", "h0", "default")["spec"]


def test_paused_cluster_pauses_host_and_unpause_removes_only_ours(store):
    make_world(store, n_hosts=1)
    add_machine(store, "w1")
    mgr = manager(store)
    mgr.step("w1", "default")
    c = store.get("Cluster", "c1", "default")
    c["spec"]["paused"] = True
    store.update(c)
    step = mgr.step("w1", "default")
    assert step.message == "paused"
    ann = store.get("BareMetalHost", "h0", "default")["metadata"]["annotations"]
    assert ann[names.BMH_PAUSED_ANNOTATION] == "metal3.io/capm3" and names.BMH_STATUS_ANNOTATION in ann
    assert conditions.is_true(store.get("Metal3Machine", "w1", "default"), names.PAUSED)
    c = store.get("Cluster", "c1", "default")
    c["spec"]["paused"] = False
    store.update(c)
    mgr.step("w1", "default")
    ann = store.get("BareMetalHost", "h0", "default")["metadata"]["annotations"]
    assert names.BMH_PAUSED_ANNOTATION not in ann


def test_host_error_fails_the_machine_and_a_later_run_waits_for_the_retry(store):
    make_world(store, n_hosts=1)
    add_machine(store, "w1")
    mgr = manager(store)
    mgr.step("w1", "default")
    assert not mgr.step("w1", "default").done  # the host as this run first sees it: no error
    host = store.get("BareMetalHost", "h0", "default")
    host["status"].update(errorType="provisioning error", errorMessage="Deploy step failed: disk on fire", errorCount=1)
    store.update_status(host)
    with pytest.raises(CapiError, match="disk on fire"):
        mgr.step("w1", "default")
    # a later run: the error was there before it started, so it waits for the host driver's retry
    later = manager(store)
    step = later.step("w1", "default")
    assert not step.done and "disk on fire" in step.message
    assert step.data["hostStatus"]["errorType"] == "provisioning error"


def test_bad_image_is_rejected_before_any_write(store):
    make_world(store, n_hosts=1)
    add_machine(store, "w1", image={"url": "http://x/i.qcow2"})
    with pytest.raises(CapiError, match="spec.image.checksum"):
        manager(store).step("w1", "default")
    assert "consumerRef" not in store.get("BareMetalHost", "h0", "default")["spec"]


def test_wait_for_provisioned_is_done_with_the_host(store):
    make_world(store, n_hosts=1)  # no <cluster>-kubeconfig Secret: no Node can be found
    add_machine(store, "w1")
    mgr = manager(store, wait_for="provisioned")
    mgr.step("w1", "default")
    assert not mgr.step("w1", "default").done
    play_bmo_provisioned(store, "h0")
    step = mgr.step("w1", "default")
    assert step.done and "host h0 provisioned" in step.message and "c1-kubeconfig" in step.message
    with pytest.raises(Requeue, match="c1-kubeconfig"):
        manager(store).step("w1", "default")  # waiting for running: not done


def test_node_reuse_delete_labels_host_for_the_deployment_and_it_comes_back(store):
    from capi_objects import put

    from ansible_collections.baremetal.capi.plugins.module_utils.model import meta

    make_world(store, n_hosts=2)
    put(store, meta.new("Metal3MachineTemplate", "workers-t", "default", spec={"nodeReuse": True, "template": {}}))
    md = put(store, meta.new("MachineDeployment", "workers", "default", spec={"clusterName": "c1"}))
    ms = meta.new(
        "MachineSet",
        "workers-abc",
        "default",
        spec={"clusterName": "c1", "template": {"spec": {"infrastructureRef": {
            "apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "Metal3MachineTemplate", "name": "workers-t"}}}},
    )  # fmt: skip
    ms["metadata"]["ownerReferences"] = [meta.owner_reference(md, controller=True)]
    ms = put(store, ms)
    for name in ("w1", "w2"):
        add_machine(store, name)
        mach = store.get("Machine", name, "default")
        mach["metadata"]["ownerReferences"] = [meta.owner_reference(ms, controller=True)]
        store.update(mach)
    mgr = manager(store)
    mgr.step("w1", "default")
    host = host_of(store, "w1")
    play_bmo_available(store, host)
    assert mgr.delete_step("w1", "default").done
    released = store.get("BareMetalHost", host, "default")
    assert released["metadata"]["labels"][names.NODE_REUSE_LABEL] == "md-workers"
    assert released["spec"]["consumerRef"]["kind"] == "Cluster" and released["spec"]["consumerRef"]["name"] == "c1"
    # the next machine of the deployment gets that host back, via node reuse
    step = mgr.step("w2", "default")
    assert host_of(store, "w2") == host, step.message
    cond = conditions.get(store.get("Metal3Machine", "w2", "default"), names.ASSOCIATE_BMH)
    assert cond["reason"] == names.ASSOCIATE_BMH_VIA_NODE_REUSE_SUCCESS_REASON
    assert names.NODE_REUSE_LABEL not in store.get("BareMetalHost", host, "default")["metadata"]["labels"]


def test_failure_domain_copied_from_machine_and_preferred(store):
    make_world(store, n_hosts=0)
    from capi_objects import bmh, put

    put(store, bmh("h-a", labels={names.FAILURE_DOMAIN_LABEL: "fd-a"}))
    put(store, bmh("h-b", labels={names.FAILURE_DOMAIN_LABEL: "fd-b"}))
    add_machine(store, "w1")
    mach = store.get("Machine", "w1", "default")
    mach["spec"]["failureDomain"] = "fd-b"
    store.update(mach)
    manager(store).step("w1", "default")
    assert store.get("Metal3Machine", "w1", "default")["spec"]["failureDomain"] == "fd-b"
    assert host_of(store, "w1") == "h-b"


def test_delete_waits_while_the_cluster_is_paused(store):
    make_world(store, n_hosts=1)
    add_machine(store, "w1")
    mgr = manager(store)
    mgr.step("w1", "default")
    c = store.get("Cluster", "c1", "default")
    c["spec"]["paused"] = True
    store.update(c)
    step = mgr.delete_step("w1", "default")
    assert not step.done and step.message == "paused"
    assert store.get("BareMetalHost", "h0", "default")["spec"]["consumerRef"]["name"] == "w1"
    c = store.get("Cluster", "c1", "default")
    c["spec"]["paused"] = False
    store.update(c)
    assert mgr.delete_step("w1", "default").done  # the host never left available: nothing to wait for
    assert "consumerRef" not in store.get("BareMetalHost", "h0", "default")["spec"]
