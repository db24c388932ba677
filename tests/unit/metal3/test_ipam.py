"""IPAM: pool arithmetic, webhooks, allocation strategies, pre-allocations, annotation, exhaustion and retry."""

from __future__ import annotations

import random

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid, NotFound
from ansible_collections.baremetal.capi.plugins.module_utils.metal3 import ipaddr
from ansible_collections.baremetal.capi.plugins.module_utils.metal3.ipam import IPAM, AllocationFailed
from ansible_collections.baremetal.capi.plugins.module_utils.model import kinds, meta, names

NS = "ipam"


def pool(name="p", **spec):
    spec.setdefault("namePrefix", "pfx")
    return meta.new("IPPool", name, NS, spec=spec)


def claim(name, pool_name="p", ip=None, labels=None):
    return meta.new(
        "IPClaim",
        name,
        NS,
        spec={"pool": {"name": pool_name}},
        labels=labels,
        annotations={names.IPADDRESS_ANNOTATION: ip} if ip else None,
    )


@pytest.fixture
def ipam(store):
    return IPAM(store, rng=random.Random(7))


# -- arithmetic -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "entry,first,last,size,bounded",
    [
        ({"start": "10.0.0.10", "end": "10.0.0.12"}, "10.0.0.10", "10.0.0.12", 3, True),
        ({"subnet": "10.0.0.0/30"}, "10.0.0.1", "10.0.0.3", 3, True),  # network+1 .. broadcast, as GetIPAddress
        ({"start": "10.0.0.250", "subnet": "10.0.0.0/24"}, "10.0.0.250", "10.0.0.255", 6, True),
        ({"start": "10.0.0.250", "end": "10.0.1.5", "subnet": "10.0.0.0/24"}, "10.0.0.250", "10.0.0.255", 6, True),
        ({"start": "10.0.1.1", "subnet": "10.0.0.0/24"}, None, None, 0, True),  # start outside the subnet
        ({"start": "255.255.255.254"}, "255.255.255.254", "255.255.255.255", 2, False),
        ({"start": "2001:db8::fffe", "end": "2001:db8::1:1"}, "2001:db8::fffe", "2001:db8::1:1", 4, True),
        ({"subnet": "2001:db8::/126"}, "2001:db8::1", "2001:db8::3", 3, True),
    ],
)
def test_range(entry, first, last, size, bounded):
    r = ipaddr.Range(entry)
    assert (r.size, r.bounded) == (size, bounded)
    if size:
        assert (r.at(0), r.at(size - 1)) == (first, last)


def test_ranges_number_entries_one_after_the_other():
    ranges = ipaddr.Ranges({"pools": [{"start": "10.0.0.1", "end": "10.0.0.2"}, {"subnet": "192.168.0.0/30"}]})
    assert [(i, ip) for i, ip, _ in ranges.iterate()] == [
        (0, "10.0.0.1"),
        (1, "10.0.0.2"),
        (2, "192.168.0.1"),
        (3, "192.168.0.2"),
        (4, "192.168.0.3"),
    ]
    assert [ip for _, ip, _ in ranges.iterate(3)] == ["192.168.0.2", "192.168.0.3"]
    assert ranges.locate("192.168.0.2")[0] == 3
    assert ranges.locate("10.0.0.3") is None and ranges.total == 5


@pytest.mark.parametrize(
    "prefix,ip,name",
    [
        ("test1-prov", "172.22.0.50", "test1-prov-172-22-0-50"),
        ("bm", "2001:db8:0:1::20", "bm-2001-db8-0-1--20"),
        ("bm", "2001:db8::", "bm-2001-db8"),  # trailing dashes trimmed
        ("bm", "::1", "bm---1"),
    ],
)
def test_address_name(prefix, ip, name):
    assert ipaddr.address_name(prefix, ip) == name


# -- webhook ----------------------------------------------------------------------------------

