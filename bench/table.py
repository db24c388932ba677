"""``make bench``: one table, ours / floor / ratio (min and median of interleaved repetitions).

Numbers only, nothing here is a test.  Needs the lab (``python -m lab up``: Ironic, kube, node simulator).

- Metal3 provision of N fake-hardware machines: ``provision_cluster.yml`` (1 control plane + N-1 workers, the
  node simulator booting every host through kubeadm, up to every Node Ready) against a plain openstacksdk
  script doing the same Ironic work for as many nodes with the same instance_info and config drives, which the
  node simulator boots the same way (bench/floor_metal3.py: the control plane first, the joins' token and the
  CNI written into the workload cluster once kubeadm init has uploaded its kubeadm-config, then the workers, up
  to every Node Ready).
- Deprovision: ``deprovision_cluster.yml`` against the floor's undeploy + delete of its nodes (the workers'
  nodes first, then the control plane's, in Cluster API's order).
- Re-run of ``provision_cluster.yml`` on the converged cluster against one read of every object of its
  namespace from the store (a python process opening the store and listing every kind).
- Ironic API calls per machine, ours (provision + re-run + deprovision, from Ironic's API log) against the
  floor's.
- Host choice (choose_host) among 1,000 and 10,000 hosts (sqlite) and 2,000 (kubernetes store), against the
  read every host used to need (list + decode every host the selector matches, then classify).
- IPAM claims on a /16 filled to 1 %, 50 % and 99 % (sqlite): 50 % and 99 % against 1 % (flat = 1.0).

- MAAS allocate + deploy of 30 machines: the ``maas_machine`` engine against a plain python-libmaas script
  (bench/bench_maas.py), on the lab's MAAS simulator with a 3 s deploy.

    python bench/table.py [--machines 20 50] [--maas-machines 30] [--reps 3] [--skip-provision|--only-provision]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import re
import statistics
import subprocess
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

import yaml  # noqa: E402

ROWS: list[tuple[str, list[float], list[float] | None, str]] = []


def ironic_calls(log: Path, since: int) -> tuple[int, int, int]:
    """(API calls, version discoveries, new offset) in Ironic's API log after ``since`` bytes."""
    with open(log, "rb") as fh:
        fh.seek(since)
        text = fh.read().decode(errors="replace")
        end = fh.tell()
    # the node simulator polls every node and port of the lab (GET /v1/{nodes,ports}/detail): not counted
    calls = [
        line
        for line in text.splitlines()
        if "INFO ironic.api" in line and " /" in line and not re.search(r" GET /v1/(nodes|ports)/detail ", line)
    ]
    discovery = [line for line in calls if re.search(r" GET /(v1/?)? - ", line)]
    return len(calls), len(discovery), end


