"""Pool entry arithmetic and the IPPool webhook, written from ip-address-manager's rules
(api/v1alpha1/utils.go GetIPAddress / ValidatePool / GetPoolSize, the IPPool webhook)."""

from __future__ import annotations

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.metal3 import ipaddr
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta


def rendered(entry, limit=5):
    r = ipaddr.Range(entry)
    return [r.at(i) for i in range(min(r.size, limit))], r.size


@pytest.mark.parametrize(
    "entry,first,size",
    [
        # subnet alone: the address as written, plus one; broadcast included; network excluded
        ({"subnet": "192.168.1.0/24"}, ["192.168.1.1", "192.168.1.2"], 255),
        ({"subnet": "192.168.1.10/24"}, ["192.168.1.11", "192.168.1.12"], 245),  # host bits set
        ({"subnet": "192.168.1.255/24"}, [], 0),  # written as the broadcast: nothing after it
        ({"subnet": "10.0.0.0/31"}, ["10.0.0.1"], 1),
        ({"subnet": "10.0.0.7/32"}, [], 0),
        ({"subnet": "2001:db8::/126"}, ["2001:db8::1", "2001:db8::2", "2001:db8::3"], 3),
        ({"subnet": "2001:db8::1a/124"}, ["2001:db8::1b"], 5),  # IPv6 host bits: ::1b .. ::1f
        # start and end
        ({"start": "10.0.0.10", "end": "10.0.0.11"}, ["10.0.0.10", "10.0.0.11"], 2),
        ({"start": "10.0.0.10", "end": "10.0.0.10"}, ["10.0.0.10"], 1),
        ({"start": "fd00::fffe", "end": "fd00::1:0"}, ["fd00::fffe", "fd00::ffff", "fd00::1:0"], 3),
        # start with a subnet: from start to the subnet's last address, even with host bits in the subnet
        ({"start": "10.0.0.253", "subnet": "10.0.0.77/24"}, ["10.0.0.253", "10.0.0.254", "10.0.0.255"], 3),
        ({"start": "10.0.0.9", "end": "10.0.1.200", "subnet": "10.0.0.0/24"}, ["10.0.0.9"], 247),
        ({"start": "10.0.0.9", "end": "10.0.0.10", "subnet": "10.0.0.0/24"}, ["10.0.0.9", "10.0.0.10"], 2),
        ({"start": "10.0.1.9", "subnet": "10.0.0.0/24"}, [], 0),  # start outside its subnet
        ({"start": "fd00::1:fffe", "subnet": "fd00::1:0/112"}, ["fd00::1:fffe", "fd00::1:ffff"], 2),
        # start alone runs to the end of the address space
        ({"start": "255.255.255.254"}, ["255.255.255.254", "255.255.255.255"], 2),
        # end alone or nothing: "either Start or Subnet is required for ipAddress"
        ({"end": "10.0.0.5"}, [], 0),
        ({"prefix": 24, "gateway": "10.0.0.1"}, [], 0),
    ],
)
def test_get_ip_address_ranges(entry, first, size):
    got, n = rendered(entry)
    assert n == size
    assert got[: len(first)] == first and len(got) == min(size, 5)


def test_gateway_and_dns_are_not_excluded():
    r = ipaddr.Range({"subnet": "10.0.0.0/30", "gateway": "10.0.0.1", "dnsServers": ["10.0.0.2"]})
    assert [r.at(i) for i in range(r.size)] == ["10.0.0.1", "10.0.0.2", "10.0.0.3"]


def test_ipv4_mapped_text_is_read_as_ipv4():
    # net.ParseIP("::ffff:10.0.0.1") is the IPv4 address, written back as 10.0.0.1
    assert ipaddr.normalize("::ffff:10.0.0.1") == "10.0.0.1"
    r = ipaddr.Range({"start": "::ffff:10.0.0.1", "end": "10.0.0.2"})
    assert (r.size, r.at(0)) == (2, "10.0.0.1")


@pytest.mark.parametrize(
    "entry,size",
    [
        ({"start": "10.0.0.1", "end": "10.0.0.10"}, 10),
        ({"start": "10.0.0.250", "subnet": "10.0.0.0/24"}, 6),
        ({"subnet": "10.0.0.0/24"}, 255),
        ({"subnet": "10.0.0.10/24"}, 255),  # counted from the network address, whatever the host bits
        ({"subnet": "fd00::/65"}, (1 << 63) - 1),
    ],
)
def test_pool_size(entry, size):
    assert ipaddr.pool_size(entry) == size


@pytest.mark.parametrize(
    "entry,message",
    [
        ({"start": "10.0.0.1"}, "pool with Start requires End or Subnet to determine size"),
        ({"end": "10.0.0.1"}, "either Start or Subnet is required for ipAddress"),
        ({"subnet": "fd00::/64"}, "pool size exceeds int range"),
        ({"start": "10.0.0.9", "end": "10.0.0.1"}, "end IP 10.0.0.1 is before start IP 10.0.0.9"),
    ],
)
def test_pool_size_refusals(entry, message):
    with pytest.raises(ValueError) as exc:
        ipaddr.pool_size(entry)
    assert str(exc.value) == message


# -- the IPPool webhook, upstream's words ------------------------------------------------------


def pool(spec, status=None):
    obj = meta.new("IPPool", "p", "ns", spec={"namePrefix": "pfx", **spec})
    if status:
        obj["status"] = status
    return obj


def refused(spec, old=None):
    with pytest.raises(Invalid) as exc:
        ipaddr.validate_pool(pool(spec), old)
    return exc.value.field, exc.value.message


