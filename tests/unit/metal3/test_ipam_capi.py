"""Cluster API IPAddressClaims answered by a Metal3 IPPool, as ip-address-manager answers them
(ipam/ippool_manager.go capiUpdateAddress / capiCreateAddress / capiDeleteAddress)."""

from __future__ import annotations

import random

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid, NotFound
from ansible_collections.baremetal.capi.plugins.module_utils.metal3.ipam import IPAM
from ansible_collections.baremetal.capi.plugins.module_utils.metal3.ipam_capi import CLAIM_KIND
from ansible_collections.baremetal.capi.plugins.module_utils.model import kinds, meta, names

NS = "capi"
M3_REF = {"apiGroup": "ipam.metal3.io", "kind": "IPPool", "name": "p"}


@pytest.fixture
def ipam(store):
    return IPAM(store, rng=random.Random(5))


def apply_pool(ipam, **spec):
    spec.setdefault("namePrefix", "pfx")
    spec.setdefault("pools", [{"subnet": "fd00:1::/120", "gateway": "fd00:1::fe", "prefix": 64}])
    return ipam.apply_pool(meta.new("IPPool", "p", NS, spec=spec))[1]


def capi_claim(store, name, ref=None, **metadata):
    obj = meta.new(CLAIM_KIND, name, NS, spec={"poolRef": dict(ref or M3_REF)}, **metadata)
    obj["metadata"]["ownerReferences"] = [
        {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "Metal3Data", "name": "d", "uid": "u-1"}
    ]
    return store.create(obj)


def condition(claim):
    return claim["status"]["deprecated"]["v1beta1"]["conditions"]


def test_claim_answered_as_upstream(ipam, store):
    apply_pool(ipam)
    claim = capi_claim(store, "c1", labels={"cluster.x-k8s.io/cluster-name": "k"})
    apply_pool(ipam)  # the pool reconcile answers the claims naming it
    got = store.get(CLAIM_KIND, "c1", NS)
    assert names.CAPI_IPADDRESSCLAIM_FINALIZER in meta.finalizers(got)
    assert got["status"]["addressRef"] == {"name": "pfx-fd00-1--1"}
    [cond] = condition(got)
    assert {k: cond[k] for k in ("type", "status", "severity", "reason", "message")} == {
        "type": "ErrorMessage",
        "status": "False",
        "severity": "Info",
        "reason": "ErrorMessage",
        "message": "",
    }
    addr = store.get(kinds.CAPI_IPADDRESS, "pfx-fd00-1--1", NS)
    assert addr["spec"] == {
        "address": "fd00:1::1",
        "poolRef": M3_REF,
        "claimRef": {"name": "c1"},
        "prefix": 64,
        "gateway": "fd00:1::fe",
    }
    assert meta.finalizers(addr) == [names.CAPI_IPADDRESS_FINALIZER]
    assert meta.labels(addr) == {"cluster.x-k8s.io/cluster-name": "k"}
    owners = [(r["kind"], r["name"]) for r in addr["metadata"]["ownerReferences"]]
    assert owners == [("Metal3Data", "d"), ("IPPool", "p"), ("IPAddressClaim", "c1")]
    assert store.get("IPPool", "p", NS)["status"]["indexes"] == {"c1": "fd00:1::1"}
    # no Metal3 IPAddress was made for it
    with pytest.raises(NotFound):
        store.get(kinds.M3_IPADDRESS, "pfx-fd00-1--1", NS)
    # idempotent
    assert ipam.serve_capi_claim(store.get(CLAIM_KIND, "c1", NS))["spec"]["address"] == "fd00:1::1"
    assert claim["metadata"]["uid"] in [r.get("uid") for r in addr["metadata"]["ownerReferences"]]


def test_metal3_and_capi_claims_share_the_pool(ipam, store):
    apply_pool(ipam, pools=[{"start": "10.9.0.1", "end": "10.9.0.3"}], preAllocations={"c-pre": "10.9.0.3"})
    _, _, m3 = ipam.apply_claim(meta.new("IPClaim", "m", NS, spec={"pool": {"name": "p"}}))
    capi_claim(store, "c-pre")
    capi_claim(store, "c-next")
    capi_claim(store, "c-none")
    out = ipam.serve_capi_claims(store.get("IPPool", "p", NS))
    assert m3["spec"]["address"] == "10.9.0.1"
    assert out["c-pre"] == {"address": "10.9.0.3"}  # its pre-allocation
    assert out["c-next"] == {"address": "10.9.0.2"}
    assert out["c-none"] == {"error": "Exhausted IP Pools"}
    [cond] = condition(store.get(CLAIM_KIND, "c-none", NS))
    assert (cond["status"], cond["severity"], cond["message"]) == ("True", "Error", "Exhausted IP Pools")
    assert store.get("IPPool", "p", NS)["status"]["indexes"] == {
        "m": "10.9.0.1",
        "c-pre": "10.9.0.3",
        "c-next": "10.9.0.2",
    }