BAD_POOLS = [
    ("no namePrefix", {"namePrefix": "", "pools": [{"subnet": "10.0.0.0/24"}]}, "spec.namePrefix"),
    ("bad start", {"pools": [{"start": "10.0.0.300", "end": "10.0.0.4"}]}, "spec.pools[0]"),
    ("bad subnet", {"pools": [{"subnet": "10.0.0.0/33"}]}, "spec.pools[0]"),
    ("start after end", {"pools": [{"start": "10.0.0.9", "end": "10.0.0.4"}]}, "spec.pools[0]"),
    ("bad gateway", {"gateway": "gw", "pools": [{"subnet": "10.0.0.0/24"}]}, "spec.gateway"),
    (
        "bad range dns",
        {"pools": [{"subnet": "10.0.0.0/24", "dnsServers": ["8.8.8.8", "x"]}]},
        "spec.pools[0].dnsServers[1]",
    ),
    ("prefix over 128", {"prefix": 129, "pools": [{"subnet": "10.0.0.0/24"}]}, "spec.prefix"),
    ("random unbounded", {"allocationStrategy": "random", "pools": [{"start": "10.0.0.1"}]}, "spec.pools[0]"),
    (
        "unknown strategy",
        {"allocationStrategy": "first", "pools": [{"subnet": "10.0.0.0/24"}]},
        "spec.allocationStrategy",
    ),
    (
        "preallocation outside",
        {"pools": [{"subnet": "10.0.0.0/24"}], "preAllocations": {"c": "10.0.1.1"}},
        "spec.preAllocations",
    ),
    (
        "preallocation not an IP",
        {"pools": [{"subnet": "10.0.0.0/24"}], "preAllocations": {"c": "ten"}},
        "spec.preAllocations.c",
    ),
    (
        "duplicate preallocation",
        {"pools": [{"subnet": "fd00::/120"}], "preAllocations": {"a": "fd00::5", "b": "fd00:0::0005"}},
        "spec.preAllocations.b",
    ),
]


@pytest.mark.parametrize("name,spec,field", BAD_POOLS, ids=[c[0] for c in BAD_POOLS])
def test_pool_webhook_rejects(ipam, store, name, spec, field):
    with pytest.raises(Invalid) as err:
        ipam.apply_pool(pool(**spec))
    assert err.value.obj == f"IPPool {NS}/p" and err.value.field == field
    assert store.list("IPPool", NS) == []


@pytest.mark.parametrize(
    "change,field",
    [
        ({"namePrefix": "other"}, "spec.namePrefix"),
        ({"allocationStrategy": "random"}, "spec.allocationStrategy"),
        ({"pools": [{"start": "10.0.0.100", "end": "10.0.0.120"}]}, "spec.pools"),  # the in-use address falls out
    ],
)
def test_pool_update_rules(ipam, store, change, field):
    spec = {"pools": [{"start": "10.0.0.1", "end": "10.0.0.120"}]}
    ipam.apply_pool(pool(**spec))
    ipam.apply_claim(claim("c"))
    with pytest.raises(Invalid) as err:
        ipam.apply_pool(pool(**dict(spec, **change)))
    assert err.value.field == field
    assert store.get("IPPool", "p", NS)["spec"]["pools"] == spec["pools"]


def test_pool_defaults_finalizer_labels_owner_and_idempotence(ipam, store):
    cluster = store.create(meta.new("Cluster", "test1", NS, spec={}))
    changed, obj = ipam.apply_pool(pool(clusterName="test1", pools=[{"subnet": "10.0.0.0/24"}]))
    assert changed
    assert obj["spec"]["allocationStrategy"] == "sequential"
    assert obj["metadata"]["finalizers"] == [names.IPPOOL_FINALIZER]
    assert obj["metadata"]["labels"] == {names.CLUSTER_NAME_LABEL: "test1", "cluster.x-k8s.io/provider": "ipam-metal3"}
    assert obj["metadata"]["ownerReferences"] == [meta.owner_reference(cluster)]
    rv = store.get("IPPool", "p", NS)["metadata"]["resourceVersion"]
    changed, _ = ipam.apply_pool(pool(clusterName="test1", pools=[{"subnet": "10.0.0.0/24"}]))
    assert not changed and store.get("IPPool", "p", NS)["metadata"]["resourceVersion"] == rv


# -- allocation ---------------------------------------------------------------------------------


