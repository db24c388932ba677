"""The pool's allocation record (status.indexes) and the allocation edge rules of ip-address-manager's
ipam/ippool_manager.go: getIndexes, createAddress, deleteAddress."""

from __future__ import annotations

import random

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.errors import NotFound, Requeue
from ansible_collections.baremetal.capi.plugins.module_utils.metal3.ipam import IPAM
from ansible_collections.baremetal.capi.plugins.module_utils.model import kinds, meta, names

NS = "rec"


@pytest.fixture
def ipam(store):
    return IPAM(store, rng=random.Random(3))


def make_pool(ipam, **spec):
    spec.setdefault("namePrefix", "pfx")
    spec.setdefault("pools", [{"start": "10.0.0.1", "end": "10.0.0.9"}])
    return ipam.apply_pool(meta.new("IPPool", "p", NS, spec=spec))[1]


def claim(name):
    return meta.new("IPClaim", name, NS, spec={"pool": {"name": "p"}})


def indexes(store):
    return (store.get("IPPool", "p", NS).get("status") or {}).get("indexes") or {}


def drop_address(store, name):
    cur = store.get(kinds.M3_IPADDRESS, name, NS)
    meta.remove_finalizer(cur, names.IPADDRESS_FINALIZER)
    store.update(cur)
    store.delete(kinds.M3_IPADDRESS, name, NS)


def test_indexes_written_on_allocation_and_release(ipam, store):
    make_pool(ipam)
    ipam.apply_claim(claim("a"))
    ipam.apply_claim(claim("b"))
    assert indexes(store) == {"a": "10.0.0.1", "b": "10.0.0.2"}
    assert store.get("IPPool", "p", NS)["status"]["lastUpdated"]
    ipam.delete_claim("a", NS)
    assert indexes(store) == {"b": "10.0.0.2"}
    ipam.delete_claim("b", NS)
    assert "indexes" not in (store.get("IPPool", "p", NS).get("status") or {})


def test_recorded_claim_keeps_its_address_when_its_ipaddress_is_missing(ipam, store):
    make_pool(ipam)
    ipam.apply_claim(claim("a"))
    ipam.apply_claim(claim("b"))
    drop_address(store, "pfx-10-0-0-1")
    # "a" is still in status.indexes: it gets 10.0.0.1 again (not the next free one), and the
    # IPAddress is made again under the same name
    _, got, addr = ipam.apply_claim(claim("a"))
    assert addr["spec"]["address"] == "10.0.0.1" and meta.name(addr) == "pfx-10-0-0-1"
    assert got["status"]["address"]["name"] == "pfx-10-0-0-1"
    assert store.get(kinds.M3_IPADDRESS, "pfx-10-0-0-1", NS)["spec"]["claim"]["name"] == "a"


def test_a_record_restored_from_elsewhere_is_honoured(ipam, store):
    # e.g. a pool moved with its status: the claim named in status.indexes gets that address
    make_pool(ipam)
    cur = store.get("IPPool", "p", NS)
    cur["status"] = {"indexes": {"moved": "10.0.0.7"}}
    store.update_status(cur)
    _, _, addr = ipam.apply_claim(claim("moved"))
    assert addr["spec"]["address"] == "10.0.0.7"
    _, _, other = ipam.apply_claim(claim("new"))
    assert other["spec"]["address"] == "10.0.0.1"


def test_preallocations_are_free_on_a_deleting_pool(ipam, store):
    make_pool(ipam, preAllocations={"x": "10.0.0.1"})
    _, _, addr = ipam.apply_claim(claim("a"))
    assert addr["spec"]["address"] == "10.0.0.2"  # 10.0.0.1 is held for "x"
    store.delete("IPPool", "p", NS)  # the finalizer keeps it, deleting
    assert meta.is_deleting(store.get("IPPool", "p", NS))
    _, _, addr = ipam.apply_claim(claim("b"))
    assert addr["spec"]["address"] == "10.0.0.1"  # getIndexes ignores preAllocations there


def test_name_clash_requeues_without_another_address(ipam, store):
    make_pool(ipam)
    # another pool with the same namePrefix already holds the name pfx-10-0-0-1
    foreign = meta.new(
        kinds.M3_IPADDRESS,
        "pfx-10-0-0-1",
        NS,
        spec={"address": "10.0.0.1", "pool": {"name": "q"}, "claim": {"name": "z"}, "prefix": 24},
    )
    store.create(foreign)
    with pytest.raises(Requeue, match="name clash"):
        ipam.apply_claim(claim("a"))
    got = store.get("IPClaim", "a", NS)
    assert not (got.get("status") or {}).get("address") and not (got.get("status") or {}).get("errorMessage")
    assert [meta.name(a) for a in store.list(kinds.M3_IPADDRESS, NS)] == ["pfx-10-0-0-1"]
    store.delete(kinds.M3_IPADDRESS, "pfx-10-0-0-1", NS)
    _, _, addr = ipam.apply_claim(claim("a"))
    assert addr["spec"]["address"] == "10.0.0.1"


def test_name_clash_with_a_capi_address_requeues(ipam, store):
    make_pool(ipam)
    capi = meta.new(
        kinds.CAPI_IPADDRESS,
        "pfx-10-0-0-1",
        NS,
        spec={
            "address": "10.0.0.1",
            "prefix": 24,
            "poolRef": {"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": "other"},
            "claimRef": {"name": "z"},
        },
    )
    store.create(capi)
    with pytest.raises(Requeue):
        ipam.apply_claim(claim("a"))
    # the same name answering a claim of this very pool is simply taken: the next address
    cur = store.get(kinds.CAPI_IPADDRESS, "pfx-10-0-0-1", NS)
    cur["spec"]["poolRef"] = {"apiGroup": "ipam.metal3.io", "kind": "IPPool", "name": "p"}
    store.update(cur)
    _, _, addr = ipam.apply_claim(claim("a"))
    assert addr["spec"]["address"] == "10.0.0.2"


def test_preallocated_address_held_by_another_claim_requeues(ipam, store):
    make_pool(ipam)
    ipam.apply_claim(claim("a"))  # takes 10.0.0.1
    cur = store.get("IPPool", "p", NS)
    cur["spec"]["preAllocations"] = {"late": "10.0.0.1"}
    store.update(cur)
    with pytest.raises(Requeue):
        ipam.apply_claim(claim("late"))
    status = store.get("IPClaim", "late", NS).get("status") or {}
    assert "errorMessage" not in status  # a transient error upstream, not a failed claim
    ipam.delete_claim("a", NS)
    _, _, addr = ipam.apply_claim(claim("late"))
    assert addr["spec"]["address"] == "10.0.0.1"


def test_reconcile_rebuilds_the_record_from_the_addresses(ipam, store):
    make_pool(ipam)
    ipam.apply_claim(claim("a"))
    cur = store.get("IPPool", "p", NS)
    cur["status"]["indexes"] = {"ghost": "10.0.0.5", "a": "10.0.0.1"}
    store.update_status(cur)
    ipam.reconcile_pool(store.get("IPPool", "p", NS))
    assert indexes(store) == {"a": "10.0.0.1"}
    with pytest.raises(NotFound):
        store.get(kinds.M3_IPADDRESS, "pfx-10-0-0-5", NS)
