"""Time to choose (and claim) a BareMetalHost among many: 10,000 on sqlite, 2,000 on the kubernetes store.

Reports numbers only; nothing here is a test.  Hosts are spread over states as
a busy site would have them (a quarter available, the rest provisioned and
consumed, some errored / paused); the machine selects with a label selector
that half of the hosts match.

    python bench/bench_choose_host.py [--sqlite N] [--kubernetes N] [--rounds R]

The kubernetes store runs against the lab's kube-apiserver (``python -m lab up
kube``); it is skipped, saying so, when that is not running.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "build"), str(REPO)]
_COLL = REPO / "build" / "ansible_collections" / "baremetal" / "capi"
if not _COLL.exists():
    _COLL.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(REPO, _COLL)

from ansible_collections.baremetal.capi.plugins.module_utils.metal3 import choose  # noqa: E402
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta, names  # noqa: E402


def host(i: int, ns: str) -> tuple[dict, dict]:
    labels = {"rack": f"r{i % 20}", "pool": "gold" if i % 2 else "silver"}
    status = {"provisioning": {"state": "available"}, "poweredOn": False}
    spec = {"online": False, "bootMACAddress": f"52:54:00:{i >> 16 & 255:02x}:{i >> 8 & 255:02x}:{i & 255:02x}"}
    kind = i % 8
    if kind in (2, 3, 4, 5):
        status["provisioning"]["state"] = "provisioned"
        spec["consumerRef"] = {
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2",
            "kind": "Metal3Machine",
            "name": f"other-{i}",
            "namespace": ns,
        }
    elif kind == 6:
        status["errorMessage"] = "BMC unreachable"
    obj = meta.new("BareMetalHost", f"host-{i:05d}", ns, spec=spec, labels=labels)
    if kind == 7 and i % 16 == 7:
        obj["metadata"]["annotations"] = {names.BMH_PAUSED_ANNOTATION: ""}
    return obj, status


def populate(store, n: int, ns: str) -> float:
    t0 = time.perf_counter()
    for i in range(n):
        obj, status = host(i, ns)
        created = store.create(obj)
        created["status"] = status
        store.update_status(created)
    return time.perf_counter() - t0


def machine_objects(ns: str, name: str):
    m3m = meta.new(
        "Metal3Machine",
        name,
        ns,
        spec={
            "image": {"url": "http://x/i.qcow2", "checksum": "abc", "checksumType": "sha256"},
            "hostSelector": {"matchLabels": {"pool": "gold"}},
        },
    )
    machine = meta.new("Machine", name, ns, spec={"clusterName": "bench"})
    return m3m, machine


def measure(store, ns: str, rounds: int) -> dict:
    choose_t, claim_t = [], []
    for r in range(rounds):
        m3m, machine = machine_objects(ns, f"bench-{r}")
        t0 = time.perf_counter()
        found, _ = choose.choose_host(store, m3m, machine)
        choose_t.append(time.perf_counter() - t0)
        assert found is not None
        t0 = time.perf_counter()
        choose.claim(store, m3m, machine)
        claim_t.append(time.perf_counter() - t0)
    return {
        "choose_median_ms": round(statistics.median(choose_t) * 1000, 1),
        "choose_max_ms": round(max(choose_t) * 1000, 1),
        "claim_median_ms": round(statistics.median(claim_t) * 1000, 1),
    }


def bench_sqlite(n: int, rounds: int) -> None:
    from ansible_collections.baremetal.capi.plugins.module_utils.store.sqlite import SqliteStore

    with tempfile.TemporaryDirectory() as d:
        store = SqliteStore(os.path.join(d, "state.db"))
        load = populate(store, n, "bench")
        out = measure(store, "bench", rounds)
        store.close()
    print(f"sqlite     hosts={n:6d} load={load:7.1f}s " + " ".join(f"{k}={v}" for k, v in out.items()))


def bench_kubernetes(n: int, rounds: int) -> None:
    from lab import config
    from lab.services import kube

    cfg = config.load()
    if not kube.status(cfg).get("healthy"):
        print("kubernetes skipped: the lab's kube-apiserver is not running (python -m lab up kube)")
        return
    from ansible_collections.baremetal.capi.plugins.module_utils.store.base import open_store

    store = open_store({"kind": "kubernetes", "kubeconfig": str(cfg.root / "kubeconfig")})
    ns = f"bench-{uuid.uuid4().hex[:6]}"
    try:
        load = populate(store, n, ns)
        out = measure(store, ns, rounds)
    finally:
        try:
            kube.delete_namespace(kube.api_client(cfg), ns)
        except Exception as exc:  # the numbers are printed either way
            print(f"(could not delete namespace {ns}: {exc})")
        store.close()
    print(f"kubernetes hosts={n:6d} load={load:7.1f}s " + " ".join(f"{k}={v}" for k, v in out.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sqlite", type=int, default=10000)
    parser.add_argument("--kubernetes", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    if args.sqlite:
        bench_sqlite(args.sqlite, args.rounds)
    if args.kubernetes:
        bench_kubernetes(args.kubernetes, args.rounds)


if __name__ == "__main__":
    main()