def test_sequential_across_ranges_with_per_range_settings(ipam, store):
    ipam.apply_pool(
        pool(
            prefix=24,
            gateway="10.0.0.254",
            dnsServers=["10.0.0.53"],
            pools=[
                {"start": "10.0.0.1", "end": "10.0.0.2"},
                {
                    "start": "10.0.1.1",
                    "end": "10.0.1.1",
                    "prefix": 28,
                    "gateway": "10.0.1.14",
                    "dnsServers": ["1.1.1.1"],
                },
                {"subnet": "fd00::/126", "prefix": 64},
            ],
        )
    )
    got = [ipam.apply_claim(claim(f"c{i}", labels={"app": "x"}))[2]["spec"] for i in range(6)]
    assert [(a["address"], a["prefix"], a.get("gateway"), a.get("dnsServers")) for a in got] == [
        ("10.0.0.1", 24, "10.0.0.254", ["10.0.0.53"]),
        ("10.0.0.2", 24, "10.0.0.254", ["10.0.0.53"]),
        ("10.0.1.1", 28, "10.0.1.14", ["1.1.1.1"]),
        ("fd00::1", 64, "10.0.0.254", ["10.0.0.53"]),
        ("fd00::2", 64, "10.0.0.254", ["10.0.0.53"]),
        ("fd00::3", 64, "10.0.0.254", ["10.0.0.53"]),
    ]
    with pytest.raises(AllocationFailed, match="Exhausted IP Pools"):
        ipam.apply_claim(claim("c6"))


def test_ipaddress_and_claim_shapes_as_upstream(ipam, store):
    _, p = ipam.apply_pool(
        pool(
            namePrefix="test1-prov",
            prefix=24,
            gateway="172.22.0.1",
            pools=[{"start": "172.22.0.50", "end": "172.22.0.99"}],
        )
    )
    changed, c, addr = ipam.apply_claim(claim("m-0", labels={"cluster.x-k8s.io/cluster-name": "test1"}))
    assert changed
    stored = store.get(kinds.M3_IPADDRESS, "test1-prov-172-22-0-50", NS)
    assert stored["spec"] == {
        "address": "172.22.0.50",
        "prefix": 24,
        "gateway": "172.22.0.1",
        "pool": {"name": "p", "namespace": NS},
        "claim": {"name": "m-0", "namespace": NS},
    }
    assert stored["metadata"]["finalizers"] == [names.IPADDRESS_FINALIZER]
    assert stored["metadata"]["labels"] == {"cluster.x-k8s.io/cluster-name": "test1"}
    assert stored["metadata"]["ownerReferences"] == [meta.owner_reference(p), meta.owner_reference(c)]
    c = store.get("IPClaim", "m-0", NS)
    assert c["status"] == {"address": {"name": "test1-prov-172-22-0-50", "namespace": NS}}
    assert c["metadata"]["finalizers"] == [names.IPCLAIM_FINALIZER]
    # idempotent: same address, nothing written
    rv = c["metadata"]["resourceVersion"]
    changed, _, again = ipam.apply_claim(claim("m-0", labels={"cluster.x-k8s.io/cluster-name": "test1"}))
    assert not changed and again["spec"]["address"] == "172.22.0.50"
    assert store.get("IPClaim", "m-0", NS)["metadata"]["resourceVersion"] == rv
    ipam.reconcile_pool(store.get("IPPool", "p", NS))
    assert store.get("IPPool", "p", NS)["status"]["indexes"] == {"m-0": "172.22.0.50"}


def test_preallocation_reserved_and_honoured(ipam, store):
    ipam.apply_pool(
        pool(pools=[{"start": "10.0.0.1", "end": "10.0.0.3"}], preAllocations={"vip": "10.0.0.1", "edge": "10.0.0.3"})
    )
    assert ipam.apply_claim(claim("any"))[2]["spec"]["address"] == "10.0.0.2"
    with pytest.raises(AllocationFailed, match="Exhausted IP Pools"):
        ipam.apply_claim(claim("other"))
    assert ipam.apply_claim(claim("edge"))[2]["spec"]["address"] == "10.0.0.3"
    assert ipam.apply_claim(claim("vip"))[2]["spec"]["address"] == "10.0.0.1"


