"""The ironic host driver against its floor: N fake-hardware hosts registered and deployed with config drives.

Reports numbers only; nothing here is a test.

* driver: N BareMetalHosts (fake:// BMC, HardwareData instead of inspection) reconciled by the
  ironic driver with the runner - registering -> available, then spec.image + userData set ->
  provisioned (config drive built from the Secrets), then the image cleared -> available.
* floor: a plain openstacksdk script doing the same Ironic calls for N fake-hardware nodes
  (create + port, manage, provide, deploy with the same config drive, undeploy), one thread per node,
  polling every --poll seconds as the driver does.

    python bench/bench_hosts.py [--hosts 20] [--poll 1] [--workers 8]

Needs the lab's Ironic (``python -m lab up ironic``); says so and exits 0 when it is not running.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "build"), str(REPO)]
_COLL = REPO / "build" / "ansible_collections" / "baremetal" / "capi"
if not _COLL.exists():
    _COLL.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(REPO, _COLL)

from ansible_collections.baremetal.capi.plugins.module_utils import runner  # noqa: E402
from ansible_collections.baremetal.capi.plugins.module_utils.hosts import drivers  # noqa: E402
from ansible_collections.baremetal.capi.plugins.module_utils.hosts.ironic import configdrive as cd  # noqa: E402
from ansible_collections.baremetal.capi.plugins.module_utils.store.sqlite import SqliteStore  # noqa: E402
from lab import config, process  # noqa: E402
from lab.ironic import hosts as lab_hosts  # noqa: E402

USER_DATA = "#cloud-config\nruncmd: [echo bench]\n"


def mac(run: int, i: int) -> str:
    return f"52:54:01:{run >> 8 & 255:02x}:{run & 255:02x}:{i:02x}"


def driver_run(url: str, image: dict, n: int, poll: float, workers: int) -> dict:
    ns, run = f"bench{uuid.uuid4().hex[:6]}", int(time.time()) & 0xFFFF
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStore(os.path.join(tmp, "state.db"))
        names = [f"b{i:02d}" for i in range(n)]
        for i, name in enumerate(names):
            spec = {
                "bmc": {"address": f"fake://{name}"},
                "bootMACAddress": mac(run, i),
                "online": True,
                "automatedCleaningMode": "disabled",
                "inspectionMode": "disabled",
            }
            store.create(
                {
                    "apiVersion": "metal3.io/v1alpha1",
                    "kind": "BareMetalHost",
                    "metadata": {"name": name, "namespace": ns},
                    "spec": spec,
                }
            )
            store.create(
                {
                    "apiVersion": "metal3.io/v1alpha1",
                    "kind": "HardwareData",
                    "metadata": {"name": name, "namespace": ns},
                    "spec": {"hardware": {"hostname": name}},
                }
            )
            store.create(
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {"name": f"{name}-ud", "namespace": ns},
                    "stringData": {"userData": USER_DATA},
                }
            )
        driver = drivers.get_driver("ironic", {"ironic_url": url, "poll": poll})
        keys = [(ns, name) for name in names]
        out = {}
        try:
            t = time.monotonic()
            res = runner.run(keys, lambda k: driver.reconcile(store, k), workers=workers, timeout=1800, poll=poll)
            out["register"] = (time.monotonic() - t, sum(r.done for r in res))
            for name in names:
                host = store.get("BareMetalHost", name, ns)
                host["spec"]["image"] = dict(image)
                host["spec"]["userData"] = {"name": f"{name}-ud", "namespace": ns}
                store.update(host)
            t = time.monotonic()
            res = runner.run(keys, lambda k: driver.reconcile(store, k), workers=workers, timeout=1800, poll=poll)
            out["provision"] = (time.monotonic() - t, sum(r.done for r in res))
            for name in names:
                host = store.get("BareMetalHost", name, ns)
                host["spec"].pop("image")
                store.update(host)
            t = time.monotonic()
            res = runner.run(keys, lambda k: driver.reconcile(store, k), workers=workers, timeout=1800, poll=poll)
            out["deprovision"] = (time.monotonic() - t, sum(r.done for r in res))
            res = runner.run(keys, lambda k: driver.delete(store, k), workers=workers, timeout=600, poll=poll)
        finally:
            driver.close()
            store.close()
    return out


def floor_run(url: str, image: dict, n: int, poll: float) -> dict:
    import openstack

    run = (int(time.time()) + 7) & 0xFFFF
    stamps: dict[str, list] = {"register": [], "provision": [], "deprovision": []}

    def wait(bm, node, target):
        while True:
            node = bm.get_node(node.id)
            if node.provision_state == target and not node.target_provision_state:
                return node
            if node.provision_state in ("deploy failed", "error", "clean failed"):
                raise RuntimeError(f"{node.name}: {node.provision_state}: {node.last_error}")
            time.sleep(poll)

    def one(i):
        conn = openstack.connect(auth_type="none", baremetal_endpoint_override=url)
        bm = conn.baremetal
        name = f"floor{run:04x}-{i:02d}"
        t = time.monotonic()
        node = bm.create_node(name=name, driver="fake-hardware", automated_clean=False)
        bm.create_port(node_uuid=node.id, address=mac(run, i), is_pxe_enabled=True)
        bm.set_node_provision_state(node, "manage")
        node = wait(bm, node, "manageable")
        bm.set_node_power_state(node, "power on")
        stamps["register"].append(time.monotonic() - t)
        t = time.monotonic()
        bm.set_node_provision_state(node, "provide")
        node = wait(bm, node, "available")
        info, _ = cd.instance_info({"spec": {"image": image}})
        bm.patch_node(node, [{"op": "add", "path": f"/instance_info/{k}", "value": v} for k, v in info.items()])
        drive = {"user_data": USER_DATA, "meta_data": {"uuid": node.id, "name": name}}
        bm.set_node_provision_state(node, "active", config_drive=drive)
        node = wait(bm, node, "active")
        stamps["provision"].append(time.monotonic() - t)
        t = time.monotonic()
        bm.set_node_provision_state(node, "deleted")
        node = wait(bm, node, "available")
        stamps["deprovision"].append(time.monotonic() - t)
        bm.delete_node(node)
        conn.close()

    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=n) as pool:
        list(pool.map(one, range(n)))
    return {"wall": time.monotonic() - t0, **{k: max(v) if v else 0 for k, v in stamps.items()}}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hosts", type=int, default=20)
    ap.add_argument("--poll", type=float, default=1.0)
    ap.add_argument("--workers", type=int, default=8)
    args = ap.parse_args()
    cfg = config.load()
    url = f"http://{cfg.host}:{cfg.ports.ironic}"
    if not process.http_ok(f"{url}/v1"):
        print("lab Ironic is not running (python -m lab up ironic): skipped")
        return 0
    image = lab_hosts.load_inventory(cfg)["images"]["test_image"]
    n = args.hosts
    t = time.monotonic()
    drv = driver_run(url, image, n, args.poll, args.workers)
    total = time.monotonic() - t
    print(f"ironic driver, {n} fake-hardware hosts, {args.workers} workers, poll {args.poll}s:")
    for phase, (secs, done) in drv.items():
        print(f"  {phase:12s} {secs:7.1f} s  ({done}/{n} done)")
    print(f"  total (incl. delete) {total:.1f} s")
    fl = floor_run(url, image, n, args.poll)
    print(f"plain openstacksdk floor, {n} threads, poll {args.poll}s:")
    for phase in ("register", "provision", "deprovision"):
        print(f"  {phase:12s} {fl[phase]:7.1f} s  (slowest node)")
    print(f"  wall         {fl['wall']:7.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
