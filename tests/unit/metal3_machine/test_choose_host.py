"""chooseHost: which hosts a Metal3Machine may get, on a real sqlite store (CAPM3
baremetal/metal3machine_manager.go chooseHost)."""

from __future__ import annotations

import random

import pytest
from capi_objects import bmh, machine, metal3_machine, put

from ansible_collections.baremetal.capi.plugins.module_utils.errors import NoHostAvailable, Requeue
from ansible_collections.baremetal.capi.plugins.module_utils.metal3 import choose
from ansible_collections.baremetal.capi.plugins.module_utils.model import names

M3M_REF = {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "Metal3Machine", "namespace": "default"}


def _choose(store, m3m, mach=None, rng=None):
    return choose.choose_host(store, m3m, mach or machine(m3m["metadata"]["name"]), rng)


@pytest.mark.parametrize(
    "host_kw, eligible",
    [
        ({"state": "available"}, True),
        ({"state": "ready"}, True),
        ({"state": "provisioned"}, False),
        ({"state": "registering"}, False),
        ({"state": "inspecting"}, False),
        ({"state": ""}, False),
        ({"annotations": {names.BMH_PAUSED_ANNOTATION: ""}}, False),
        ({"annotations": {names.UNHEALTHY_ANNOTATION: "capm3/UnhealthyNode"}}, False),
        ({"annotations": {names.UNHEALTHY_ANNOTATION_DEPRECATED: ""}}, False),
        ({"consumerRef": dict(M3M_REF, name="someone-else")}, False),
        ({"labels": {names.NODE_REUSE_LABEL: "md-other"}}, False),
    ],
)
def test_host_eligibility(store, host_kw, eligible):
    put(store, bmh("h1", **host_kw))
    host, reason = _choose(store, metal3_machine("m1"))
    assert (host is not None) == eligible, reason
    if not eligible:
        assert reason.startswith(choose.NO_HOST)


def test_errored_and_deleting_hosts_skipped(store):
    h = put(store, bmh("h-err"))
    h["status"]["errorMessage"] = "boom"
    store.update_status(h)
    h = put(store, bmh("h-del"))
    h["metadata"]["finalizers"] = ["baremetalhost.metal3.io"]
    store.update(h)
    store.delete("BareMetalHost", "h-del", "default")
    assert _choose(store, metal3_machine("m1"))[0] is None


def test_own_host_is_returned_first_whatever_its_state(store):
    put(store, bmh("a-free"))
    put(store, bmh("b-mine", state="provisioned", consumerRef=dict(M3M_REF, name="m1")))
    host, reason = _choose(store, metal3_machine("m1"))
    assert host["metadata"]["name"] == "b-mine" and reason == names.ASSOCIATE_BMH_SUCCESS_REASON


@pytest.mark.parametrize(
    "selector, want",
    [
        ({"matchLabels": {"rack": "r1"}}, {"h1", "h2"}),
        ({"matchLabels": {"rack": "r1", "disk": "ssd"}}, {"h1"}),
        ({"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r2"]}]}, {"h3"}),
        ({"matchExpressions": [{"key": "rack", "operator": "NotIn", "values": ["r1"]}]}, {"h3", "h4"}),
        ({"matchExpressions": [{"key": "disk", "operator": "Exists"}]}, {"h1", "h3"}),
        ({"matchExpressions": [{"key": "disk", "operator": "!"}]}, {"h2", "h4"}),
        ({"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["16"]}]}, {"h3"}),
        ({"matchExpressions": [{"key": "cores", "operator": "lt", "values": ["16"]}]}, {"h1"}),
        ({"matchExpressions": [{"key": "rack", "operator": "==", "values": ["r1"]}]}, {"h1", "h2"}),
    ],
)
def test_host_selector(store, selector, want):
    put(store, bmh("h1", labels={"rack": "r1", "disk": "ssd", "cores": "8"}))
    put(store, bmh("h2", labels={"rack": "r1"}))
    put(store, bmh("h3", labels={"rack": "r2", "disk": "nvme", "cores": "32"}))
    put(store, bmh("h4"))
    got = set()
    for seed in range(40):
        host, _ = _choose(store, metal3_machine("m1", host_selector=selector), rng=random.Random(seed))
        got.add(host["metadata"]["name"])
    assert got == want


def test_failure_domain_preference_and_fallback(store):
    for i in range(4):
        put(store, bmh(f"h{i}", labels={names.FAILURE_DOMAIN_LABEL: "fd-a" if i < 2 else "fd-b"}))
    picked = {
        _choose(store, metal3_machine("m1", failure_domain="fd-b"), rng=random.Random(s))[0]["metadata"]["name"]
        for s in range(30)
    }
    assert picked == {"h2", "h3"}
    picked = {
        _choose(store, metal3_machine("m1", failure_domain="fd-x"), rng=random.Random(s))[0]["metadata"]["name"]
        for s in range(60)
    }
    assert picked == {"h0", "h1", "h2", "h3"}  # no host in fd-x: every host is a candidate


