"""End-to-end time to provision 20 Metal3Machines on fake-hardware lab hosts, next to the floor.

The collection: one ``baremetal.capi.metal3_machine`` task (ansible-playbook)
takes 20 Metal3Machines from associate to provisioned hosts (claim, host spec,
Ironic provide + deploy with a config drive, waiting; ``wait_for:
provisioned``, no workload cluster).

The floor: a plain openstacksdk script deploying the same 20 Ironic nodes,
from the same state (manageable), with the same instance_info and the same
config drives, 20 threads, waiting for ``active``.

Reports numbers only.  Needs the lab's Ironic (``python -m lab up ironic``);
says so and stops when it is not running.

    python bench/bench_provision_20.py [--machines 20] [--workers 20]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
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

import yaml  # noqa: E402

INFRA = "infrastructure.cluster.x-k8s.io"


def play(tmp: Path, tasks: list[dict]) -> float:
    """Run tasks with ansible-playbook; seconds it took.  Fails loudly."""
    path = tmp / f"play-{uuid.uuid4().hex[:6]}.yml"
    path.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": tasks}], sort_keys=False))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(REPO / "build"), ANSIBLE_LOCALHOST_WARNING="False",
               ANSIBLE_INVENTORY_UNPARSED_WARNING="False")  # fmt: skip
    argv = [str(Path(sys.executable).with_name("ansible-playbook")), str(path),
            "-e", json.dumps({"ansible_python_interpreter": sys.executable})]  # fmt: skip
    t0 = time.perf_counter()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    took = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"ansible-playbook failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-2000:]}")
    return took


def objects(ns: str, cluster: str, n: int, image: dict) -> list[dict]:
    out = [
        {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "metadata": {"name": cluster, "namespace": ns},
         "spec": {"infrastructureRef": {"apiGroup": INFRA, "kind": "Metal3Cluster", "name": cluster}}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "bootstrap", "namespace": ns},
         "stringData": {"value": "#cloud-config\nruncmd: []\n"}},
    ]  # fmt: skip
    for i in range(n):
        name = f"m-{i:02d}"
        out.append({
            "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine", "metadata": {"name": name, "namespace": ns},
            "spec": {"clusterName": cluster, "bootstrap": {"dataSecretName": "bootstrap"},
                     "infrastructureRef": {"apiGroup": INFRA, "kind": "Metal3Machine", "name": name}},
        })  # fmt: skip
        out.append({
            "apiVersion": f"{INFRA}/v1beta2", "kind": "Metal3Machine", "metadata": {"name": name, "namespace": ns},
            "spec": {"image": {"url": image["url"], "checksum": image["checksum"],
                               "checksumType": image["checksumType"], "diskFormat": image["format"]}},
        })  # fmt: skip
    return out


def fake_host(ns_tag: int, i: int) -> dict:
    mac = f"52:54:01:{ns_tag:02x}:00:{i:02x}"
    return {
        "name": f"bench-{i:02d}",
        "spec": {"bmc": {"address": f"fake://bench-{i:02d}"}, "bootMACAddress": mac, "online": False,
                 "automatedCleaningMode": "disabled", "inspectionMode": "disabled"},
        "hardware": {"hostname": f"bench-{i:02d}", "nics": [{"name": "enp1s0", "mac": mac, "ip": ""}]},
    }  # fmt: skip


def floor(conn, nodes: dict, drives: dict, infos: dict, workers: int) -> float:
    """The same nodes from manageable: provide, deploy with the same instance_info and config drive."""
    bm = conn.baremetal

    def to_manageable(node_id):
        node = bm.get_node(node_id)
        if node.provision_state == "available":
            bm.set_node_provision_state(node, "manage", wait=True, timeout=300)

    def deploy(name):
        node = bm.get_node(nodes[name])
        bm.patch_node(node, [{"op": "add", "path": "/instance_info", "value": infos[name]}])
        bm.set_node_provision_state(node, "provide", wait=True, timeout=600)
        bm.set_node_provision_state(node, "active", config_drive=drives[name], wait=True, timeout=600)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(to_manageable, nodes.values()))
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(deploy, nodes))
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--machines", type=int, default=20)
    parser.add_argument("--workers", type=int, default=20)
    args = parser.parse_args()

    import openstack

    from ansible_collections.baremetal.capi.plugins.module_utils.hosts.ironic import configdrive as cd
    from ansible_collections.baremetal.capi.plugins.module_utils.store.sqlite import SqliteStore
    from lab import config
    from lab.ironic import hosts as lab_hosts
    from lab.services import ironic as ironic_svc

    cfg = config.load()
    if not ironic_svc.status(cfg).get("healthy"):
        print("provision-20 skipped: the lab's Ironic is not running (python -m lab up ironic)")
        return
    inv = lab_hosts.load_inventory(cfg)
    conn = openstack.connect(auth_type="none", baremetal_endpoint_override=inv["ironic"]["url"])
    tag = uuid.uuid4().hex[:6]
    ns, cluster, n = f"bench-{tag}", f"b{tag}", args.machines
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        db = str(tmp / "state.db")
        store_opt = {"path": db, "namespace": ns}
        driver = {"ironic_url": inv["ironic"]["url"], "boot_iso": inv["images"]["boot_iso"], "poll": 1}
        try:
            play(tmp, [{"baremetal.capi.baremetalhost": {"hosts": [fake_host(int(tag[:2], 16), i) for i in range(n)],
                                                         "wait": True, "store": store_opt, **driver}}]
                 + [{"baremetal.capi.object": {"definition": o, "store": store_opt}}
                    for o in objects(ns, cluster, n, inv["images"]["test_image"])]
                 + [{"baremetal.capi.metal3_cluster": {"name": cluster, "store": store_opt,
                                                       "control_plane_endpoint": {"host": "127.0.5.1"}}}])  # fmt: skip
            ours = play(tmp, [{"baremetal.capi.metal3_machine": {
                "cluster": cluster, "store": store_opt, "host_driver_options": driver, "wait_for": "provisioned",
                "workers": args.workers, "wait_sleep": 1, "wait_timeout": 1800}}])  # fmt: skip
            store = SqliteStore(db)
            hosts = {h["metadata"]["name"]: h for h in store.list("BareMetalHost", ns)}
            nodes = {name: h["status"]["provisioning"]["ID"] for name, h in hosts.items()}
            drives = {name: cd.config_drive(store, h) for name, h in hosts.items()}
            infos = {name: cd.instance_info(h, boot_iso=inv["images"]["boot_iso"])[0] for name, h in hosts.items()}
            store.close()
            absent = {"cluster": cluster, "store": store_opt, "state": "absent", "host_driver_options": driver}
            play(tmp, [{"baremetal.capi.metal3_machine": dict(absent, wait_timeout=1800)}])
            base = floor(conn, nodes, drives, infos, args.workers)
        finally:
            for node in list(conn.baremetal.nodes(fields=["uuid", "name"])):
                if (node.name or "").startswith(ns + "~"):
                    try:
                        full = conn.baremetal.get_node(node.id)
                        if full.provision_state == "active":
                            conn.baremetal.set_node_provision_state(full, "deleted", wait=True, timeout=300)
                        conn.baremetal.set_node_maintenance(node.id, reason="bench done")
                        conn.baremetal.delete_node(node.id)
                    except Exception as exc:  # the numbers are printed either way
                        print(f"(could not delete {node.name}: {exc})")
    print(
        f"provision {n} machines: metal3_machine task {ours:6.1f}s   openstacksdk floor {base:6.1f}s   "
        f"ratio {ours / base:4.2f}  (fake-hardware, {args.workers} workers)"
    )


if __name__ == "__main__":
    main()
