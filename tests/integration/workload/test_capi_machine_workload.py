"""Cluster API core duties for a Machine: pure functions, then reconcile against sqlite + the lab's kube-apiserver."""

from __future__ import annotations

import uuid

import pytest
from capi_objects import cluster, kubeconfig_secret, machine, metal3_machine, put, set_status

from ansible_collections.baremetal.capi.plugins.module_utils.capi import machine as capi_machine
from ansible_collections.baremetal.capi.plugins.module_utils.errors import CapiError, NotFound
from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions, names

UNINIT = {"key": "node.cluster.x-k8s.io/uninitialized", "effect": "NoSchedule"}


def _provisioned_world(store, workload_kubeconfig, provider_id, *, extra_cp=False):
    put(store, cluster())
    put(store, kubeconfig_secret("c1", "default", workload_kubeconfig))
    put(store, machine("m1", control_plane=True))
    if extra_cp:
        put(store, machine("cp-other", control_plane=True))
    m3m = put(store, metal3_machine("m1"))
    m3m["spec"]["providerID"] = provider_id
    store.update(m3m)
    addresses = [{"type": "InternalIP", "address": "192.0.2.20"}, {"type": "Hostname", "address": "h1"}]
    set_status(store, "Metal3Machine", "m1", "default", initialization={"provisioned": True}, addresses=addresses)
    return addresses


def _hold_infra(store, held=True):
    """The infrastructure machine's finalizer, as the Metal3Machine flow holds it until its host is released."""
    m3m = store.get("Metal3Machine", "m1", "default")
    m3m["metadata"]["finalizers"] = [names.METAL3_MACHINE_FINALIZER] if held else []
    store.update(m3m)


def test_reconcile_to_running_then_idempotent(store, workload, workload_kubeconfig):
    provider_id = f"metal3://default/h-{uuid.uuid4().hex[:6]}/m1"
    addresses = _provisioned_world(store, workload_kubeconfig, provider_id)
    node = workload.make_node(provider_id=provider_id, taints=[UNINIT])

    step = capi_machine.reconcile(store, store.get("Machine", "m1", "default"))
    assert step.done and step.changed, step.message
    m = store.get("Machine", "m1", "default")
    assert m["spec"]["providerID"] == provider_id
    assert m["status"]["nodeRef"] == {"name": node["metadata"]["name"]}
    assert m["status"]["addresses"] == addresses
    assert m["status"]["phase"] == "Running"
    assert m["status"]["initialization"] == {"bootstrapDataSecretCreated": True, "infrastructureProvisioned": True}
    assert names.MACHINE_FINALIZER in m["metadata"]["finalizers"]
    assert conditions.is_true(m, names.NODE_READY) and conditions.is_true(m, names.READY)
    n = workload.get_node(node["metadata"]["name"])
    assert "taints" not in n["spec"] or UNINIT not in n["spec"]["taints"]
    assert n["metadata"]["annotations"][names.MACHINE_ANNOTATION] == "m1"
    m3m = store.get("Metal3Machine", "m1", "default")
    owner = m3m["metadata"]["ownerReferences"][0]
    assert owner["kind"] == "Machine" and owner["controller"] is True and owner["uid"] == m["metadata"]["uid"]
    assert m3m["metadata"]["labels"][names.CLUSTER_NAME_LABEL] == "c1"

    rv = m["metadata"]["resourceVersion"]
    again = capi_machine.reconcile(store, m)
    assert again.done and not again.changed
    assert store.get("Machine", "m1", "default")["metadata"]["resourceVersion"] == rv


def test_duplicate_provider_id_is_an_error(store, workload, workload_kubeconfig):
    provider_id = f"metal3://default/h-{uuid.uuid4().hex[:6]}/m1"
    _provisioned_world(store, workload_kubeconfig, provider_id)
    workload.make_node(provider_id=provider_id)
    workload.make_node(provider_id=provider_id)
    with pytest.raises(CapiError, match="more than one Node"):
        capi_machine.reconcile(store, store.get("Machine", "m1", "default"))