class Cluster:
    """One Metal3 cluster of fake-hardware hosts: inventory, store, playbook runs (as tests/integration/e2e)."""

    def __init__(self, tmp: Path, inv: dict, n: int, net: str):
        """``net``: a /24 of the lab's loopback (``cfg.net(...)``), for the hosts, the pool and the endpoint."""
        tag = uuid.uuid4().hex[:6]
        self.name, self.ns = f"b{tag}", f"bench-{tag}"
        self.tmp, self.db = tmp, str(tmp / "state.db")
        self.endpoint = (f"{net}.250", 6443)  # the control plane's; the floor's too (the same user data)
        image = {k: inv["images"]["test_image"][k] for k in ("url", "checksum", "checksumType", "format")}
        hosts = []
        for i in range(n):
            mac = f"52:54:02:{int(tag[:2], 16):02x}:{int(tag[2:4], 16):02x}:{i:02x}"
            hosts.append({
                "name": f"{self.name}-host-{i}",
                "spec": {"bmc": {"address": f"fake://{self.name}-host-{i}"}, "bootMACAddress": mac,
                         "automatedCleaningMode": "disabled", "inspectionMode": "disabled"},
                "hardware": {"hostname": f"{self.name}-host-{i}",
                             "nics": [{"name": "enp1s0", "mac": mac, "ip": f"{net}.{10 + i}"}]},
            })  # fmt: skip
        desc = {
            "name": self.name, "namespace": self.ns, "provider": "metal3", "kubernetes_version": "v1.34.4",
            "control_plane_endpoint": {"host": self.endpoint[0], "port": self.endpoint[1]},
            "control_plane": {"replicas": 1, "image": image, "automated_cleaning_mode": "disabled"},
            "workers": [{"name": "md-0", "replicas": n - 1, "image": image, "automated_cleaning_mode": "disabled"}],
            "ip_pools": [{"name": f"{self.name}-prov", "spec": {"namePrefix": f"{self.name}-prov", "prefix": 24,
                          "pools": [{"start": f"{net}.100", "end": f"{net}.200"}]}}],
            "data_template": {"spec": {
                "metaData": {"strings": [{"key": "cluster", "value": self.name}]},
                "networkData": {
                    "links": {"ethernets": [
                        {"type": "phy", "id": "enp1s0", "macAddress": {"fromHostInterface": "enp1s0"}}]},
                    "networks": {"ipv4": [{"id": "prov", "link": "enp1s0",
                                           "ipAddressFromIPPool": f"{self.name}-prov"}]},
                },
            }},
            "hosts": hosts,
            # the lab's kubelets keep their Nodes NotReady until a CNI runs: the lab's stand-in, as the tests use
            "addons": [{"name": "cni", "manifests": [str(REPO / "lab" / "manifests" / "cni-standin.yaml")]}],
            "store": {"kind": "sqlite", "path": self.db},
        }  # fmt: skip
        invdir = tmp / "inventory"
        (invdir / "host_vars").mkdir(parents=True)
        (invdir / "hosts.yml").write_text(yaml.safe_dump({"all": {"hosts": {self.name: None}}}))
        host_vars = {
            "ansible_connection": "local",
            "capi_cluster": desc,
            "capi_wait_timeout": 1800,
            "capi_host_driver_options": {"ironic_url": inv["ironic"]["url"], "boot_iso": inv["images"]["boot_iso"]},
        }
        (invdir / "host_vars" / f"{self.name}.yml").write_text(yaml.safe_dump(host_vars, sort_keys=False))
        self.inventory = str(invdir)

    def play(self, playbook: str, count_processes: bool = False, extra_vars: dict | None = None) -> float:
        extra = json.dumps({"ansible_python_interpreter": sys.executable})
        argv = [str(Path(sys.executable).with_name("ansible-playbook")), "-i", self.inventory,
                str(REPO / "playbooks" / playbook), "-e", extra, "-e", json.dumps(extra_vars or {})]  # fmt: skip
        env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"))
        if count_processes:  # every Python process the run starts (module processes) writes a line at its start
            site = self.tmp / "count"
            site.mkdir(exist_ok=True)
            (site / "sitecustomize.py").write_text(
                "import sys\n"
                "if not sys.argv[0].endswith('ansible-playbook'):\n"
                f"    open({str(self.tmp / 'processes')!r}, 'a').write(repr(sys.argv[:1]) + '\\n')\n"
            )
            (self.tmp / "processes").write_text("")
            env["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), env.get("PYTHONPATH")) if p)
        t0 = time.perf_counter()
        proc = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, check=False)
        took = time.perf_counter() - t0
        (self.tmp / f"{playbook}-{time.time():.0f}.log").write_text(proc.stdout + proc.stderr)
        # a retried task or a fatal one (not a FAILED inside a progress line's message: CERTIFICATE_VERIFY_FAILED)
        if proc.returncode != 0 or re.search(r"^(FAILED - RETRYING|fatal:)", proc.stdout, re.M):
            lines = proc.stdout.splitlines()
            failed = [
                " | ".join(lines[max(0, i - 3) : i + 3])
                for i, line in enumerate(lines)
                if re.match(r"FAILED|fatal:", line)
            ]
            raise SystemExit(
                f"{playbook} failed:\n" + "\n".join(failed) + f"\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}"
            )
        return took


def one_read(db: str, ns: str) -> float:
    """A fresh python process that opens the store and reads every object of the namespace once."""
    code = (
        "import sys; sys.path[:0] = [sys.argv[3]]\n"
        "from ansible_collections.baremetal.capi.plugins.module_utils.store.sqlite import SqliteStore\n"
        "from ansible_collections.baremetal.capi.plugins.module_utils.model import kinds\n"
        "s = SqliteStore(sys.argv[1])\n"
        "print(sum(len(s.list(k.key, sys.argv[2])) for k in kinds.ALL), file=sys.stderr)\n"
    )
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", code, db, ns, str(REPO / "build")], check=True, capture_output=True)
    return time.perf_counter() - t0


def _wait_gone(host: str, port: int, timeout: float = 120) -> None:
    """Until nothing accepts a connection at host:port (or the timeout)."""
    import socket

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection((host, port), timeout=1).close()
        except OSError:
            return
        time.sleep(0.5)


