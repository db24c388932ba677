"""Allocate and deploy 30 MAAS machines through the collection, next to a plain python-libmaas script.

Both run against the lab's MAAS simulator (started when it is not running, and
stopped again afterwards), on machines seeded for the run with a tag of their
own, with the same transition timings:

- collection: the engine call of ``baremetal.capi.maas_machine`` - MaaSMachine
  objects in a sqlite store, ``MachineManager`` steps run concurrently by the
  runner (8 workers): allocate (providerID recorded in the store at once),
  swap_size=0, deploy with base64 user data, follow the state until Deployed;
- plain: the same MAAS calls from 8 threads with python-libmaas's bones session
  (allocate, update swap_size, deploy, read until Deployed), nothing recorded.

Reports numbers only; nothing here is a test.

    python bench/bench_maas.py [--machines 30] [--deploy-seconds 3] [--workers 8] [--poll 2]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "build"), str(REPO)]
_COLL = REPO / "build" / "ansible_collections" / "baremetal" / "capi"
if not _COLL.exists():
    _COLL.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(REPO, _COLL)

from ansible_collections.baremetal.capi.plugins.module_utils import runner  # noqa: E402
from ansible_collections.baremetal.capi.plugins.module_utils.errors import Requeue  # noqa: E402
from ansible_collections.baremetal.capi.plugins.module_utils.maas import client as maas_client  # noqa: E402
from ansible_collections.baremetal.capi.plugins.module_utils.maas import cluster as maas_cluster  # noqa: E402
from ansible_collections.baremetal.capi.plugins.module_utils.maas import machine as maas_machine  # noqa: E402
from ansible_collections.baremetal.capi.plugins.module_utils.store.sqlite import SqliteStore  # noqa: E402

USER_DATA = "#cloud-config\nruncmd:\n  - echo benchmark\n"
INFRA = "infrastructure.cluster.x-k8s.io"


def seed(control: str, n: int, tag: str) -> list[dict]:
    machines = [{"hostname": f"b-{uuid.uuid4().hex[:8]}", "tags": [tag], "cpu_count": 4, "memory": 8192}] * n
    machines = [dict(m, hostname=f"b-{uuid.uuid4().hex[:8]}") for m in machines]
    resp = requests.post(control + "machines", json={"machines": machines}, timeout=30)
    resp.raise_for_status()
    return resp.json()


def remove(control: str, tag: str) -> None:
    for m in requests.get(control + "machines", timeout=30).json():
        if tag in m["tags"]:
            requests.delete(control + f"machines/{m['system_id']}", timeout=30)


def collection_objects(store, n: int, tag: str) -> list[tuple[str, str]]:
    ns, cname = "bench", "bench"
    store.create(
        {
            "apiVersion": "cluster.x-k8s.io/v1beta2",
            "kind": "Cluster",
            "metadata": {"name": cname, "namespace": ns},
            "spec": {"infrastructureRef": {"apiGroup": INFRA, "kind": "MaasCluster", "name": cname}},
        }
    )
    store.create(
        {
            "apiVersion": f"{INFRA}/v1beta1",
            "kind": "MaasCluster",
            "metadata": {"name": cname, "namespace": ns},
            "spec": {"dnsDomain": "maas"},
        }
    )
    value = base64.b64encode(USER_DATA.encode()).decode()
    keys = []
    for i in range(n):
        name = f"w-{i:02d}"
        store.create(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": f"{name}-bootstrap", "namespace": ns},
                "data": {"value": value},
            }
        )
        store.create(
            {
                "apiVersion": "cluster.x-k8s.io/v1beta2",
                "kind": "Machine",
                "metadata": {"name": name, "namespace": ns, "labels": {"cluster.x-k8s.io/cluster-name": cname}},
                "spec": {
                    "clusterName": cname,
                    "bootstrap": {"dataSecretName": f"{name}-bootstrap"},
                    "infrastructureRef": {"apiGroup": INFRA, "kind": "MaasMachine", "name": name},
                },
            }
        )
        store.create(
            {
                "apiVersion": f"{INFRA}/v1beta1",
                "kind": "MaasMachine",
                "metadata": {"name": name, "namespace": ns},
                "spec": {"image": "ubuntu/jammy", "minCPU": 2, "minMemory": 4096, "tags": [tag]},
            }
        )
        keys.append((ns, name))
    return keys


def run_collection(url: str, key: str, n: int, tag: str, workers: int, poll: float) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStore(str(Path(tmp) / "state.db"))
        keys = collection_objects(store, n, tag)
        client = maas_client.Client(url, key)
        t0 = time.perf_counter()
        maas_cluster.ClusterManager(store, client).step("bench", "bench")
        mgr = maas_machine.MachineManager(store, client)

        def step(k):
            try:
                s = mgr.step(k[1], k[0])
            except Requeue as exc:
                s = runner.Step(message=exc.message, requeue_after=exc.after)
            # done at Deployed: there is no workload cluster here for the Node step that follows
            mm = store.get("MaasMachine", k[1], k[0])
            if (mm.get("status") or {}).get("ready"):
                return runner.Step(done=True, changed=True, message="Deployed")
            return s

        try:
            results = runner.run(keys, step, key=lambda k: k[1], workers=workers, poll=poll, timeout=600)
        except Exception:
            store.close()
            raise
        elapsed = time.perf_counter() - t0
        failed = [r for r in results if not r.done]
        store.close()
    return {"seconds": elapsed, "calls": client.calls, "not_done": len(failed)}


def run_plain(url: str, key: str, n: int, tag: str, workers: int, poll: float) -> dict:
    from maas.client.bones import SessionAPI
    from maas.client.bones.helpers import api_url
    from maas.client.utils.creds import Credentials

    asyncio.set_event_loop(asyncio.new_event_loop())
    session = SessionAPI.fromURL(api_url(url), credentials=Credentials(*key.split(":")))
    calls = [1]
    lock = threading.Lock()
    user_data = base64.b64encode(USER_DATA.encode()).decode()

    def count():
        with lock:
            calls[0] += 1

    def one(_i):
        asyncio.set_event_loop(asyncio.new_event_loop())  # python-libmaas needs a loop per thread
        m = session.Machines.allocate(cpu_count="2", mem="4096", tags=[tag])
        count()
        sid = m["system_id"]
        session.Machine.update(system_id=sid, swap_size="0")
        count()
        session.Machine.deploy(system_id=sid, user_data=user_data, osystem="ubuntu", distro_series="jammy")
        count()
        while True:
            m = session.Machine.read(system_id=sid)
            count()
            if m["status_name"] == "Deployed":
                return sid
            time.sleep(poll)

    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        done = list(pool.map(one, range(n)))
    return {"seconds": time.perf_counter() - t0, "calls": calls[0], "not_done": n - len(done)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--machines", type=int, default=30)
    ap.add_argument("--deploy-seconds", type=float, default=3.0)
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--poll", type=float, default=2.0)
    args = ap.parse_args()

    from lab import config
    from lab.services import maas

    cfg = config.load()
    started = False
    if not maas.status(cfg).get("healthy"):
        maas.up(cfg)
        started = True
    info = maas.status(cfg)
    url, key, control = info["url"], info["api_key"], info["control_url"]
    timings = requests.get(control + "timings", timeout=30).json()
    requests.post(control + "timings", json={"deploy": args.deploy_seconds, "power": 0.1}, timeout=30)
    rows = []
    try:
        for label, fn in (("collection (maas_machine engine)", run_collection), ("plain python-libmaas", run_plain)):
            tag = f"bench{uuid.uuid4().hex[:8]}"
            seed(control, args.machines, tag)
            try:
                rows.append((label, fn(url, key, args.machines, tag, args.workers, args.poll)))
            finally:
                remove(control, tag)
    finally:
        requests.post(control + "timings", json=timings, timeout=30)
        if started:
            maas.down(cfg)
    print(
        f"allocate + deploy {args.machines} MAAS machines (simulator deploy {args.deploy_seconds}s, "
        f"{args.workers} workers, poll {args.poll}s)"
    )
    print(f"{'':34} {'seconds':>8} {'MAAS calls':>11} {'calls/machine':>14} {'not done':>9}")
    for label, r in rows:
        print(f"{label:34} {r['seconds']:8.2f} {r['calls']:11d} {r['calls'] / args.machines:14.1f} {r['not_done']:9d}")


if __name__ == "__main__":
    main()
