"""provision_cluster.yml end to end: the user's playbooks run by ansible-playbook against the lab.

Each test writes an inventory of its own (one cluster: its own namespace, sqlite store, endpoint, hosts or
MAAS machines) and runs playbooks/{provision,scale,deprovision}_cluster.yml with the repository's ansible.cfg
(or, given a collections path, the installed collection's, with ansible-core's defaults), then asserts on the
workload API, the store, Ironic and the MAAS simulator.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import requests
import yaml

from ansible_collections.baremetal.capi.plugins.module_utils.store.base import open_store
from lab import process
from lab.config import REPO
from lab.ironic import hosts as lab_hosts
from tests.integration import cni
from tests.integration.net import LOOP

MAAS_FAST = {"deploy": 1.0, "release": 0.3, "erase": 0.3, "commission": 0.3, "power": 0.1}
RECAP = re.compile(r"^(\S+)\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.M)


def free_endpoint(prefix: str) -> str:
    for _ in range(50):
        host = f"{prefix}.{random.randint(2, 250)}"
        if not process.port_open(host, 6443):
            return host
    pytest.fail(f"no free {prefix}.x:6443")


class Run:
    def __init__(self, proc: subprocess.CompletedProcess):
        self.rc, self.out = proc.returncode, proc.stdout + proc.stderr
        m = RECAP.search(self.out)
        self.changed = int(m.group(3)) if m else None
        self.failed = int(m.group(5)) if m else None

    def changed_tasks(self) -> list[str]:
        """The tasks that reported a change, each with its changed lines (what an idempotency failure shows)."""
        out, task = [], None
        for line in self.out.splitlines():
            if line.startswith("TASK ["):
                task = line.rstrip("* ")
            elif line.startswith("changed:") and task:
                out.append(f"{task}: {line[:300]}")
        return out


class E2E:
    """One cluster's inventory, store and playbook runs."""

    def __init__(
        self, lab, tmp: Path, provider: str, description: dict, extra_vars: dict, store: dict | None = None,
        python: str | None = None, collections: Path | None = None,
    ):  # fmt: skip
        """``store``: the description's store option (default: a sqlite store of the test's own); ``python``: the
        venv whose ansible-playbook runs the playbooks and their modules (default: this one's); ``collections``:
        a collections path the galaxy artifact was installed into - the playbooks then run as a user runs them,
        ``baremetal.capi.<playbook>`` from there, with no ansible.cfg and no ``ANSIBLE_*`` setting but that
        path (default: the work tree's playbooks, with the repository's ansible.cfg)."""
        self.lab, self.tmp, self.provider = lab, tmp, provider
        self.python = python or sys.executable
        self.collections = collections
        self.name = description["name"]
        self.ns = description["namespace"]
        self.db = str(tmp / "state.db")
        self.store_option = store or {"kind": "sqlite", "path": self.db}
        self.kubeconfig = str(tmp / "workload.kubeconfig")
        inv = tmp / "inventory"
        (inv / "host_vars").mkdir(parents=True)
        (inv / "hosts.yml").write_text(yaml.safe_dump({"all": {"hosts": {self.name: None}}}))
        description = {**description, "store": self.store_option}
        # the lab's Nodes are NotReady until a CNI runs: every cluster gets the stand-in unless told otherwise
        description.setdefault("addons", [cni.ADDON])
        host_vars = {
            "ansible_connection": "local",
            "capi_cluster": description,
            "capi_round_delay": 1,
            "capi_wait_timeout": 600,
            "capi_kubeconfig_dest": self.kubeconfig,
            **extra_vars,
        }
        (inv / "host_vars" / f"{self.name}.yml").write_text(yaml.safe_dump(host_vars, sort_keys=False))
        self.host_vars = host_vars
        self.inventory = str(inv)
        if collections is None:
            self.env, self.cwd = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg")), REPO
        else:
            # ansible-core's defaults: no ANSIBLE_CONFIG (nor ./ansible.cfg: the run is outside the work tree)
            self.env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
            self.env["ANSIBLE_COLLECTIONS_PATH"] = str(collections)
            self.cwd = tmp

    def rewrite(self, description: dict) -> None:
        """A new description of the same cluster (the user editing the inventory)."""
        self.host_vars["capi_cluster"] = {**description, "store": {"kind": "sqlite", "path": self.db}}
        path = Path(self.inventory) / "host_vars" / f"{self.name}.yml"
        path.write_text(yaml.safe_dump(self.host_vars, sort_keys=False))

    def argv(self, playbook: str, extra: dict | None = None, check: bool = False) -> list[str]:
        argv = [str(Path(self.python).with_name("ansible-playbook")), "-i", self.inventory]
        if check:
            argv.append("--check")
        where = f"baremetal.capi.{Path(playbook).stem}" if self.collections else str(REPO / "playbooks" / playbook)
        argv += [where, "-e", json.dumps({"ansible_python_interpreter": self.python})]
        if extra:
            argv += ["-e", json.dumps(extra)]
        return argv

    def play(self, playbook: str, extra: dict | None = None, expect_ok: bool = True, check: bool = False) -> Run:
        argv = self.argv(playbook, extra, check)
        proc = subprocess.run(argv, cwd=self.cwd, env=self.env, capture_output=True, text=True)
        run = Run(proc)
        (self.tmp / f"{playbook}-{time.time():.0f}.log").write_text(run.out)
        if expect_ok:
            assert run.rc == 0, run.out[-8000:]
        return run

    def version(self) -> str:
        """``ansible-playbook --version`` of the venv that runs the playbooks."""
        argv = [str(Path(self.python).with_name("ansible-playbook")), "--version"]
        return subprocess.run(argv, cwd=self.cwd, env=self.env, capture_output=True, text=True).stdout

    def play_killed(self, playbook: str, extra: dict | None, after: float) -> str:
        """Start the playbook and kill -9 its whole process group (ours, by PID) after ``after`` seconds."""
        log = open(self.tmp / f"killed-{time.time():.0f}.log", "w")  # noqa: SIM115
        proc = subprocess.Popen(
            self.argv(playbook, extra), cwd=self.cwd, env=self.env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        try:
            proc.wait(timeout=after)
            outcome = f"finished before the kill (rc={proc.returncode})"
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            outcome = f"killed after {after:.1f}s"
        log.close()
        return outcome

    # -- what is there ---------------------------------------------------------------------------------------
    def store(self):
        return open_store(self.store_option)

    def machines(self) -> dict[str, dict]:
        s = self.store()
        try:
            return {m["metadata"]["name"]: m for m in s.list("Machine", self.ns)}
        finally:
            s.close()

    def workload_api(self):
        """A kubernetes ApiClient of the cluster's workload API server (the node simulator's)."""
        from kubernetes import config as kconfig

        if self.provider == "maas":
            text = Path(self.kubeconfig).read_text()
        else:
            import base64

            s = self.store()
            try:
                text = base64.b64decode(s.get("Secret", f"{self.name}-kubeconfig", self.ns)["data"]["value"]).decode()
            finally:
                s.close()
        return kconfig.new_client_from_config_dict(yaml.safe_load(text))

    def workload_nodes(self) -> dict[str, dict]:
        from kubernetes import client as k8s

        api = k8s.CoreV1Api(self.workload_api())
        out = {}
        for n in api.list_node().items:
            ready = next((c.status for c in n.status.conditions or [] if c.type == "Ready"), None)
            out[n.metadata.name] = {"providerID": n.spec.provider_id, "ready": ready, "labels": n.metadata.labels}
        return out


def prov_network(name: str, octet: int) -> dict:
    """A test cluster's provisioning network: an IPPool on the lab's ``LOOP.<octet>.0/24`` and the
    Metal3DataTemplate that gives enp1s0 an address from it."""
    return {
        "ip_pools": [{"name": f"{name}-prov", "spec": {"namePrefix": f"{name}-prov", "prefix": 24,
                      "pools": [{"start": f"{LOOP}.{octet}.100", "end": f"{LOOP}.{octet}.120"}]}}],
        "data_template": {"spec": {
            "metaData": {"strings": [{"key": "cluster", "value": name}]},
            "networkData": {
                "links": {"ethernets": [
                    {"type": "phy", "id": "enp1s0", "macAddress": {"fromHostInterface": "enp1s0"}}]},
                "networks": {"ipv4": [{"id": "prov", "link": "enp1s0", "ipAddressFromIPPool": f"{name}-prov"}]},
            },
        }},
    }  # fmt: skip


def metal3_description(name: str, ns: str, endpoint: str, inv: dict, octet: int, hosts: int = 4) -> dict:
    """A 1 control-plane + 1 worker Metal3 cluster on ``hosts`` fake-hardware lab hosts, addresses from one IPPool
    (127.0.<octet>.100-120) through ipAddressFromIPPool."""
    image = inv["images"]["test_image"]
    image = {k: image[k] for k in ("url", "checksum", "checksumType", "format")}
    host_list = []
    for i in range(hosts):
        mac = f"52:54:00:{int(name[1:3], 16):02x}:{int(name[3:5], 16):02x}:{i:02x}"
        host_list.append({
            "name": f"{name}-host-{i}",
            "spec": {"bmc": {"address": f"fake://{name}-host-{i}"}, "bootMACAddress": mac,
                     "automatedCleaningMode": "disabled", "inspectionMode": "disabled"},
            "hardware": {"hostname": f"{name}-host-{i}", "nics": [{"name": "enp1s0", "mac": mac,
                                                                      "ip": f"{LOOP}.{octet}.{10 + i}"}]},
        })  # fmt: skip
    return {
        "name": name,
        "namespace": ns,
        "provider": "metal3",
        "kubernetes_version": "v1.34.4",
        "control_plane_endpoint": {"host": endpoint, "port": 6443},
        "control_plane": {"replicas": 1, "image": image, "automated_cleaning_mode": "disabled"},
        "workers": [{"name": "md-0", "replicas": 1, "image": image, "automated_cleaning_mode": "disabled"}],
        **prov_network(name, octet),
        "hosts": host_list,
        # the user's own user data around what CABPK renders (cluster_machines renders it in its rounds)
        "kubeadm": {"user_data_template": "$kubeadm_user_data\n# baremetal.capi e2e: $role $namespace/$machine\n"},
    }  # fmt: skip


@pytest.fixture(scope="session")
def e2e_lab(lab):
    lab.need("kube", "ironic", "maas", "nodesim")
    maas = lab.info["maas"]
    before = requests.get(maas["control_url"] + "timings", timeout=30).json()
    requests.post(maas["control_url"] + "timings", json=MAAS_FAST, timeout=30).raise_for_status()
    yield lab
    try:
        requests.post(maas["control_url"] + "timings", json=before, timeout=30)
    except requests.RequestException:
        pass


@pytest.fixture
def ironic_inventory(e2e_lab):
    return lab_hosts.load_inventory(e2e_lab.cfg)


def new_names(prefix: str) -> tuple[str, str]:
    tag = uuid.uuid4().hex[:6]
    return f"{prefix}{tag}", f"e2e-{prefix}{tag}"
