"""Fixtures for the remediation lab tests: the Metal3Machine lab world (tests/integration/metal3_machine), the
node simulator with fast lifecycle timings, a sampler of a BMC's power as the emulator reports it, and Nodes
re-registered as a kubelet does.

The Metal3 world is the metal3_machine tests' ``MachineLab`` (its own namespace, sqlite store, workload endpoint
and ansible-playbook runner), loaded from that folder so the two stay one thing.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from lab.ironic import hosts as lab_hosts
from lab.nodesim import client as nodesim

_spec = importlib.util.spec_from_file_location(
    "metal3_machine_lab", Path(__file__).resolve().parent.parent / "metal3_machine" / "conftest.py"
)
m3lab = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(m3lab)

eventually = m3lab.eventually
# Fast node-lifecycle timings for the run (the nodesim tests use the same)
TIMINGS = {"grace": 4.0, "lease_renew": 1.0, "status_report": 30.0, "poll": 1.0}


@pytest.fixture(scope="session")
def machine_lab_inventory(lab):
    lab.need("kube", "ironic", "nodesim")
    before = nodesim.status(lab.cfg)["timings"]
    nodesim.set_timings(lab.cfg, **TIMINGS)
    yield lab_hosts.load_inventory(lab.cfg)
    nodesim.set_timings(lab.cfg, **{k: before[k] for k in TIMINGS})


endpoint = m3lab.endpoint


@pytest.fixture
def mlab(lab, machine_lab_inventory, tmp_path, endpoint):
    it = m3lab.MachineLab(lab.cfg, machine_lab_inventory, tmp_path, endpoint)
    try:
        yield it
    finally:
        it.cleanup()


def free_redfish_hosts(ml, count: int, patience: float = 900) -> list[dict]:
    """Lab Redfish hosts no Ironic node uses now; other tests share the lab, so wait for them to give some back."""

    def free():
        used = {p.address.lower() for p in ml.conn.baremetal.ports()}
        found = [h for h in ml.inv["hosts"] if h["boot_mac"].lower() not in used]
        return found[:count] if len(found) >= count else None

    return eventually(free, f"{count} free lab Redfish hosts (other tests hold them)", patience=patience)


def redfish_entry(h: dict, **labels) -> dict:
    """A baremetalhost ``hosts`` entry for a lab Redfish host (virtual media through the fault proxy)."""
    return {
        "name": h["name"],
        "spec": {
            "bmc": {"address": h["bmc"]["address"]},
            "bootMACAddress": h["boot_mac"],
            "online": False,
            "automatedCleaningMode": "disabled",
            "inspectionMode": "disabled",
        },
        "labels": labels or None,
        "bmc_username": h["bmc"]["username"],
        "bmc_password": h["bmc"]["password"],
        "hardware": {"hostname": h["name"], "nics": [{"name": "eth0", "mac": h["boot_mac"], "ip": h["ip"]}]},
    }


def bmc_power(h: dict) -> str:
    """PowerState as the emulated BMC reports it (straight to sushy-tools, past the fault proxy)."""
    token = base64.b64encode(f"{lab_hosts.BMC_USERNAME}:{lab_hosts.BMC_PASSWORD}".encode()).decode()
    req = urllib.request.Request(h["system_url"], headers={"Authorization": f"Basic {token}"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())["PowerState"]


class PowerHistory:
    """Samples a power reading every 0.3 s in a thread and keeps the distinct successive values."""

    def __init__(self, read):
        self.read = read
        self.values: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            try:
                value = self.read()
            except OSError:
                value = None
            if value is not None and (not self.values or self.values[-1] != value):
                self.values.append(value)
            time.sleep(0.3)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(timeout=5)

    def offs(self) -> int:
        return sum(1 for v in self.values if v.lower() == "off")


def reregister(core, old: dict) -> None:
    """What a kubelet does when it starts and its Node object is gone: register it again (name, its own labels).

    The node simulator does not re-register a deleted Node; a rebooted kubelet does.
    """
    labels = {k: v for k, v in (old["metadata"].get("labels") or {}).items() if k.startswith("kubernetes.io/")}
    labels.update({k: v for k, v in old["metadata"]["labels"].items() if k == "metal3.io/uuid"})
    body = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": old["metadata"]["name"], "labels": labels}}
    core.create_node(body)
    core.patch_node_status(
        old["metadata"]["name"],
        {"status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": ""}]}},
    )


# The MAAS world: the MAAS tests' simulator client, ansible-playbook runner and fixtures (tests/integration/maas)
from tests.integration.maas.conftest import Play, Sim, maas_lab, maas_sim_lab, play, sim, tag  # noqa: E402, F401


def run_playbook(book: str, tmp: Path, extra_vars: dict, registered: list[str], *flags: str, background=False):
    """ansible-playbook on one of the collection's playbooks (as an AWX job would run it), then a second play
    that saves the named registered variables to a file: returns ``(proc, read)`` where ``read()`` gives
    ``(returncode, {name: result}, output)`` once it ends."""
    import os
    import subprocess
    import sys
    import uuid

    import yaml

    from lab.config import REPO

    out_file = tmp / f"registered-{uuid.uuid4().hex[:6]}.json"
    content = "{{ {" + ", ".join(f"'{n}': ({n} | default(None))" for n in registered) + "} | to_json }}"
    wrapper = [
        {"import_playbook": str(REPO / "playbooks" / book)},
        {
            "name": "Save the results",
            "hosts": "localhost",
            "gather_facts": False,
            "tasks": [
                {
                    "name": "Save",
                    "ansible.builtin.copy": {"content": content, "dest": str(out_file)},
                    "check_mode": False,
                }
            ],
        },
    ]
    path = tmp / f"wrapper-{uuid.uuid4().hex[:6]}.yml"
    path.write_text(yaml.safe_dump(wrapper, sort_keys=False))
    env = dict(
        os.environ,
        ANSIBLE_COLLECTIONS_PATH=str(REPO / "build"),
        ANSIBLE_LOCALHOST_WARNING="False",
        ANSIBLE_INVENTORY_UNPARSED_WARNING="False",
    )
    argv = [
        str(Path(sys.executable).with_name("ansible-playbook")),
        str(path),
        "-e",
        json.dumps({"ansible_python_interpreter": sys.executable, **extra_vars}),
        *flags,
    ]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def read(timeout=1800):
        out, err = proc.communicate(timeout=timeout)
        results = json.loads(out_file.read_text()) if out_file.exists() else {}
        return proc.returncode, results, out[-6000:] + err[-3000:]

    return proc, read