def bench_metal3(n: int, reps: int, first_net: int = 200) -> None:
    import openstack

    from ansible_collections.baremetal.capi.plugins.module_utils.hosts.ironic import configdrive as cd
    from ansible_collections.baremetal.capi.plugins.module_utils.store.sqlite import SqliteStore
    from lab import config
    from lab.ironic import hosts as lab_hosts

    sys.path.insert(0, str(REPO / "bench"))
    import floor_metal3

    cfg = config.load()
    inv = lab_hosts.load_inventory(cfg)
    log = cfg.logs / "ironic.log"
    cni = [d for d in yaml.safe_load_all((REPO / "lab" / "manifests" / "cni-standin.yaml").read_text()) if d]
    ours = {"provision": [], "deprovision": [], "rerun": [], "calls": []}
    floor = {"provision": [], "deprovision": [], "rerun": [], "calls": []}
    for rep in range(reps):
        with tempfile.TemporaryDirectory() as d:
            # a /24 of its own per repetition and size: no run starts on an address an earlier run's
            # workload API may still serve (see _wait_gone for the floor after ours in the same repetition)
            c = Cluster(Path(d), inv, n, cfg.net(first_net + rep))
            offset = log.stat().st_size
            ours["provision"].append(c.play("provision_cluster.yml"))
            ours["rerun"].append(c.play("provision_cluster.yml", count_processes=True))
            processes = len((c.tmp / "processes").read_text().splitlines())
            print(f"  rep {rep}: the re-run started {processes} Python processes", flush=True)
            floor["rerun"].append(one_read(c.db, c.ns))
            store = SqliteStore(c.db)
            hosts = store.list("BareMetalHost", c.ns)
            drives = [cd.config_drive(store, h) for h in hosts]
            infos = [cd.instance_info(h, boot_iso=inv["images"]["boot_iso"])[0] for h in hosts]
            node_id = hosts[0]["status"]["provisioning"]["ID"]
            kubeconfig = floor_metal3.admin_kubeconfig(store, c.ns, c.name)
            store.close()
            conn = openstack.connect(auth_type="none", baremetal_endpoint_override=inv["ironic"]["url"])
            template = conn.baremetal.get_node(node_id)  # the floor's nodes are made like ours
            # deregistering the hosts too: the floor deletes its nodes as well
            ours["deprovision"].append(c.play("deprovision_cluster.yml", extra_vars={"capi_deregister_hosts": True}))
            calls, disc, offset = ironic_calls(log, offset)
            ours["calls"].append(calls / n)
            print(f"  rep {rep}: ours provision {ours['provision'][-1]:.1f}s re-run {ours['rerun'][-1]:.1f}s "
                  f"deprovision {ours['deprovision'][-1]:.1f}s; Ironic calls {calls} ({disc} discovery)",
                  flush=True)  # fmt: skip
            # the floor's control plane serves at the same address: it starts once ours' API server has gone
            # (the node simulator stops it a few seconds after its host powered off), or the floor's wait for
            # kubeadm-config reads ours' and its joins' token goes to a cluster about to vanish
            _wait_gone(*c.endpoint)
            tag = uuid.uuid4().hex[:6]
            mac_prefix = f"52:54:03:{int(tag[:2], 16):02x}:{int(tag[2:4], 16):02x}"
            took, ids = floor_metal3.provision(conn, template, drives, infos, tag, kubeconfig, cni, mac_prefix)
            floor["provision"].append(took)
            floor["deprovision"].append(floor_metal3.deprovision(conn, ids, drives))
            calls, disc, offset = ironic_calls(log, offset)
            floor["calls"].append(calls / n)
            print(f"  rep {rep}: floor provision {floor['provision'][-1]:.1f}s deprovision "
                  f"{floor['deprovision'][-1]:.1f}s; Ironic calls {calls} ({disc} discovery)", flush=True)  # fmt: skip
            conn.close()
    ROWS.append((f"Metal3 provision {n} (1+{n - 1})", ours["provision"], floor["provision"], "s"))
    ROWS.append((f"Metal3 deprovision {n}", ours["deprovision"], floor["deprovision"], "s"))
    ROWS.append((f"no-change re-run, {n} machines", ours["rerun"], floor["rerun"], "s"))
    ROWS.append(("Ironic API calls per machine", ours["calls"], floor["calls"], "calls"))