def test_random_pick_is_spread(store):
    for i in range(5):
        put(store, bmh(f"h{i}"))
    picked = {_choose(store, metal3_machine("m1"))[0]["metadata"]["name"] for _ in range(80)}
    assert len(picked) > 1


def test_node_reuse_for_machine_deployment(store):
    put(store, bmh("h-free"))
    cluster_ref = {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "name": "c1", "namespace": "default"}
    put(store, bmh("h-reuse", labels={names.NODE_REUSE_LABEL: "md-workers"}, consumerRef=cluster_ref))
    mach = machine("m1", labels={names.DEPLOYMENT_NAME_LABEL: "workers"})
    host, reason = _choose(store, metal3_machine("m1"), mach)
    assert host["metadata"]["name"] == "h-reuse"
    assert reason == names.ASSOCIATE_BMH_VIA_NODE_REUSE_SUCCESS_REASON
    # another deployment's machine never gets it
    other = machine("m2", labels={names.DEPLOYMENT_NAME_LABEL: "other"})
    assert _choose(store, metal3_machine("m2"), other)[0]["metadata"]["name"] == "h-free"


def test_node_reuse_for_control_plane_waits_until_ready(store):
    put(store, bmh("h-reuse", state="deprovisioning", labels={names.NODE_REUSE_LABEL: "cp-kcp1"}))
    mach = machine("m1", control_plane=True)
    mach["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "controlplane.cluster.x-k8s.io/v1beta2",
            "kind": "KubeadmControlPlane",
            "name": "kcp1",
            "uid": "u1",
            "controller": True,
        }
    ]
    with pytest.raises(Requeue, match="not ready yet"):
        _choose(store, metal3_machine("m1"), mach)


def test_claim_writes_consumer_ref_and_labels(store):
    put(store, bmh("h1", labels={names.NODE_REUSE_LABEL: "md-w"}))
    mach = machine("m1", labels={names.DEPLOYMENT_NAME_LABEL: "w"})
    m3m = put(store, metal3_machine("m1"))
    host, _ = choose.claim(store, m3m, mach)
    stored = store.get("BareMetalHost", "h1", "default")
    assert stored["spec"]["consumerRef"] == {
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2",
        "kind": "Metal3Machine",
        "name": "m1",
        "namespace": "default",
    }
    assert stored["metadata"]["labels"] == {names.CLUSTER_NAME_LABEL: "c1"}  # node-reuse label removed


def test_claim_retries_after_losing_a_race(store):
    """The host listed is claimed by someone else before our write: Conflict, list again, take the other."""
    put(store, bmh("h1"))
    put(store, bmh("h2"))
    m3m = put(store, metal3_machine("m1"))
    other = put(store, metal3_machine("m2"))
    stolen = []

    class Rigged(random.Random):
        def choice(self, seq):
            host = seq[0]
            if not stolen:  # another process claims the host we are about to write
                stolen.append(host["metadata"]["name"])
                choose.claim(store, other, machine("m2"), rng=random.Random(0))
                taken = {
                    h["metadata"]["name"]
                    for h in store.list("BareMetalHost", "default")
                    if h["spec"].get("consumerRef")
                }
                host = next(h for h in seq if h["metadata"]["name"] in taken)
            return host

    host, _ = choose.claim(store, m3m, machine("m1"), rng=Rigged())
    owners = {h["metadata"]["name"]: h["spec"]["consumerRef"]["name"] for h in store.list("BareMetalHost", "default")}
    assert sorted(owners.values()) == ["m1", "m2"]
    assert owners[host["metadata"]["name"]] == "m1"


def test_claim_without_hosts_requeues_no_available_host(store):
    m3m = put(store, metal3_machine("m1"))
    with pytest.raises(Requeue, match="No available host found"):
        choose.claim(store, m3m, machine("m1"))


def test_no_host_names_selector_failure_domain_and_why_each_host_was_skipped(store):
    """The typed error a deadline reports: what was looked for, how many hosts were seen, why each was not taken."""
    put(store, bmh("h-taken", labels={"r": "w"}, consumerRef=dict(M3M_REF, name="someone-else")))
    put(store, bmh("h-busy", state="provisioning", labels={"r": "w"}))
    put(store, bmh("h-paused", labels={"r": "w"}, annotations={names.BMH_PAUSED_ANNOTATION: ""}))
    put(store, bmh("h-other", labels={"r": "cp"}))
    m3m = put(store, metal3_machine("m1", host_selector={"matchLabels": {"r": "w"}}, failure_domain="az-1"))
    with pytest.raises(NoHostAvailable) as info:
        choose.claim(store, m3m, machine("m1"))
    exc = info.value
    assert isinstance(exc, Requeue) and exc.seen == 4 and exc.failure_domain == "az-1" and exc.selector == "r=w"
    assert exc.skipped == {
        "h-taken": "consumed by Metal3Machine default/someone-else",
        "h-busy": "state provisioning",
        "h-paused": "paused",
        "h-other": "labels do not match",
    }
    assert exc.message.startswith(
        "No available host found: no available host matching r=w (failure domain az-1, preferred); "
        "4 BareMetalHost(s) in default, 3 matching: h-busy state provisioning; "
    )
    assert "h-other labels do not match" in exc.message
