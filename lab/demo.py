"""``make demo``: the lab, then a 3 control-plane + 2 worker cluster on each provider, then the tables.

    python -m lab.demo          # lab up, MAAS machines for the demo, provision_cluster.yml on inventory/lab
    python -m lab.demo --down   # deprovision both clusters, deregister the demo hosts

(``make demo`` and ``make demo-down``, which then stops the lab, run them with the project's venv.)

The clusters are described in inventory/lab (host_vars/demo-metal3.yml, demo-maas.yml); the playbook is the
user's playbooks/provision_cluster.yml, run with the repository's ansible.cfg (progress callback on).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import requests

from lab import bringup, config
from lab.config import REPO

SERVICES = ("kube", "ironic", "maas", "nodesim")
INVENTORY = REPO / "inventory" / "lab"
# The simulator's transitions, shortened for the demo (seconds).
MAAS_TIMINGS = {"deploy": 2.0, "release": 0.5, "erase": 0.5, "commission": 0.5, "power": 0.2}
# Machines the demo's MAAS cluster allocates from (its constraints ask for these tags).
MAAS_MACHINES = [
    *({"hostname": f"demo-cp-{i}", "zone": f"az-{i + 1}", "tags": ["demo-cp"]} for i in range(3)),
    *({"hostname": f"demo-worker-{i}", "zone": f"az-{i % 3 + 1}", "tags": ["demo-worker"]} for i in range(3)),
]


def collection_link() -> None:
    """build/ansible_collections/baremetal/capi -> this tree (ansible.cfg's collections_path)."""
    link = REPO / "build" / "ansible_collections" / "baremetal" / "capi"
    if not link.exists():
        link.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(REPO, link)


def lab_up(cfg) -> dict:
    """The lab's services up, and every file the demo's inventory reads written (lab/bringup.py)."""
    return bringup.up(cfg, SERVICES, log=lambda line: print(line, flush=True))


def maas_machines(info: dict) -> None:
    control = info["control_url"]
    http = requests.Session()
    http.post(control + "timings", json=MAAS_TIMINGS, timeout=30).raise_for_status()
    have = {m["hostname"] for m in http.get(control + "machines", timeout=30).json()}
    missing = [{**m, "cpu_count": 4, "memory": 8192} for m in MAAS_MACHINES if m["hostname"] not in have]
    if missing:
        http.post(control + "machines", json={"machines": missing}, timeout=30).raise_for_status()
        print(f"lab: {len(missing)} MAAS machines added for the demo", flush=True)


def machines_inventory(cfg) -> Path:
    """An inventory source of the baremetal.capi.machines plugin for the demo's store (its name must end in
    machines.yml)."""
    path = cfg.root / "demo" / "demo.capi.machines.yml"
    path.write_text(
        "# The demo clusters' machines as Ansible hosts: ansible-inventory -i <this file> --graph\n"
        "plugin: baremetal.capi.machines\n"
        f"store: {{kind: sqlite, path: {cfg.root / 'demo' / 'state.db'}}}\n"
    )
    return path


def playbook(name: str, *args: str) -> int:
    argv = [str(Path(sys.executable).with_name("ansible-playbook")), "-i", str(INVENTORY), f"playbooks/{name}"]
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_FORKS="4")
    return subprocess.call(argv + list(args), cwd=REPO, env=env)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--down", action="store_true", help="deprovision the demo clusters")
    args = parser.parse_args()
    cfg = config.load()
    collection_link()
    started = time.monotonic()
    if args.down:
        bringup.prepare(cfg)  # the inventory's files, even where they were removed since
        rc = playbook("deprovision_cluster.yml", "-e", "capi_deregister_hosts=true")
        print(f"\ndemo clusters deprovisioned (rc={rc}); stop the lab with: make lab-down")
        return rc
    info = lab_up(cfg)
    maas_machines(info["maas"])
    (cfg.root / "demo").mkdir(exist_ok=True)
    rc = playbook("provision_cluster.yml")
    took = time.monotonic() - started
    if rc != 0:
        # only the failure: the hints below are for clusters that exist
        print(f"\nmake demo: FAILED in {took / 60:.1f} min (rc={rc}); the first failed task is above.")
        return rc
    machines = machines_inventory(cfg)
    print(f"\nmake demo: done in {took / 60:.1f} min (rc={rc}).")
    rel = os.path.relpath(machines, REPO)
    print(f"The machines as Ansible hosts (baremetal.capi.machines): ansible-inventory -i {rel} --graph")
    print(f"  an ad-hoc run on every one of them: ansible -i {rel} all -m ansible.builtin.ping -c local")
    print(
        f"Kubeconfigs: {os.path.relpath(cfg.root / 'demo', REPO)}/<namespace>-<cluster>.kubeconfig (demo-maas's for "
        "the MAAS DNS record's address), and the <cluster>-kubeconfig Secrets in the store state.db beside them."
    )
    print("Tear down: make demo-down   (deprovision both clusters, then stop the lab)")
    return rc


if __name__ == "__main__":
    sys.exit(main())
