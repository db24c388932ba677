"""Fixtures for the Metal3Machine integration tests: ansible-playbook against the lab (Ironic, node simulator).

Each test works in its own namespace with its own sqlite store and its own
workload cluster endpoint (a loopback address of its own); the Ironic nodes of
its namespace are deleted when it ends.  Hosts are fake-hardware (``fake://``)
lab hosts unless a test says otherwise; the node simulator plays cloud-init,
kubeadm and the kubelet on every deployed host.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
import uuid
from pathlib import Path

import openstack
import pytest
import yaml

from ansible_collections.baremetal.capi.plugins.module_utils.bootstrap import kubeadm as cabpk
from ansible_collections.baremetal.capi.plugins.module_utils.bootstrap import pki
from ansible_collections.baremetal.capi.plugins.module_utils.store.sqlite import SqliteStore
from lab import process
from lab.config import REPO
from lab.ironic import hosts as lab_hosts
from tests.integration.net import LOOP

K8S_VERSION = "v1.34.4"
INFRA = "infrastructure.cluster.x-k8s.io"
# How long to wait for the lab before calling it broken (not a timing assertion).
PATIENCE = 300.0


def eventually(check, what: str, patience: float = PATIENCE):
    deadline = time.monotonic() + patience
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not after {patience:.0f}s")
        time.sleep(0.5)


class MachineLab:
    """One test's world: namespace, store, cluster CA, workload endpoint, and ansible-playbook."""

    def __init__(self, cfg, inventory: dict, tmp_path: Path, endpoint: str):
        self.cfg = cfg
        self.inv = inventory
        self.ns = f"m{uuid.uuid4().hex[:8]}"
        self.cluster = f"c{uuid.uuid4().hex[:5]}"
        self.tmp = tmp_path
        self.db = str(tmp_path / "state.db")
        self.store = SqliteStore(self.db)
        self.conn = openstack.connect(auth_type="none", baremetal_endpoint_override=inventory["ironic"]["url"])
        self.endpoint = endpoint
        host, port = endpoint.split(":")
        self.cluster_obj = {
            "metadata": {"name": self.cluster, "namespace": self.ns},
            "spec": {
                "controlPlaneEndpoint": {"host": host, "port": int(port)},
                "clusterNetwork": {"pods": {"cidrBlocks": ["192.168.0.0/16"]}, "serviceDomain": "cluster.local"},
            },
        }
        self.certs = {}
        for suffix in ("ca", "etcd", "proxy"):
            crt, key = pki.new_ca()
            self.certs[suffix] = {"crt": crt, "key": key}
        pub, key = pki.new_service_account_keys()
        self.certs["sa"] = {"crt": pub, "key": key}
        self.kubeconfig = pki.admin_kubeconfig(
            self.cluster, f"https://{endpoint}", self.certs["ca"]["crt"], self.certs["ca"]["key"]
        )
        self.token = pki.new_token()

    # -- bootstrap data, as CABPK would render it -----------------------------------------------
    def kubeadm_spec(self) -> dict:
        # The Metal3 templates' kubelet arguments: the host's uid as a Node label, no provider-id,
        # so that the providerID is the collection's to set (CAPM3 baremetal/metal3machine_manager.go SetProviderID).
        reg = {
            "name": "{{ ds.meta_data.local_hostname }}",
            "kubeletExtraArgs": [{"name": "node-labels", "value": "metal3.io/uuid={{ ds.meta_data.uuid }}"}],
        }
        return {
            "initConfiguration": {"nodeRegistration": dict(reg)},
            "joinConfiguration": {"nodeRegistration": dict(reg)},
        }

    def init_data(self) -> str:
        return cabpk.render_init(self.cluster_obj, self.kubeadm_spec(), K8S_VERSION, self.certs)

    def join_data(self, control_plane: bool = False) -> str:
        return cabpk.render_join(
            self.cluster_obj, self.kubeadm_spec(), K8S_VERSION, self.certs, self.token, control_plane
        )

    # -- objects ------------------------------------------------------------------------------
    def obj(self, kind: str, name: str, spec: dict, api: str, **metadata) -> dict:
        md = {"name": name, "namespace": self.ns, **metadata}
        return {"apiVersion": api, "kind": kind, "metadata": md, "spec": spec}

    def secret(self, name: str, value: str, **extra) -> dict:
        return {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name, "namespace": self.ns},
            "type": "cluster.x-k8s.io/secret",
            "stringData": {"value": value, **extra},
        }

    def fake_host(self, i: int, **labels) -> dict:
        """A baremetalhost ``hosts`` entry for a lab fake-hardware host (no BMC; HardwareData given)."""
        mac = f"52:54:00:{int(self.ns[1:3], 16):02x}:{int(self.ns[3:5], 16):02x}:{i:02x}"
        return {
            "name": f"host-{i}",
            "spec": {
                "bmc": {"address": f"fake://host-{i}"},
                "bootMACAddress": mac,
                "online": False,
                "automatedCleaningMode": "disabled",
                "inspectionMode": "disabled",
            },
            "labels": labels or None,
            "hardware": {
                "hostname": f"host-{i}",
                "nics": [{"name": "enp1s0", "mac": mac, "ip": f"{LOOP}.4.{10 + i}"}],
            },
        }

    def redfish_host(self, i: int) -> dict:
        """A baremetalhost ``hosts`` entry for lab host i: Redfish virtual media through the fault proxy."""
        h = self.inv["hosts"][i]
        return {
            "name": h["name"],
            "spec": {
                "bmc": {"address": h["bmc"]["address"]},
                "bootMACAddress": h["boot_mac"],
                "online": False,
                "automatedCleaningMode": "disabled",  # no agent ramdisk in the lab
                "inspectionMode": "disabled",
            },
            "bmc_username": h["bmc"]["username"],
            "bmc_password": h["bmc"]["password"],
            "hardware": {"hostname": h["name"], "nics": [{"name": "enp1s0", "mac": h["boot_mac"], "ip": h["ip"]}]},
        }

    # -- ansible-playbook ---------------------------------------------------------------------------
    def play(self, tasks: list[dict], *flags: str, check: bool = False, expect_failure: bool = False) -> list[dict]:
        """Run the tasks on localhost (each registered); return every task's result."""
        for i, task in enumerate(tasks):
            task.setdefault("register", f"r{i}")
            if expect_failure:
                task.setdefault("ignore_errors", True)
        results = self.tmp / "results.json"
        names = [t["register"] for t in tasks]
        store = {"path": self.db, "namespace": self.ns}
        driver = {"ironic_url": self.inv["ironic"]["url"], "boot_iso": self.inv["images"]["boot_iso"], "poll": 1}
        play = [
            {
                "hosts": "localhost",
                "gather_facts": False,
                "module_defaults": {
                    "group/baremetal.capi.capi": {"store": store},
                    "baremetal.capi.baremetalhost": {"store": store, **driver},
                    "baremetal.capi.metal3_machine": {
                        "store": store,
                        "host_driver_options": driver,
                        "wait_sleep": 1,
                        "no_host_retry": 2,
                        "wait_timeout": 600,
                    },
                },
                "tasks": tasks
                + [
                    {
                        "ansible.builtin.copy": {
                            "content": "{{ [" + ", ".join(names) + "] | to_json }}",
                            "dest": str(results),
                        },
                        "check_mode": False,
                    }
                ],
            }
        ]
        path = self.tmp / f"play-{uuid.uuid4().hex[:6]}.yml"
        path.write_text(yaml.safe_dump(play, sort_keys=False))
        env = dict(os.environ)
        env.update(
            ANSIBLE_COLLECTIONS_PATH=str(REPO / "build"),
            ANSIBLE_LOCALHOST_WARNING="False",
            ANSIBLE_INVENTORY_UNPARSED_WARNING="False",
        )
        argv = [str(Path(sys.executable).with_name("ansible-playbook")), str(path)]
        argv += ["-e", json.dumps({"ansible_python_interpreter": sys.executable})]
        if check:
            argv.append("--check")
        proc = subprocess.run(argv + list(flags), env=env, capture_output=True, text=True, check=False)
        assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
        self.last_output = proc.stdout
        return json.loads(results.read_text())

    # -- what the lab sees --------------------------------------------------------------------------
    def node(self, host: str):
        try:
            return self.conn.baremetal.get_node(f"{self.ns}~{host}")
        except openstack.exceptions.NotFoundException:
            return None

    def workload(self):
        from kubernetes import client as k
        from kubernetes import config as kconfig

        return k.CoreV1Api(kconfig.new_client_from_config_dict(yaml.safe_load(self.kubeconfig)))

    def cleanup(self) -> None:
        """Delete the Ironic nodes of this test's namespace (whatever state they are in)."""
        bm = self.conn.baremetal
        deadline = time.monotonic() + 300
        while True:
            mine = [n for n in bm.nodes(fields=["uuid", "name"]) if (n.name or "").startswith(self.ns + "~")]
            if not mine or time.monotonic() > deadline:
                break
            for n in mine:
                try:
                    node = bm.get_node(n.id)
                    if node.target_provision_state:
                        continue
                    if node.provision_state == "active":
                        bm.set_node_provision_state(node, "deleted")
                        continue
                    if node.provision_state not in ("enroll", "manageable", "available") and not node.is_maintenance:
                        bm.set_node_maintenance(node, reason="test cleanup")
                    bm.delete_node(node)
                except openstack.exceptions.SDKException:
                    pass
            time.sleep(1)
        self.store.close()
        self.conn.close()


@pytest.fixture(scope="session")
def machine_lab_inventory(lab):
    lab.need("kube", "ironic", "nodesim")
    return lab_hosts.load_inventory(lab.cfg)


@pytest.fixture
def endpoint():
    """A free controlPlaneEndpoint on a loopback address of its own, kubeadm's default port."""
    for _ in range(50):
        host = f"{LOOP}.5.{random.randint(2, 250)}"
        if not process.port_open(host, 6443):
            return f"{host}:6443"
    pytest.fail("no free 127.0.5.x:6443")


@pytest.fixture
def mlab(lab, machine_lab_inventory, tmp_path, endpoint):
    it = MachineLab(lab.cfg, machine_lab_inventory, tmp_path, endpoint)
    try:
        yield it
    finally:
        it.cleanup()