def test_requested_address_annotation(ipam, store):
    ipam.apply_pool(pool(pools=[{"subnet": "10.0.0.0/29"}], preAllocations={"pre": "10.0.0.5"}))
    assert ipam.apply_claim(claim("a", ip="10.0.0.4"))[2]["spec"]["address"] == "10.0.0.4"
    with pytest.raises(AllocationFailed, match="^IPClaim ipam/b: Requested IP not available$"):
        ipam.apply_claim(claim("b", ip="10.0.0.4"))
    assert store.get("IPClaim", "b", NS)["status"]["errorMessage"] == "Requested IP not available"
    with pytest.raises(AllocationFailed, match="Requested IP not available"):  # reserved for "pre"
        ipam.apply_claim(claim("e", ip="10.0.0.5"))
    assert ipam.apply_claim(claim("pre", ip="10.0.0.5"))[2]["spec"]["address"] == "10.0.0.5"
    ipam.delete_claim("pre", NS)
    with pytest.raises(AllocationFailed, match="PreAllocation and requested ip address are conflicting"):
        ipam.apply_claim(claim("pre", ip="10.0.0.6"))
    with pytest.raises(AllocationFailed, match="Exhausted IP Pools"):  # outside every range, as upstream
        ipam.apply_claim(claim("c", ip="10.9.0.1"))
    with pytest.raises(Invalid) as err:
        ipam.apply_claim(claim("d", ip="10.0.0.300"))
    assert err.value.field == f"metadata.annotations[{names.IPADDRESS_ANNOTATION}]"


def test_exhaustion_is_retried_and_succeeds_once_freed(ipam, store):
    ipam.apply_pool(pool(pools=[{"start": "10.0.0.1", "end": "10.0.0.2"}]))
    ipam.apply_claim(claim("a"))
    ipam.apply_claim(claim("b"))
    with pytest.raises(AllocationFailed) as err:
        ipam.apply_claim(claim("c"))
    assert err.value.message == "Exhausted IP Pools"
    assert store.get("IPClaim", "c", NS)["status"] == {"errorMessage": "Exhausted IP Pools"}
    assert ipam.delete_claim("a", NS)
    assert NotFound is not None and [o["spec"]["address"] for o in store.list(kinds.M3_IPADDRESS, NS)] == ["10.0.0.2"]
    _, c, addr = ipam.apply_claim(claim("c"))
    assert addr["spec"]["address"] == "10.0.0.1"
    assert c["status"] == {"address": {"name": "pfx-10-0-0-1", "namespace": NS}}


def test_release_waits_for_other_finalizers(ipam, store):
    ipam.apply_pool(pool(pools=[{"subnet": "10.0.0.0/30"}]))
    c = store.create(
        meta.new(
            "IPClaim",
            "held",
            NS,
            spec={"pool": {"name": "p", "namespace": NS}},
            finalizers=["metal3data.infrastructure.cluster.x-k8s.io"],
        )
    )
    ipam.allocate(c)
    ipam.delete_claim("held", NS)
    assert len(store.list(kinds.M3_IPADDRESS, NS)) == 1  # still in use by its owner
    held = store.get("IPClaim", "held", NS)
    meta.remove_finalizer(held, "metal3data.infrastructure.cluster.x-k8s.io")
    store.update(held)
    ipam.delete_claim("held", NS)
    assert store.list(kinds.M3_IPADDRESS, NS) == [] and store.list("IPClaim", NS) == []


def test_random_strategy(ipam, store):
    ipam.apply_pool(pool(allocationStrategy="random", pools=[{"subnet": "10.0.0.0/27"}, {"subnet": "10.0.1.0/30"}]))
    got = [ipam.apply_claim(claim(f"c{i}"))[2]["spec"]["address"] for i in range(34)]
    assert len(set(got)) == 34
    first = {f"10.0.0.{i}" for i in range(1, 32)}
    assert set(got[:31]) == first  # range by range
    assert got[:10] != sorted(got[:10], key=lambda a: int(a.split(".")[-1]))  # not sequential
    with pytest.raises(AllocationFailed, match="Exhausted IP Pools"):
        ipam.apply_claim(claim("last"))


