"""Fixtures for the host driver tests: baremetal.capi.baremetalhost through ansible-playbook against the lab.

Each test works in its own namespace (Ironic nodes ``<namespace>~<host>``) with its own sqlite store, and
deletes the Ironic nodes of that namespace when it ends, so the lab's hosts are fresh for the next test.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import openstack
import pytest
import yaml

from ansible_collections.baremetal.capi.plugins.module_utils.store.sqlite import SqliteStore
from lab.config import REPO
from lab.ironic import hosts as lab_hosts


class HostLab:
    def driver_options(self) -> dict:
        """The ironic driver's lab option: Redfish hosts deploy with the ramdisk interface from the boot ISO."""
        return {"boot_iso": self.inv["images"]["boot_iso"]}

    def __init__(self, cfg, inventory: dict, tmp_path: Path):
        self.cfg = cfg
        self.inv = inventory
        self.ns = f"h{uuid.uuid4().hex[:8]}"
        self.tmp = tmp_path
        self.db = str(tmp_path / "state.db")
        self.store = SqliteStore(self.db)
        self.conn = openstack.connect(auth_type="none", baremetal_endpoint_override=inventory["ironic"]["url"])

    # -- ansible-playbook -------------------------------------------------------------------
    def play(
        self, tasks: list[dict], *flags: str, check: bool = False, expect_failure: bool = False, env: dict | None = None
    ) -> list[dict]:
        """Run the tasks on localhost (each registered); return every task's result.

        ``env``: extra environment; with OS_CLOUD in it the tasks get no ironic_url (clouds.yaml instead).
        """
        for i, task in enumerate(tasks):
            task.setdefault("register", f"r{i}")
            if expect_failure:
                task.setdefault("ignore_errors", True)
        results = self.tmp / "results.json"
        names = [t["register"] for t in tasks]
        play = [
            {
                "hosts": "localhost",
                "gather_facts": False,
                "module_defaults": {
                    "group/baremetal.capi.capi": {"store": {"path": self.db, "namespace": self.ns}},
                    "baremetal.capi.baremetalhost": {
                        "store": {"path": self.db, "namespace": self.ns},
                        **self.driver_options(),
                        "poll": 1,
                        **({} if "OS_CLOUD" in (env or {}) else {"ironic_url": self.inv["ironic"]["url"]}),
                    },
                    "baremetal.capi.baremetalhost_info": {"store": {"path": self.db, "namespace": self.ns}},
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
        path = self.tmp / "play.yml"
        path.write_text(yaml.safe_dump(play, sort_keys=False))
        extra_env = env or {}
        env = dict(os.environ)
        env.update(extra_env)
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
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-3000:]
        self.last_output = proc.stdout
        return json.loads(results.read_text())

    # -- what the lab sees -------------------------------------------------------------------------
    def host(self, i: int) -> dict:
        return self.inv["hosts"][i]

    def bmh_entry(self, i: int, **spec) -> dict:
        """A baremetalhost ``hosts`` entry for lab host i, Redfish virtual media through the fault proxy."""
        h = self.host(i)
        return {
            "name": h["name"],
            "spec": {
                "bmc": {"address": h["bmc"]["address"]},
                "bootMACAddress": h["boot_mac"],
                "online": False,
                "automatedCleaningMode": "disabled",  # no agent ramdisk in the lab
                "inspectionMode": "disabled",
                **spec,
            },
            "bmc_username": h["bmc"]["username"],
            "bmc_password": h["bmc"]["password"],
            "hardware": {"hostname": h["name"], "nics": [{"name": "eth0", "mac": h["boot_mac"], "ip": h["ip"]}]},
        }

    def wait_free(self, indices, timeout: float = 1800) -> None:
        """Wait until no Ironic node (another test's) has a port with these lab hosts' MACs.

        The lab's Redfish systems are shared by every suite; BMO's rule that a MAC belongs to one node
        would otherwise turn a concurrent run into registration errors.  A hang guard, not an assertion.
        """
        macs = {self.host(i)["boot_mac"] for i in indices}
        deadline = time.monotonic() + timeout
        while True:
            held = sorted(p.address for p in self.conn.baremetal.ports(fields=["address"]) if p.address in macs)
            if not held:
                return
            assert time.monotonic() < deadline, f"lab hosts still held by other tests: {held}"
            time.sleep(5)

    def node(self, name: str):
        try:
            return self.conn.baremetal.get_node(f"{self.ns}~{name}")
        except openstack.exceptions.NotFoundException:
            return None

    def bmh(self, name: str) -> dict:
        return self.store.get("BareMetalHost", name, self.ns)

    def system_power(self, i: int) -> str:
        """PowerState as the emulated BMC reports it (straight to sushy, past the fault proxy)."""
        token = base64.b64encode(f"{lab_hosts.BMC_USERNAME}:{lab_hosts.BMC_PASSWORD}".encode()).decode()
        req = urllib.request.Request(self.host(i)["system_url"], headers={"Authorization": f"Basic {token}"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.loads(resp.read())["PowerState"]

    def secret(self, name: str, **data) -> None:
        self.store.create(
            {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": self.ns}, "stringData": data}
        )

    def cleanup(self) -> None:
        """Delete the Ironic nodes of this test's namespace (whatever state they are in)."""
        bm = self.conn.baremetal
        deadline = time.monotonic() + 300
        while True:
            mine = [n for n in bm.nodes(fields=["uuid", "name"]) if (n.name or "").startswith(self.ns + "~")]
            if not mine:
                break
            for n in mine:
                try:
                    node = bm.get_node(n.id)
                    if node.target_provision_state and time.monotonic() < deadline:
                        continue
                    if node.provision_state not in ("enroll", "manageable", "available") and not node.is_maintenance:
                        bm.set_node_maintenance(node, reason="test cleanup")
                    bm.delete_node(node)
                except openstack.exceptions.SDKException:
                    pass
            if time.monotonic() > deadline + 60:
                break
            time.sleep(1)
        self.store.close()
        self.conn.close()


@pytest.fixture(scope="session")
def ironic_lab_inventory(lab):
    lab.need("ironic")
    return lab_hosts.load_inventory(lab.cfg)


@pytest.fixture
def hostlab(lab, ironic_lab_inventory, tmp_path):
    from lab.ironic import faults

    it = HostLab(lab.cfg, ironic_lab_inventory, tmp_path)
    try:
        yield it
    finally:
        faults.clear(lab.cfg)
        it.cleanup()