@pytest.mark.parametrize(
    "spec,field,message",
    [
        ({"pools": [{"start": "10.0.0.300"}]}, "spec.pools[0]", 'Invalid value: "": invalid Start IP "10.0.0.300"'),
        ({"pools": [{"start": "10.0.0.1", "end": "x"}]}, "spec.pools[0]", 'Invalid value: "": invalid End IP "x"'),
        (
            {"pools": [{"subnet": "10.0.0.0/33"}]},
            "spec.pools[0]",
            'Invalid value: "": invalid Subnet "10.0.0.0/33": invalid CIDR address: 10.0.0.0/33',
        ),
        (
            {"pools": [{"start": "fd00::9", "end": "fd00::1"}]},
            "spec.pools[0]",
            'Invalid value: "": end IP fd00::1 is before start IP fd00::9',
        ),
        ({"gateway": "gw", "pools": []}, "spec.gateway", 'Invalid value: "gw": is not a valid IP address'),
        ({"dnsServers": ["1.1.1.1", "d"]}, "spec.dnsServers[1]", 'Invalid value: "d": is not a valid IP address'),
        (
            {"pools": [{"subnet": "10.0.0.0/24", "gateway": "10.0.0.256"}]},
            "spec.pools[0].gateway",
            'Invalid value: "10.0.0.256": is not a valid IP address',
        ),
        (
            {"pools": [{"subnet": "10.0.0.0/24"}], "preAllocations": {"c": "ten"}},
            "spec.preAllocations.c",
            'Invalid value: "ten": is not a valid IP address',
        ),
        (
            {"pools": [{"subnet": "fd00::/120"}], "preAllocations": {"a": "fd00::5", "b": "fd00:0::0005"}},
            "spec.preAllocations.b",
            'Invalid value: "fd00:0::0005": IP address is already pre-allocated to claim "a"',
        ),
        (
            {"pools": [{"subnet": "10.0.0.0/24"}], "preAllocations": {"c": "10.0.1.1"}},
            "spec.preAllocations",
            'Invalid value: "10.0.1.1": is out of bonds of the pools given',
        ),
        (
            {"allocationStrategy": "random", "pools": [{"start": "10.0.0.1"}]},
            "spec.pools[0]",
            'Invalid value: "": cannot be used with allocationStrategy "random": '
            "pool with Start requires End or Subnet to determine size",
        ),
        (
            {"allocationStrategy": "random", "pools": [{"subnet": "fd00::/48"}]},
            "spec.pools[0]",
            'Invalid value: "": cannot be used with allocationStrategy "random": pool size exceeds int range',
        ),
    ],
)
def test_pool_webhook_messages(spec, field, message):
    assert refused(spec) == (field, message)


@pytest.mark.parametrize(
    "spec",
    [
        {},  # no pools: upstream's webhook does not require any
        {"pools": [{"prefix": 24}]},  # an entry without start, end or subnet (sequential)
        {"pools": [{"end": "10.0.0.5"}]},
        {"pools": [{"start": "10.0.0.1"}]},  # unbounded: fine for sequential
        {"gateway": "", "pools": [{"subnet": "10.0.0.0/24"}]},  # empty strings pass validateIPAddress
        # isAddressInBonds: a subnet's network address and a host-bits subnet's lower addresses are "in bonds"
        {"pools": [{"subnet": "10.0.0.10/24"}], "preAllocations": {"c": "10.0.0.0"}},
        {"pools": [{"start": "10.0.0.1", "end": "fd00::1"}]},  # upstream compares the 16-byte forms
        {"allocationStrategy": "random", "pools": [{"subnet": "fd00::/65"}]},
    ],
)
def test_pool_webhook_accepts(spec):
    ipaddr.validate_pool(pool(spec))


def test_pool_update_rules_upstream_words():
    old = pool({"pools": [{"start": "10.0.0.1", "end": "10.0.0.9"}]}, status={"indexes": {"c1": "10.0.0.5"}})
    with pytest.raises(Invalid) as exc:
        ipaddr.validate_pool(pool({"namePrefix": "new", "pools": old["spec"]["pools"]}), old)
    assert (exc.value.field, exc.value.message) == ("spec.namePrefix", 'Invalid value: "new": cannot be modified')
    # an empty strategy is sequential on both sides
    ipaddr.validate_pool(pool({"allocationStrategy": "sequential", "pools": old["spec"]["pools"]}), old)
    assert refused({"allocationStrategy": "random", "pools": old["spec"]["pools"]}, old) == (
        "spec.allocationStrategy",
        'Invalid value: "random": cannot be modified after creation',
    )
    # an address recorded in status.indexes must stay inside the new pools
    assert refused({"pools": [{"start": "10.0.0.6", "end": "10.0.0.9"}]}, old) == (
        "spec.pools",
        'Invalid value: "10.0.0.5": is in use but out of bonds of the pools given',
    )
    ipaddr.validate_pool(pool({"pools": [{"subnet": "10.0.0.0/28"}]}), old)


def test_in_bounds_skips_invalid_entries():
    spec = {"pools": [{"start": "bad", "end": "10.0.0.9"}, {"subnet": "nope"}, {"start": "fd00::1"}]}
    assert not ipaddr.in_bounds(spec, "10.0.0.5")
    assert ipaddr.in_bounds(spec, "fd00::2")
    # netip order: every IPv4 address sorts before every IPv6 address
    assert not ipaddr.in_bounds({"pools": [{"start": "fd00::1"}]}, "10.0.0.1")
    assert ipaddr.in_bounds({"pools": [{"end": "::1"}]}, "255.255.255.255")