def test_delete_removes_node_after_infrastructure_then_finalizer(store, workload, workload_kubeconfig):
    provider_id = f"metal3://default/h-{uuid.uuid4().hex[:6]}/m1"
    _provisioned_world(store, workload_kubeconfig, provider_id, extra_cp=True)
    node = workload.make_node(provider_id=provider_id)
    assert capi_machine.reconcile(store, store.get("Machine", "m1", "default")).done
    _hold_infra(store)

    store.delete("Machine", "m1", "default")
    step = capi_machine.reconcile(store, store.get("Machine", "m1", "default"))
    assert not step.done and "Metal3Machine m1" in step.message
    assert store.get("Metal3Machine", "m1", "default")["metadata"].get("deletionTimestamp")
    assert workload.get_node(node["metadata"]["name"]) is not None  # the Node waits for the infra machine
    assert store.get("Machine", "m1", "default")["status"]["phase"] == "Deleting"

    _hold_infra(store, held=False)  # the infrastructure machine goes
    step = capi_machine.reconcile(store, store.get("Machine", "m1", "default"))
    assert step.done, step.message
    assert workload.get_node(node["metadata"]["name"]) is None
    with pytest.raises(NotFound):
        store.get("Machine", "m1", "default")


def test_delete_keeps_node_of_last_control_plane(store, workload, workload_kubeconfig):
    provider_id = f"metal3://default/h-{uuid.uuid4().hex[:6]}/m1"
    _provisioned_world(store, workload_kubeconfig, provider_id)
    node = workload.make_node(provider_id=provider_id)
    assert capi_machine.reconcile(store, store.get("Machine", "m1", "default")).done
    store.delete("Machine", "m1", "default")
    m = store.get("Machine", "m1", "default")
    while True:
        step = capi_machine.reconcile(store, m)
        if step.done:
            break
        m = store.get("Machine", "m1", "default")
    assert "no control plane Machine is left" in step.message
    assert workload.get_node(node["metadata"]["name"]) is not None


def _pod(name, node, *, grace=0, labels=None, annotations=None):
    return {
        "metadata": {"name": name, "labels": labels or {"app": name}, "annotations": annotations or {}},
        "spec": {"nodeName": node, "terminationGracePeriodSeconds": grace, "containers": [{"name": "c", "image": "x"}]},
    }


def test_delete_drains_the_node_and_waits_for_volumes_before_the_infrastructure(store, workload, workload_kubeconfig):
    """Cordon, evictions through the Eviction API (a PodDisruptionBudget holds one), terminating Pods waited for,
    DaemonSet-free skip rules (mirror Pods, cluster.x-k8s.io/drain=skip), then the volume attachments: all before
    the infrastructure machine is deleted; on the lab's real kube-apiserver (no kubelet: the test plays it)."""
    from kubernetes import client as k8s

    provider_id = f"metal3://default/h-{uuid.uuid4().hex[:6]}/m1"
    _provisioned_world(store, workload_kubeconfig, provider_id, extra_cp=True)
    node = workload.make_node(provider_id=provider_id)
    node_name = node["metadata"]["name"]
    assert capi_machine.reconcile(store, store.get("Machine", "m1", "default")).done
    _hold_infra(store)
    core = workload.core_v1()
    api = core.api_client
    ns = f"drain-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": ns}})
    va_name = f"va-{uuid.uuid4().hex[:8]}"
    try:
        for pod in (
            _pod("plain", node_name),
            _pod("slow", node_name, grace=30),
            _pod("guarded", node_name),
            _pod("skipped", node_name, labels={names.DRAIN_LABEL: names.DRAIN_SKIP}),
            _pod("mirror", node_name, annotations={names.MIRROR_POD_ANNOTATION: "x"}),
        ):
            core.create_namespaced_pod(ns, pod)
        # budgets guard Running Pods only (Pending ones may always go): the test plays the kubelet
        running = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
        core.patch_namespaced_pod_status("guarded", ns, {"status": running})
        guard = {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "guarded"}}}
        k8s.PolicyV1Api(api).create_namespaced_pod_disruption_budget(ns, {"metadata": {"name": "guard"}, "spec": guard})
        k8s.StorageV1Api(api).create_volume_attachment(
            {
                "metadata": {"name": va_name},
                "spec": {
                    "attacher": "csi.example.com",
                    "nodeName": node_name,
                    "source": {"persistentVolumeName": "pv0"},
                },
            }
        )

        def pods():
            return sorted(p.metadata.name for p in core.list_namespaced_pod(ns).items)

        def round_():
            return capi_machine.reconcile(store, store.get("Machine", "m1", "default"))

        store.delete("Machine", "m1", "default")
        step = round_()
        assert not step.done
        assert f"evicted: {ns}/plain, {ns}/slow" in step.message and f"eviction blocked: {ns}/guarded" in step.message
        assert "disruption budget" in step.message, step.message
        assert workload.get_node(node_name)["spec"]["unschedulable"] is True
        m = store.get("Machine", "m1", "default")
        cond = conditions.get(m, names.DELETING)
        assert cond["reason"] == names.DELETING_DRAINING_NODE_REASON and f"draining Node {node_name}" in cond["message"]
        assert m["status"]["deletion"]["nodeDrainStartTime"]
        assert not store.get("Metal3Machine", "m1", "default")["metadata"].get("deletionTimestamp")
        assert pods() == ["guarded", "mirror", "skipped", "slow"]

        step = round_()
        assert f"still terminating: {ns}/slow" in step.message and "eviction blocked" in step.message, step.message

        k8s.PolicyV1Api(api).delete_namespaced_pod_disruption_budget("guard", ns)
        core.delete_namespaced_pod("slow", ns, grace_period_seconds=0)  # the kubelet would have stopped it
        step = round_()
        assert step.message.startswith(f"draining Node {node_name}") and f"evicted: {ns}/guarded" in step.message
        assert pods() == ["mirror", "skipped"]

        step = round_()  # drained; the volume is still attached
        m = store.get("Machine", "m1", "default")
        assert conditions.get(m, names.DELETING)["reason"] == names.DELETING_WAITING_FOR_VOLUME_DETACH_REASON
        assert va_name in step.message and m["status"]["deletion"]["waitForNodeVolumeDetachStartTime"]
        assert not store.get("Metal3Machine", "m1", "default")["metadata"].get("deletionTimestamp")

        k8s.StorageV1Api(api).delete_volume_attachment(va_name)
        step = round_()
        assert "Metal3Machine m1" in step.message, step.message  # now the infrastructure machine goes
        assert workload.get_node(node_name) is not None  # the Node waits for it
        _hold_infra(store, held=False)
        step = round_()
        while not step.done:
            step = round_()
        assert workload.get_node(node_name) is None
        assert pods() == ["mirror", "skipped"]  # what drain leaves
    finally:
        try:
            k8s.StorageV1Api(api).delete_volume_attachment(va_name)
        except k8s.ApiException:
            pass
        core.delete_namespace(ns)