def test_sequential_reuses_the_lowest_freed_address(ipam, store):
    ipam.apply_pool(pool(pools=[{"subnet": "10.0.0.0/28"}]))
    for i in range(6):
        ipam.apply_claim(claim(f"c{i}"))
    ipam.delete_claim("c1", NS)
    ipam.delete_claim("c4", NS)
    assert ipam.apply_claim(claim("n1"))[2]["spec"]["address"] == "10.0.0.2"
    assert ipam.apply_claim(claim("n2"))[2]["spec"]["address"] == "10.0.0.5"
    assert ipam.apply_claim(claim("n3"))[2]["spec"]["address"] == "10.0.0.7"


def test_an_interrupted_allocation_is_adopted(ipam, store):
    """An IPAddress made for the claim whose status was never written (crash) is taken back, not leaked."""
    _, p = ipam.apply_pool(pool(pools=[{"subnet": "10.0.0.0/29"}]))
    c = store.create(claim("c"))
    r = ipaddr.Ranges(p["spec"]).ranges[0]
    assert ipam._try_create(p, c, "10.0.0.1", r) is not None  # the first half of an allocation
    _, c, addr = ipam.apply_claim(claim("c"))
    assert addr["spec"]["address"] == "10.0.0.1" and len(store.list(kinds.M3_IPADDRESS, NS)) == 1


def test_unknown_pool_and_claim_webhook(ipam, store):
    with pytest.raises(Invalid) as err:
        ipam.apply_claim(claim("c", pool_name="nope"))
    assert (err.value.obj, err.value.field) == (f"IPClaim {NS}/c", "spec.pool.name")
    assert 'pool "nope" not found' in str(err.value)
    assert store.list("IPClaim", NS) == []
    ipam.apply_pool(pool(pools=[{"subnet": "10.0.0.0/29"}]))
    ipam.apply_pool(pool("q", pools=[{"subnet": "10.0.1.0/29"}]))
    ipam.apply_claim(claim("c"))
    with pytest.raises(Invalid, match="cannot be modified") as err:
        ipam.apply_claim(claim("c", pool_name="q"))
    assert err.value.field == "spec.pool.name"


def test_check_mode_peeks_without_writing(ipam, store):
    ipam.apply_pool(pool(pools=[{"subnet": "10.0.0.0/29"}], preAllocations={"x": "10.0.0.1"}))
    before = store.list(kinds.M3_IPADDRESS, NS)
    changed, _, addr = ipam.apply_claim(claim("c"), check=True)
    assert changed and addr["spec"]["address"] == "10.0.0.2"
    assert store.list("IPClaim", NS) == [] and store.list(kinds.M3_IPADDRESS, NS) == before


def test_pool_info_and_delete(ipam, store):
    ipam.apply_pool(pool(pools=[{"subnet": "10.0.0.0/29"}], preAllocations={"x": "10.0.0.7"}))
    ipam.apply_claim(claim("a"))
    info = ipam.pool_info(store.get("IPPool", "p", NS))
    assert info == {"allocations": {"a": "10.0.0.1"}, "capacity": 7, "allocated": 1, "free": 5}
    with pytest.raises(Invalid, match="still allocated") as err:
        ipam.delete_pool("p", NS)
    assert err.value.field == "status.indexes"
    ipam.delete_claim("a", NS)
    assert ipam.delete_pool("p", NS)
    assert store.list("IPPool", NS) == [] and store.list("ConfigMap", NS) == []


def test_preallocation_webhook_bounds_are_upstreams(ipam, store):
    # isAddressInBonds accepts a subnet's network address, which GetIPAddress never renders:
    # the pool is accepted and the claim fails as upstream's does.
    ipam.apply_pool(pool(pools=[{"subnet": "10.0.0.0/29"}], preAllocations={"c": "10.0.0.0"}))
    with pytest.raises(AllocationFailed, match="^IPClaim ipam/c: Pre-allocated IP out of bond$"):
        ipam.apply_claim(claim("c"))
