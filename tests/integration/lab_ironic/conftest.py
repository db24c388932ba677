"""Fixtures for the lab's Ironic + Redfish tests: the running lab, openstacksdk, node bookkeeping.

Tests register the lab hosts they use and delete those Ironic nodes when they end, so
the next test (of this or another suite) finds the hosts fresh.
"""

from __future__ import annotations

import threading
import time
import uuid
from urllib.parse import urlsplit

import openstack
import pytest

from lab.ironic import faults, hosts

# hang guards only, never asserted on: sushy-tools applies power changes after 1-11 s
DEPLOY_TIMEOUT = 600
FAILED_STATES = {"deploy failed", "clean failed", "error", "inspect failed", "adopt failed", "service failed"}


class IronicLab:
    def __init__(self, cfg, inventory: dict):
        self.cfg = cfg
        self.inventory = inventory
        self.url = inventory["ironic"]["url"]
        self._local = threading.local()
        self.created: list[str] = []
        self.run = uuid.uuid4().hex[:6]

    def conn(self):
        """One openstacksdk connection per thread (a keystoneauth session is not shared safely)."""
        c = getattr(self._local, "conn", None)
        if c is None:
            c = openstack.connect(auth_type="none", baremetal_endpoint_override=self.url)
            self._local.conn = c
        return c

    @property
    def baremetal(self):
        return self.conn().baremetal

    def host(self, index: int) -> dict:
        return self.inventory["hosts"][index]

    def free_hosts(self, count: int) -> list[dict]:
        """Lab hosts no Ironic node holds (by boot MAC): the shared lab may have other users' nodes."""
        used = {p.address for p in self.baremetal.ports(fields=["address"])}
        free = [h for h in self.inventory["hosts"] if h["boot_mac"] not in used]
        assert len(free) >= count, f"need {count} free lab hosts, {len(free)} free: {[h['name'] for h in free]}"
        return free[:count]

    def register_redfish(self, host: dict, name: str | None = None):
        """Create the node and its boot port from the inventory, as baremetal-operator registers a host."""
        bmc = host["bmc"]
        scheme, _, url = bmc["address"].partition("+")
        assert scheme == "redfish-virtualmedia"
        parts = urlsplit(url)
        node = self.baremetal.create_node(
            name=name or f"t{self.run}-{host['name']}",
            driver="redfish",
            driver_info={
                "redfish_address": f"{parts.scheme}://{parts.netloc}",
                "redfish_system_id": parts.path,
                "redfish_username": bmc["username"],
                "redfish_password": bmc["password"],
            },
            boot_interface="redfish-virtual-media",
            deploy_interface="ramdisk",
            automated_clean=False,
            properties={"cpu_arch": "x86_64", "capabilities": "boot_mode:uefi"},
        )
        self.created.append(node.id)
        self.baremetal.create_port(node_id=node.id, address=host["boot_mac"], pxe_enabled=True)
        return node

    def register_fake(self, name: str, mac: str):
        """A lab-only fake:// host: an Ironic fake-hardware node (docs/lab.md)."""
        node = self.baremetal.create_node(
            name=name, driver="fake-hardware", properties={"cpu_arch": "x86_64"}, automated_clean=False
        )
        self.created.append(node.id)
        self.baremetal.create_port(node_id=node.id, address=mac, pxe_enabled=True)
        return node

    def wait(self, node_id: str, target: str, timeout: float = DEPLOY_TIMEOUT, fail_ok: bool = False):
        """Poll until provision_state is target; a failure state raises unless it is the target."""
        deadline = time.monotonic() + timeout
        while True:
            node = self.baremetal.get_node(node_id)
            # a failure state keeps its target (deploy failed -> active)
            if node.provision_state == target and (not node.target_provision_state or target in FAILED_STATES):
                return node
            if node.provision_state in FAILED_STATES and node.provision_state != target and not fail_ok:
                raise AssertionError(f"node {node.name}: {node.provision_state}: {self.error_of(node)}")
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"node {node.name} still {node.provision_state} -> {node.target_provision_state} "
                    f"after {timeout}s: {self.error_of(node)}"
                )
            time.sleep(1)

    def wait_stable(self, node_id: str, timeout: float = DEPLOY_TIMEOUT):
        """Poll until no provision-state transition is in flight."""
        deadline = time.monotonic() + timeout
        while True:
            node = self.baremetal.get_node(node_id)
            if not node.target_provision_state:
                return node
            if time.monotonic() > deadline:
                raise AssertionError(f"node {node.name} still {node.provision_state} after {timeout}s")
            time.sleep(1)

    def history_errors(self, node_id: str) -> list[str]:
        resp = self.baremetal.get(f"/nodes/{node_id}/history", microversion="1.78")
        resp.raise_for_status()
        events = sorted(resp.json()["history"], key=lambda e: e["created_at"])
        return [e["event"] for e in events if e["severity"] == "ERROR"]

    def error_of(self, node) -> str | None:
        """last_error, else the newest error in the node's history (Ironic may clear last_error on clean-up)."""
        if node.last_error:
            return node.last_error
        errors = self.history_errors(node.id)
        return errors[-1] if errors else None

    def delete_created(self):
        bm = self.baremetal
        for node_id in self.created:
            try:
                node = self.wait_stable(node_id, timeout=300)
                if node.provision_state in ("active", "deploy failed"):
                    # undeploy, so the host is left off with empty virtual media for whoever is next
                    try:
                        bm.set_node_provision_state(node_id, "deleted")
                        node = self.wait_stable(node_id, timeout=300)
                    except openstack.exceptions.SDKException:
                        pass
                if node.provision_state not in ("enroll", "manageable", "available"):
                    bm.set_node_maintenance(node_id, reason="test cleanup")
                bm.delete_node(node_id)
            except openstack.exceptions.NotFoundException:
                pass
        self.created.clear()


@pytest.fixture(scope="session")
def ironic_inventory(lab):
    lab.need("ironic")
    return hosts.load_inventory(lab.cfg)


@pytest.fixture
def ironic(lab, ironic_inventory):
    it = IronicLab(lab.cfg, ironic_inventory)
    try:
        yield it
    finally:
        faults.clear(lab.cfg)
        it.delete_created()
