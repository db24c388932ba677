"""The sequential pool's cursor: the first free address without scanning the allocations."""

from __future__ import annotations

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.metal3 import ipaddr, ipam_cursor
from ansible_collections.baremetal.capi.plugins.module_utils.metal3.ipam import IPAM
from ansible_collections.baremetal.capi.plugins.module_utils.model import kinds, meta
from ansible_collections.baremetal.capi.plugins.module_utils.store.sqlite import SqliteStore

NS = "c"


class CountingStore(SqliteStore):
    """A real sqlite store that counts the IPAddress names looked at (probes)."""

    probes = 0

    def get(self, kind, name, namespace=None):
        if kind == kinds.M3_IPADDRESS:
            CountingStore.probes += 1
        return super().get(kind, name, namespace)


@pytest.mark.parametrize(
    "ops,expected",
    [
        ([("add", 5)], "5"),
        ([("add", 5), ("add", 6), ("add", 4)], "4-6"),
        ([("add", 1), ("add", 3)], "1,3"),
        ([("add", 1), ("add", 3), ("add", 2)], "1-3"),
        ([("add", 1), ("add", 2), ("add", 3), ("remove", 2)], "1,3"),
        ([("add", 1), ("remove", 1)], ""),
    ],
)
def test_free_intervals(ops, expected):
    free = []
    for op, idx in ops:
        free = ipam_cursor._add(free, idx) if op == "add" else ipam_cursor._remove(free, idx)
    assert ipam_cursor._format_free(free) == expected
    assert ipam_cursor._parse_free(expected) == free


def test_ranges_at_skips_empty_entries():
    ranges = ipaddr.Ranges(
        {
            "pools": [
                {"start": "10.0.0.1", "end": "10.0.0.2"},
                {"start": "10.9.0.1", "subnet": "10.0.0.0/24"},
                {"subnet": "10.1.0.0/30"},
            ]
        }
    )
    assert [ranges.at(i)[0] for i in range(5)] == ["10.0.0.1", "10.0.0.2", "10.1.0.1", "10.1.0.2", "10.1.0.3"]
    assert ranges.at(5) is None


def test_probes_do_not_grow_with_allocations(tmp_path):
    store = CountingStore(str(tmp_path / "s.db"))
    ipam = IPAM(store)
    ipam.apply_pool(meta.new("IPPool", "p", NS, spec={"namePrefix": "p", "pools": [{"subnet": "10.0.0.0/22"}]}))

    def claim(name):
        CountingStore.probes = 0
        _, _, addr = ipam.apply_claim(meta.new("IPClaim", name, NS, spec={"pool": {"name": "p"}}))
        return addr["spec"]["address"], CountingStore.probes

    first = [claim(f"c{i}") for i in range(300)]
    assert [a for a, _ in first] == [f"10.0.{i // 256}.{i % 256}" for i in range(1, 301)]
    assert max(p for _, p in first[5:]) == min(p for _, p in first[5:])  # the same few probes at 5 and at 300
    steady = first[-1][1]
    # release two low addresses: they are handed out again first, then the next after the highest
    ipam.delete_claim("c3", NS)
    ipam.delete_claim("c10", NS)
    assert claim("n1") == (first[3][0], steady)
    assert claim("n2") == (first[10][0], steady)
    address, probes = claim("n3")
    assert address == "10.0.1.45" and probes == steady  # no walk over the 300 taken addresses
    # a stale cursor (someone deleted an IPAddress behind its back) only costs probes, never a wrong answer
    store.delete("ConfigMap", "p-ipam-cursor", NS)
    address, probes = claim("n4")
    assert address == "10.0.1.46" and probes > 300
    assert len({o["spec"]["address"] for o in store.list(kinds.M3_IPADDRESS, NS)}) == 302