def bench_maas(n: int, reps: int) -> None:
    """Allocate + deploy n MAAS machines: the collection's maas_machine engine against plain python-libmaas
    (bench/bench_maas.py), interleaved, taking turns at going first, on freshly seeded machines each time."""
    import bench_maas as bm
    import requests

    from lab import config
    from lab.services import maas

    cfg = config.load()
    info = maas.status(cfg)
    if not info.get("healthy"):
        raise SystemExit("the MAAS simulator is not running: python -m lab up maas")
    url, key, control = info["url"], info["api_key"], info["control_url"]
    timings = requests.get(control + "timings", timeout=30).json()
    requests.post(control + "timings", json={"deploy": 3.0, "power": 0.1}, timeout=30)
    ours: dict[str, list[float]] = {"seconds": [], "calls": []}
    floor: dict[str, list[float]] = {"seconds": [], "calls": []}
    try:
        for rep in range(reps):
            runs = [(ours, bm.run_collection), (floor, bm.run_plain)]
            for into, fn in runs if rep % 2 == 0 else runs[::-1]:
                tag = f"bench{uuid.uuid4().hex[:8]}"
                bm.seed(control, n, tag)
                try:
                    gc.collect()
                    # ours: the collection's 8 workers; the floor: a thread per machine, as the Metal3 floor
                    r = fn(url, key, n, tag, 8 if fn is bm.run_collection else n, 2.0)
                finally:
                    bm.remove(control, tag)
                if r["not_done"]:
                    raise SystemExit(f"MAAS bench: {r['not_done']} of {n} machines not deployed ({fn.__name__})")
                into["seconds"].append(r["seconds"])
                into["calls"].append(r["calls"] / n)
            print(f"  rep {rep}: MAAS {n} ours {ours['seconds'][-1]:.1f}s ({ours['calls'][-1]:.1f} calls/machine), "
                  f"floor {floor['seconds'][-1]:.1f}s ({floor['calls'][-1]:.1f})", flush=True)  # fmt: skip
    finally:
        requests.post(control + "timings", json=timings, timeout=30)
    ROWS.append((f"MAAS allocate + deploy {n} (simulator deploy 3 s)", ours["seconds"], floor["seconds"], "s"))
    ROWS.append(("MAAS API calls per machine", ours["calls"], floor["calls"], "calls"))


def _run_measured(argv: list[str], env: dict) -> tuple[float, float, int, str]:
    """(wall seconds, peak MiB of the command and every process it started, sampled every 0.5 s, return code,
    output) of one command."""
    import threading

    from lab import process

    peak = [0.0]
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def sample():
        while proc.poll() is None:
            peak[0] = max(peak[0], process.rss_mib(process.tree_pids(proc.pid)))
            time.sleep(0.5)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    output = proc.communicate()[0]
    took = time.perf_counter() - t0
    sampler.join()
    return took, peak[0], proc.returncode, output


