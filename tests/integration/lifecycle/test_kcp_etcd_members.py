"""KCP's etcd membership (capi/kcp_etcd.py through reconcile_control_plane) against a real 3-member etcd.

A sqlite store holds the Cluster, the KubeadmControlPlane, the ``<cluster>-etcd`` CA and three control-plane
Machines whose InternalIPs are the members' addresses and whose Nodes are named like the members (kubeadm).
"""

from __future__ import annotations

import base64
import os
import time

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.bootstrap import pki
from ansible_collections.baremetal.capi.plugins.module_utils.capi import control_plane
from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions, meta, names

from .etcd_cluster import EtcdCluster

NS = "kcp-etcd"


@pytest.fixture
def ca():
    return pki.new_ca()


@pytest.fixture
def members(tmp_path, ca):
    base = 100 + (os.getpid() + 37) % 100
    c = EtcdCluster(tmp_path, ca[0], ca[1], [f"127.{base}.9.{i}" for i in (1, 2, 3)])
    c.start_all()
    try:
        c.wait_healthy([0, 1, 2])
        yield c
    finally:
        c.stop_all()


def setup(store, ca, c: EtcdCluster, replicas=3):
    cluster = store.create(meta.new("Cluster", "c1", NS, spec={}))
    secret = meta.new("Secret", "c1-etcd", NS)
    secret["data"] = {k: base64.b64encode(v.encode()).decode() for k, v in (("tls.crt", ca[0]), ("tls.key", ca[1]))}
    store.create(secret)
    kcp = store.create(
        meta.new(
            "KubeadmControlPlane",
            "c1-cp",
            NS,
            spec={
                "replicas": replicas,
                "version": "v1.34.4",
                "machineTemplate": {
                    "spec": {
                        "infrastructureRef": {
                            "apiGroup": "infrastructure.cluster.x-k8s.io",
                            "kind": "Metal3MachineTemplate",
                            "name": "tmpl",
                        }
                    }
                },
            },
        )
    )
    for name, ip in zip(c.names, c.addresses, strict=True):
        m = meta.new(
            "Machine",
            f"m-{name}",
            NS,
            labels={
                names.CLUSTER_NAME_LABEL: "c1",
                names.CONTROL_PLANE_LABEL: "",
                names.CONTROL_PLANE_NAME_LABEL: "c1-cp",
            },
            annotations={names.KCP_CLEANUP_HOOK: ""},
            spec={
                "clusterName": "c1",
                "version": "v1.34.4",
                "bootstrap": {"dataSecretName": "x"},
                "infrastructureRef": {
                    "apiGroup": "infrastructure.cluster.x-k8s.io",
                    "kind": "Metal3Machine",
                    "name": name,
                },
            },
        )
        m["metadata"]["finalizers"] = [names.MACHINE_FINALIZER]
        m = store.create(m)
        m["status"] = {"nodeRef": {"name": name}, "addresses": [{"type": "InternalIP", "address": ip}]}
        conditions.set_condition(m, names.NODE_READY, True, names.NODE_READY_REASON)
        store.update_status(m)
    return cluster, kcp


def delete_waiting_on_hook(store, name):
    store.delete("Machine", name, NS)
    m = store.get("Machine", name, NS)
    conditions.set_condition(m, names.DELETING, True, names.DELETING_WAITING_FOR_PRE_TERMINATE_HOOK_REASON)
    store.update_status(m)


def member_names(c: EtcdCluster, via: int) -> list[str]:
    return sorted(m["name"] for m in c.call(via, "/v3/cluster/member/list")["members"])


def until_released(store, kcp, cluster, name, timeout=60):
    """Steps until the hook is gone; etcd refuses member changes for 5 s after a peer (re)connects."""
    deadline = time.monotonic() + timeout
    while True:
        step = control_plane.reconcile_control_plane(store, kcp, cluster)
        if names.KCP_CLEANUP_HOOK not in meta.annotations(store.get("Machine", name, NS)):
            return step
        assert "would lose etcd quorum" not in step.message, step.message
        if time.monotonic() > deadline:
            raise AssertionError(f"hook of {name} still there: {step.message}")
        time.sleep(1)


def test_the_hook_moves_leadership_and_removes_the_member(store, ca, members):
    cluster, kcp = setup(store, ca, members)
    ids = {m["name"]: str(m["ID"]) for m in members.call(0, "/v3/cluster/member/list")["members"]}
    # node-0 leads; it is the one that goes
    leader = str(members.call(0, "/v3/maintenance/status")["leader"])
    if leader != ids["node-0"]:
        status = {i: members.call(i, "/v3/maintenance/status") for i in range(3)}
        lead_idx = next(i for i in range(3) if str(status[i]["header"]["member_id"]) == leader)
        members.call(lead_idx, "/v3/maintenance/transfer-leadership", {"targetID": ids["node-0"]})
    assert str(members.call(1, "/v3/maintenance/status")["leader"]) == ids["node-0"]

    delete_waiting_on_hook(store, "m-node-0")
    step = until_released(store, kcp, cluster, "m-node-0")
    assert "etcd member node-0 removed" in step.message
    assert member_names(members, 1) == ["node-1", "node-2"]
    # leadership went to the newest Machine not being deleted (ties by name: m-node-2)
    assert str(members.call(2, "/v3/maintenance/status")["leader"]) == ids["node-2"]


def test_removals_that_would_lose_quorum_are_refused(store, ca, members):
    cluster, kcp = setup(store, ca, members, replicas=1)
    members.stop(1)
    members.stop(2)
    # scale-down 3 -> 1: the victim (oldest, m-node-0) is not deleted at all
    step = control_plane.reconcile_control_plane(store, kcp, cluster)
    assert step.message.startswith("not deleting m-node-0: removing etcd member node-0 would lose etcd quorum")
    assert not meta.is_deleting(store.get("Machine", "m-node-0", NS))
    # a Machine someone deleted keeps its hook (its infrastructure stays) while the removal would lose quorum
    delete_waiting_on_hook(store, "m-node-1")
    step = control_plane.reconcile_control_plane(store, kcp, cluster)
    assert "would lose etcd quorum" in step.message and step.data["refused"] == "m-node-1"
    assert names.KCP_CLEANUP_HOOK in meta.annotations(store.get("Machine", "m-node-1", NS))
    assert member_names(members, 0) == ["node-0", "node-1", "node-2"]
    # the members come back: the removal goes through
    members.start(1, [0, 1, 2], state="existing")
    members.start(2, [0, 1, 2], state="existing")
    members.wait_healthy([0, 1, 2])
    until_released(store, kcp, cluster, "m-node-1")
    assert member_names(members, 0) == ["node-0", "node-2"]