def test_drain_skips_daemonset_pods_and_honours_exclusion_and_timeout(store, workload, workload_kubeconfig):
    from ansible_collections.baremetal.capi.plugins.module_utils.capi import drain

    ds_pod = {"metadata": {"name": "d", "ownerReferences": [{"kind": "DaemonSet", "controller": True, "name": "ds"}]}}
    rs_pod = {"metadata": {"name": "r", "ownerReferences": [{"kind": "ReplicaSet", "controller": True, "name": "rs"}]}}
    assert drain._skipped(ds_pod) and not drain._skipped(rs_pod)

    provider_id = f"metal3://default/h-{uuid.uuid4().hex[:6]}/m1"
    _provisioned_world(store, workload_kubeconfig, provider_id, extra_cp=True)
    node = workload.make_node(provider_id=provider_id)
    assert capi_machine.reconcile(store, store.get("Machine", "m1", "default")).done
    _hold_infra(store)
    m = store.get("Machine", "m1", "default")
    m["metadata"].setdefault("annotations", {})[names.EXCLUDE_NODE_DRAINING_ANNOTATION] = ""
    m["metadata"]["annotations"][names.EXCLUDE_WAIT_FOR_NODE_VOLUME_DETACH_ANNOTATION] = ""
    store.update(m)
    store.delete("Machine", "m1", "default")
    step = capi_machine.reconcile(store, store.get("Machine", "m1", "default"))
    assert "Metal3Machine m1" in step.message, step.message  # straight to the infrastructure machine
    assert not workload.get_node(node["metadata"]["name"])["spec"].get("unschedulable")

    # a drain past nodeDrainTimeoutSeconds is given up
    import datetime

    later = datetime.datetime.now(datetime.UTC) + datetime.timedelta(hours=1)
    machine_obj = {
        "metadata": {"name": "x"},
        "spec": {"deletion": {"nodeDrainTimeoutSeconds": 60, "nodeVolumeDetachTimeoutSeconds": 60}},
        "status": {"nodeRef": {"name": node["metadata"]["name"]}},
    }
    after = {"status": {"deletion": {"nodeDrainStartTime": "2026-01-01T00:00:00Z"}}}
    assert drain.step(workload, machine_obj, after, clock=lambda: later) is None
    assert after["status"]["deletion"]["waitForNodeVolumeDetachStartTime"]