def test_requested_address_annotation(ipam, store):
    apply_pool(ipam, pools=[{"subnet": "10.8.0.0/29"}])
    capi_claim(store, "want", annotations={"ipAddress": "10.8.0.5"})
    assert ipam.serve_capi_claims(store.get("IPPool", "p", NS)) == {"want": {"address": "10.8.0.5"}}


def test_claims_for_other_pools_are_left_alone(ipam, store):
    apply_pool(ipam)
    capi_claim(store, "other", ref={"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": "p"})
    capi_claim(store, "elsewhere", ref=dict(M3_REF, name="q"))
    assert ipam.serve_capi_claims(store.get("IPPool", "p", NS)) == {}
    assert not store.get(CLAIM_KIND, "other", NS).get("status")
    assert store.list(kinds.CAPI_IPADDRESS, NS) == []


def test_deleting_claim_releases_its_address(ipam, store):
    apply_pool(ipam)
    capi_claim(store, "c1", finalizers=["keep.example/x"])
    apply_pool(ipam)
    store.delete(CLAIM_KIND, "c1", NS)
    # another finalizer is still there: upstream waits ("still in use")
    ipam.serve_capi_claims(store.get("IPPool", "p", NS))
    assert store.get(kinds.CAPI_IPADDRESS, "pfx-fd00-1--1", NS)
    cur = store.get(CLAIM_KIND, "c1", NS)
    meta.remove_finalizer(cur, "keep.example/x")
    store.update(cur)
    ipam.serve_capi_claims(store.get("IPPool", "p", NS))
    with pytest.raises(NotFound):
        store.get(kinds.CAPI_IPADDRESS, "pfx-fd00-1--1", NS)
    with pytest.raises(NotFound):
        store.get(CLAIM_KIND, "c1", NS)
    assert "indexes" not in (store.get("IPPool", "p", NS).get("status") or {})
    # the address is free again, for either kind of claim
    _, _, m3 = ipam.apply_claim(meta.new("IPClaim", "m", NS, spec={"pool": {"name": "p"}}))
    assert m3["spec"]["address"] == "fd00:1::1"


def test_deleting_the_pool_first_lets_its_deleting_claims_go(ipam, store):
    # ip-address-manager's reconcileDelete runs UpdateAddresses before it counts allocations: a claim
    # already being deleted, held only by IPAM's finalizer, gives its address back and does not stop it
    apply_pool(ipam)
    capi_claim(store, "gone")
    capi_claim(store, "held", finalizers=["keep.example/x"])
    apply_pool(ipam)
    _, _, m3 = ipam.apply_claim(meta.new("IPClaim", "m3", NS, spec={"pool": {"name": "p"}}))
    for kind, name in ((CLAIM_KIND, "gone"), (CLAIM_KIND, "held"), ("IPClaim", "m3")):
        assert meta.is_deleting(store.delete(kind, name, NS))
    # "held" is still in use (another finalizer): refused, naming it; check mode says the same, writing nothing
    for check in (True, False):
        with pytest.raises(Invalid, match=r"1 address\(es\) still allocated \(held") as refused:
            ipam.delete_pool("p", NS, check=check)
        assert refused.value.field == "status.indexes"
    assert store.get(CLAIM_KIND, "held", NS)["status"]["addressRef"]
    for kind, name in ((CLAIM_KIND, "gone"), ("IPClaim", "m3"), (kinds.M3_IPADDRESS, meta.name(m3))):
        with pytest.raises(NotFound):
            store.get(kind, name, NS)
    cur = store.get(CLAIM_KIND, "held", NS)
    meta.remove_finalizer(cur, "keep.example/x")
    store.update(cur)
    assert ipam.delete_pool("p", NS, check=True)
    assert store.get(kinds.CAPI_IPADDRESS, "pfx-fd00-1--2", NS)  # check mode wrote nothing
    assert ipam.delete_pool("p", NS)
    for kind in ("IPPool", CLAIM_KIND, kinds.CAPI_IPADDRESS, "IPClaim", kinds.M3_IPADDRESS):
        assert store.list(kind, NS) == [], kind


def test_the_pool_reconcile_lets_deleting_metal3_claims_go(ipam, store):
    # m3UpdateAddresses: a deleting IPClaim that only IPAM's finalizer holds loses its IPAddress
    apply_pool(ipam)
    _, _, addr = ipam.apply_claim(meta.new("IPClaim", "m3", NS, spec={"pool": {"name": "p"}}))
    _, _, kept = ipam.apply_claim(
        meta.new("IPClaim", "kept", NS, spec={"pool": {"name": "p"}}, finalizers=["keep.example/x"])
    )
    store.delete("IPClaim", "m3", NS)
    store.delete("IPClaim", "kept", NS)
    apply_pool(ipam)
    for kind, name in (("IPClaim", "m3"), (kinds.M3_IPADDRESS, meta.name(addr))):
        with pytest.raises(NotFound):
            store.get(kind, name, NS)
    assert store.get(kinds.M3_IPADDRESS, meta.name(kept), NS)
    assert store.get("IPPool", "p", NS)["status"]["indexes"] == {"kept": kept["spec"]["address"]}