def bench_fleet(total: int, clusters: int) -> list[str]:
    """One provision_cluster.yml run of ``total`` machines in ``clusters`` clusters at once (one inventory, a
    fork per cluster), then their deprovision: wall time, the run's peak resident memory (ansible-playbook and
    every process it started, sampled every 0.5 s) and the Ironic API calls."""
    from lab import config
    from lab.ironic import hosts as lab_hosts

    cfg = config.load()
    inv = lab_hosts.load_inventory(cfg)
    log = cfg.logs / "ironic.log"
    out = []
    with tempfile.TemporaryDirectory() as d:
        fleet = [Cluster(Path(d) / f"c{i}", inv, total // clusters, cfg.net(210 + i)) for i in range(clusters)]
        invdir = Path(d) / "inventory"
        (invdir / "host_vars").mkdir(parents=True)
        (invdir / "hosts.yml").write_text(yaml.safe_dump({"all": {"hosts": {c.name: None for c in fleet}}}))
        for c in fleet:
            src = Path(c.inventory) / "host_vars" / f"{c.name}.yml"
            (invdir / "host_vars" / src.name).write_text(src.read_text())
        runs = (("provision_cluster.yml", {}), ("deprovision_cluster.yml", {"capi_deregister_hosts": True}))
        for playbook, extra in runs:
            interpreter = json.dumps({"ansible_python_interpreter": sys.executable})
            argv = [str(Path(sys.executable).with_name("ansible-playbook")), "-i", str(invdir),
                    str(REPO / "playbooks" / playbook), "-e", interpreter, "-e", json.dumps(extra)]  # fmt: skip
            env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_FORKS=str(clusters))
            offset = log.stat().st_size
            took, peak_mib, returncode, output = _run_measured(argv, env)
            (Path(d) / f"{playbook}.log").write_text(output)
            if returncode != 0:
                raise SystemExit(f"fleet {playbook} failed:\n{output[-6000:]}")
            calls, disc, _ = ironic_calls(log, offset)
            line = (f"{playbook} of {total} machines in {clusters} clusters at once: {took:.0f} s wall, peak RSS "
                    f"{peak_mib:.0f} MiB, {calls} Ironic API calls ({disc} version discovery), "
                    f"{calls / total:.1f} per machine")  # fmt: skip
            print("  " + line, flush=True)
            out.append(line)
    return out


def bench_choose(reps: int) -> None:
    from ansible_collections.baremetal.capi.plugins.module_utils.metal3 import choose
    from ansible_collections.baremetal.capi.plugins.module_utils.model import meta
    from ansible_collections.baremetal.capi.plugins.module_utils.store.sqlite import SqliteStore

    sys.path.insert(0, str(REPO / "bench"))
    import bench_choose_host as bc

    def measure(store, ns, rounds):
        """Milliseconds per choice, ours and the old full read: (wall, CPU) each (CPU: this process's time,
        which the other engines' load on a shared machine does not inflate)."""
        ours, old, ours_cpu, old_cpu = [], [], [], []

        def mine(m3m, machine):
            t0, c0 = time.perf_counter(), time.process_time()
            found, _ = choose.choose_host(store, m3m, machine)
            ours.append(time.perf_counter() - t0)
            ours_cpu.append(time.process_time() - c0)
            assert found is not None

        def full_read(m3m, _machine):
            t0, c0 = time.perf_counter(), time.process_time()
            listed = store.list("BareMetalHost", ns, choose.host_selector(m3m))
            choose.classify(listed, m3m, None)
            old.append(time.perf_counter() - t0)
            old_cpu.append(time.process_time() - c0)

        for r in range(rounds):
            m3m, machine = bc.machine_objects(ns, f"bench-{uuid.uuid4().hex[:6]}")
            # Each from the same garbage collector state: on the kubernetes store a read cost 25-30 or 55-65 ms
            # CPU by turns, whichever function read, and 18-31 ms always with the collector off (measured, 8 and
            # 10 rounds): a full collection landed in one read of two.  They also take turns at going first.
            for step in (mine, full_read) if r % 2 == 0 else (full_read, mine):
                gc.collect()
                step(m3m, machine)
            choose.claim(store, m3m, machine)
        ms = lambda xs: [x * 1000 for x in xs]  # noqa: E731
        return ms(ours), ms(old), ms(ours_cpu), ms(old_cpu)

    def load(store, n, ns):
        """The hosts of bench_choose_host, written through the store's own row writer in one transaction
        (the store's create + update_status per host takes minutes at 10,000 on a loaded machine)."""
        from ansible_collections.baremetal.capi.plugins.module_utils.model import kinds

        store.create(meta.new("Namespace", ns, namespace=None))
        k = kinds.resolve("BareMetalHost")
        with store._write() as con:
            for i in range(n):
                obj, status = bc.host(i, ns)
                obj["metadata"].update(uid=str(uuid.uuid4()), creationTimestamp="2026-01-01T00:00:00Z", generation=1)
                obj["apiVersion"], obj["status"] = k.api_version, status
                store._save(con, None, k, obj)

    for n in (1000, 10000):  # the floor column: the full read host choice used to do
        with tempfile.TemporaryDirectory() as d:
            store = SqliteStore(os.path.join(d, "state.db"))
            load(store, n, "bench")
            ours, old, ours_cpu, old_cpu = measure(store, "bench", max(reps, 10))  # an even count: as many first
            store.close()
        ROWS.append((f"host choice, {n:,} hosts (sqlite), wall", ours, old, "ms"))
        ROWS.append((f"host choice, {n:,} hosts (sqlite), CPU", ours_cpu, old_cpu, "ms"))
        print(f"  host choice at {n} (sqlite): ours median {statistics.median(ours):.1f} ms, "
              f"the old read {statistics.median(old):.1f} ms", flush=True)  # fmt: skip
    from lab import config
    from lab.services import kube

    cfg = config.load()
    if not kube.status(cfg).get("healthy"):
        print("kubernetes store host choice skipped: the lab's kube-apiserver is not running")
        return
    from ansible_collections.baremetal.capi.plugins.module_utils.store.base import open_store

    store = open_store({"kind": "kubernetes", "kubeconfig": str(cfg.root / "kubeconfig")})
    ns = f"bench-{uuid.uuid4().hex[:6]}"
    try:
        bc.populate(store, 2000, ns)
        ours, old, ours_cpu, old_cpu = measure(store, ns, max(reps, 10))
    finally:
        try:
            kube.delete_namespace(kube.api_client(cfg), ns)
        except Exception as exc:  # the numbers are printed either way
            print(f"(could not delete namespace {ns}: {exc})")
        store.close()
    ROWS.append(("host choice, 2,000 hosts (kubernetes store), wall", ours, old, "ms"))
    ROWS.append(("host choice, 2,000 hosts (kubernetes store), CPU", ours_cpu, old_cpu, "ms"))


def bench_ipam(reps: int, claims: int = 50) -> None:
    """IPAM claims on a /16 pool filled to 1 %, 50 % and 99 % (bench_metal3_data.allocation_levels, a fresh
    sqlite store per repetition); the floor column of 50 % and 99 % is the same repetition's 1 %, so the ratio is
    how far from flat the allocation is."""
    sys.path.insert(0, str(REPO / "bench"))
    import bench_metal3_data as bm

    per = {level: ([], []) for level in (0.01, 0.50, 0.99)}
    for rep in range(reps):
        with tempfile.TemporaryDirectory() as d:
            store = bm.CountingStore(os.path.join(d, "state.db"))
            out, *_rest = bm.allocation_levels(store, claims)
            store.close()
        for level, (wall, cpu, probes) in out.items():
            per[level][0].append(statistics.median(wall) * 1000)
            per[level][1].append(statistics.median(cpu) * 1000)
            print(f"  IPAM rep {rep}: {level:.0%} of a /16: median {per[level][0][-1]:.2f} ms wall, "
                  f"{per[level][1][-1]:.2f} ms CPU, {statistics.mean(probes):.1f} probes", flush=True)  # fmt: skip
    for i, what in enumerate(("wall", "CPU")):
        ROWS.append((f"IPAM claim, 1% of a /16 (sqlite), {what}", per[0.01][i], None, "ms"))
        for level in (0.50, 0.99):
            ROWS.append((f"IPAM claim, {level:.0%} of a /16 vs 1%, {what}", per[level][i], per[0.01][i], "ms"))


def table() -> list[str]:
    head = ("figure", "ours min", "ours median", "floor min", "floor median", "ratio min", "ratio median")
    lines = []
    for name, ours, floor, unit in ROWS:
        cells = [name, f"{min(ours):.2f} {unit}", f"{statistics.median(ours):.2f} {unit}"]
        if floor:
            med_ratio = statistics.median(ours) / statistics.median(floor)
            cells += [f"{min(floor):.2f} {unit}", f"{statistics.median(floor):.2f} {unit}",
                      f"{min(ours) / min(floor):.2f}", f"{med_ratio:.2f}"]  # fmt: skip
        else:
            cells += ["-"] * 4
        lines.append(cells)
    widths = [max(len(r[i]) for r in [head, *lines]) for i in range(len(head))]
    out = ["| " + " | ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)) + " |"]
    out.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    out += ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |" for r in lines]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--machines", type=int, nargs="+", default=[20, 50], help="Metal3 cluster sizes")
    parser.add_argument("--maas-machines", type=int, default=30)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--skip-provision", action="store_true", help="no Metal3 or MAAS provisioning rows")
    parser.add_argument("--only-provision", action="store_true", help="no host choice or IPAM rows")
    parser.add_argument("--fleet", type=int, default=0, help="also one run of this many machines (e.g. 200)")
    parser.add_argument("--fleet-clusters", type=int, default=4)
    args = parser.parse_args()
    print(f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} CPUs, python {platform.python_version()}")
    if not args.only_provision:
        bench_choose(args.reps)
        bench_ipam(args.reps)
        for line in table():
            print(line, flush=True)
    if not args.skip_provision:
        bench_maas(args.maas_machines, args.reps)
        for k, n in enumerate(args.machines):
            bench_metal3(n, args.reps, first_net=150 + 10 * k)  # up to 10 repetitions per size below the fleet's 210
    for line in table():
        print(line)
    if args.fleet:
        for line in bench_fleet(args.fleet, args.fleet_clusters):
            print(line)


if __name__ == "__main__":
    main()
