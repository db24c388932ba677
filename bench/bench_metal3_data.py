"""Benchmarks of the Metal3 data flow and the IP address manager (make bench; numbers, not tests).

1. Render throughput with the upstream example template (3 pools): the pure
   render (metaData + networkData + YAML), and the whole Metal3Data flow on the
   sqlite store (claim, index, Metal3Data, 3 IP claims, 2 Secrets).
2. Allocation cost on the sqlite store with a /16 pool filled to 1 %, 50 % and
   99 %: the time and the number of IPAddress names probed per claim.  The fill
   is the IPAddress objects (and cursor) the allocator leaves behind, written
   directly to save minutes; the measured claims go through IPAM.apply_claim.

Usage: python bench/bench_metal3_data.py [--machines N] [--claims N] [--quick]
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
_COLL = REPO / "build" / "ansible_collections" / "baremetal" / "capi"
if not _COLL.exists():
    _COLL.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.symlink(REPO, _COLL)
    except FileExistsError:
        pass
sys.path[:0] = [str(REPO / "build"), str(REPO / "tests" / "unit" / "metal3")]

import yaml  # noqa: E402

from ansible_collections.baremetal.capi.plugins.module_utils.metal3 import ipaddr, render  # noqa: E402
from ansible_collections.baremetal.capi.plugins.module_utils.metal3.data import DataManager  # noqa: E402
from ansible_collections.baremetal.capi.plugins.module_utils.metal3.ipam import IPAM  # noqa: E402
from ansible_collections.baremetal.capi.plugins.module_utils.metal3.ipam_cursor import Cursor  # noqa: E402
from ansible_collections.baremetal.capi.plugins.module_utils.model import convert, kinds, meta, names  # noqa: E402
from ansible_collections.baremetal.capi.plugins.module_utils.store.sqlite import SqliteStore  # noqa: E402

EXAMPLES = REPO / "tests" / "unit" / "metal3" / "examples"
NS = "bench"


class CountingStore(SqliteStore):
    probes = 0

    def get(self, kind, name, namespace=None):
        if kind == kinds.M3_IPADDRESS:
            CountingStore.probes += 1
        return super().get(kind, name, namespace)


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def bench_pure_render(seconds: float) -> None:
    template = convert.to_current(next(yaml.safe_load_all((EXAMPLES / "metal3datatemplate.example.yaml").read_text())))
    m3m = {"metadata": {"name": "m", "namespace": "metal3"}}
    machine = {"metadata": {"name": "mach", "namespace": "metal3", "annotations": {"example.com/site": "s"}}}
    bmh = {
        "metadata": {
            "name": "h",
            "namespace": "metal3",
            "labels": {"example.com/rack": "r"},
            "annotations": {"example.com/ext-mac": "52:54:00:aa:bb:04"},
        },
        "spec": {"bootMACAddress": "52:54:00:aa:bb:01"},
        "status": {
            "hardware": {
                "nics": [{"name": "enp1s0", "mac": "52:54:00:aa:bb:01"}, {"name": "enp2s0", "mac": "52:54:00:aa:bb:02"}]
            }
        },
    }
    pools = {
        "provisioning-pool": {"address": "172.22.0.50", "prefix": 24, "gateway": "172.22.0.1", "dnsServers": []},
        "baremetalv4-pool": {
            "address": "192.168.111.20",
            "prefix": 24,
            "gateway": "192.168.111.1",
            "dnsServers": ["8.8.8.8"],
        },
        "baremetalv6-pool": {
            "address": "2001:db8:0:1::20",
            "prefix": 64,
            "gateway": "2001:db8:0:1::1",
            "dnsServers": [],
        },
    }
    data = {"metadata": {"name": "t-3", "namespace": "metal3"}, "spec": {"index": 3}}
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        ctx = render.RenderContext(template, data, m3m, machine, bmh, pools)
        render.to_yaml(render.render_meta_data(ctx))
        render.to_yaml(render.render_network_data(ctx))
        n += 1
    elapsed = time.perf_counter() - start
    print(f"render (metaData + networkData + YAML, 3 pools, pure): {n / elapsed:,.0f} renders/s")


def bench_flow(machines: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStore(os.path.join(tmp, "state.db"))
        dm = DataManager(store)
        docs = list(yaml.safe_load_all((EXAMPLES / "metal3datatemplate.example.yaml").read_text()))
        template, pools = copy.deepcopy(docs[0]), copy.deepcopy(docs[1:])
        template["metadata"]["namespace"] = NS
        for pool, subnet in zip(pools, ("172.22.0.0/20", "192.168.96.0/20", "2001:db8:0:1::/116"), strict=True):
            pool["metadata"]["namespace"] = NS
            pool["spec"]["pools"] = [{"subnet": subnet}]
            dm.ipam.apply_pool(pool)
        dm.apply_template(template)
        nics = [{"name": "enp1s0", "mac": "52:54:00:aa:bb:01"}, {"name": "enp2s0", "mac": "52:54:00:aa:bb:02"}]
        for i in range(machines):  # the objects the flow reads (not timed)
            mach = store.create(meta.new("Machine", f"mach-{i}", NS, spec={"clusterName": "test1"}))
            host = store.create(
                meta.new(
                    "BareMetalHost",
                    f"host-{i}",
                    NS,
                    spec={"bootMACAddress": nics[0]["mac"]},
                    annotations={"example.com/ext-mac": "52:54:00:aa:bb:04"},
                )
            )
            host["status"] = {"hardware": {"nics": nics}}
            store.update_status(host)
            m3m = meta.new(
                "Metal3Machine",
                f"m3m-{i}",
                NS,
                spec={"dataTemplate": {"name": "nodepool-1"}},
                annotations={names.HOST_ANNOTATION: f"{NS}/host-{i}"},
            )
            m3m["metadata"]["ownerReferences"] = [meta.owner_reference(mach, controller=True)]
            store.create(m3m)
        times = []
        start = time.perf_counter()
        for i in range(machines):
            t0 = time.perf_counter()
            result = dm.reconcile(f"m3m-{i}", NS)
            times.append(time.perf_counter() - t0)
            assert result["index"] == i
        elapsed = time.perf_counter() - start
        print(
            f"Metal3Data flow on sqlite (claim, index, Metal3Data, 3 IP claims, 2 Secrets), {machines} machines: "
            f"{machines / elapsed:,.1f} Metal3Data/s; per machine p50 {statistics.median(times) * 1000:.1f} ms, "
            f"p95 {pct(times, 0.95) * 1000:.1f} ms, first 10 {statistics.mean(times[:10]) * 1000:.1f} ms, "
            f"last 10 {statistics.mean(times[-10:]) * 1000:.1f} ms"
        )
        store.close()


def fill_pool(store, pool, ranges, filled: int, target: int) -> None:
    """The IPAddress objects (and cursor) the allocator leaves behind up to ``target``, written directly."""
    for idx, ip, _ in ranges.iterate(filled):
        if idx >= target:
            break
        obj = meta.new(
            kinds.M3_IPADDRESS,
            ipaddr.address_name("big", ip),
            NS,
            spec={
                "address": ip,
                "prefix": 16,
                "gateway": "10.0.0.1",
                "pool": {"name": "big", "namespace": NS},
                "claim": {"name": f"fill-{idx}", "namespace": NS},
            },
            finalizers=[names.IPADDRESS_FINALIZER],
        )
        obj["metadata"]["ownerReferences"] = [meta.owner_reference(pool)]
        store.create(obj)
    cursor = Cursor(store, pool, ranges)
    state, seen = cursor.read()
    cursor.taken(dict(state, high=0, free=[]), seen, target - 1, [])


def allocation_levels(store, claims: int, subnet: str = "10.0.0.0/16", levels=(0.01, 0.50, 0.99), report=None):
    """{level: (wall seconds per claim, CPU seconds per claim, probes per claim)} of IPAM.apply_claim on a pool
    filled to each level (the claims given back after each level); ``report(level, filled, last address, fill
    seconds, wall times, probes)`` after each level."""
    ipam = IPAM(store)
    _, pool = ipam.apply_pool(
        meta.new(
            "IPPool",
            "big",
            NS,
            spec={"namePrefix": "big", "prefix": 16, "gateway": "10.0.0.1", "pools": [{"subnet": subnet}]},
        )
    )
    ranges = ipaddr.Ranges(pool["spec"])
    filled, out = 0, {}
    for level in levels:
        target = int(ranges.total * level)
        t0 = time.perf_counter()
        fill_pool(store, pool, ranges, filled, target)
        filled = target
        fill_s = time.perf_counter() - t0
        times, cpu, probes = [], [], []
        warmup = 10 if ranges.total > 10000 else 2  # the first claims after a fill pay for cold caches: not counted
        for i in range(warmup + claims):
            claim = meta.new("IPClaim", f"m-{level}-{i}", NS, spec={"pool": {"name": "big"}})
            CountingStore.probes = 0
            t1, c1 = time.perf_counter(), time.process_time()
            _, _, addr = ipam.apply_claim(claim)
            if i >= warmup:
                times.append(time.perf_counter() - t1)
                cpu.append(time.process_time() - c1)
                probes.append(CountingStore.probes)
        # the allocation order is ip-address-manager's: the lowest free address, so the next one after the fill
        assert addr["spec"]["address"] == ranges.at(filled + warmup + claims - 1)[0]
        out[level] = (times, cpu, probes)
        if report:
            report(level, filled, addr, fill_s, times, probes)
        for i in range(warmup + claims):  # give them back: the pool is at the level again
            ipam.delete_claim(f"m-{level}-{i}", NS)
    return out, ipam, pool, ranges, filled


def bench_allocation(claims: int, subnet: str = "10.0.0.0/16", levels=(0.01, 0.50, 0.99)) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = CountingStore(os.path.join(tmp, "state.db"))
        print(f"allocation on sqlite, {subnet} pool, {claims} claims per level:")

        def report(level, filled, addr, fill_s, times, probes):
            print(
                f"  {level * 100:4.0f}% filled ({filled:6d} taken): "
                f"per claim mean {statistics.mean(times) * 1000:.2f} ms,"
                f" p50 {statistics.median(times) * 1000:.2f} ms, p95 {pct(times, 0.95) * 1000:.2f} ms,"
                f" probes {statistics.mean(probes):.1f}; last address {addr['spec']['address']}"
                f" (fill {fill_s:.0f} s)"
            )

        _results, ipam, pool, ranges, filled = allocation_levels(store, claims, subnet, levels, report=report)
        # churn at 99 %: release scattered addresses, then claim them back (the free list, no walk)
        victims = list(range(0, filled, max(1, filled // claims)))[:claims]
        for idx in victims:
            ip = ranges.at(idx)[0]
            store.delete(kinds.M3_IPADDRESS, ipaddr.address_name("big", ip), NS)  # finalizer set: marks deleting
            obj = store.get(kinds.M3_IPADDRESS, ipaddr.address_name("big", ip), NS)
            meta.remove_finalizer(obj, names.IPADDRESS_FINALIZER)
            store.update(obj)
            Cursor(store, pool, ranges).released(idx)
        times, probes = [], []
        for i in range(len(victims)):
            CountingStore.probes = 0
            t1 = time.perf_counter()
            _, _, addr = ipam.apply_claim(meta.new("IPClaim", f"churn-{i}", NS, spec={"pool": {"name": "big"}}))
            times.append(time.perf_counter() - t1)
            probes.append(CountingStore.probes)
            assert addr["spec"]["address"] == ranges.at(victims[i])[0]
        print(
            f"  99% filled, {len(victims)} scattered addresses released and claimed back: per claim mean "
            f"{statistics.mean(times) * 1000:.2f} ms, p95 {pct(times, 0.95) * 1000:.2f} ms, "
            f"probes {statistics.mean(probes):.1f}"
        )
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--machines", type=int, default=200)
    parser.add_argument("--claims", type=int, default=200)
    parser.add_argument("--quick", action="store_true", help="a /22 instead of a /16, fewer machines")
    args = parser.parse_args()
    bench_pure_render(2.0)
    bench_flow(args.machines if not args.quick else 30)
    bench_allocation(args.claims if not args.quick else 5, "10.0.0.0/16" if not args.quick else "10.0.0.0/22")


if __name__ == "__main__":
    main()
