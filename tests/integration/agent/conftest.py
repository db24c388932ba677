"""Fixtures of the agent-path tests: lab Redfish hosts whose ramdisk is a real ironic-python-agent.

The hosts are registered as baremetal-operator registers them (agent inspection, automated cleaning in
metadata mode, the agent ISO as ``deploy_iso``), and the node simulator runs the agent of each host that boots
it (lab/nodesim/agent.py) on a loop-device disk of that host.
"""

from __future__ import annotations

import hashlib
import subprocess
import urllib.request

import pytest

from lab.ironic import hosts as lab_hosts
from lab.nodesim import agent
from tests.integration.hosts.conftest import HostLab


class AgentLab(HostLab):
    def driver_options(self) -> dict:
        # BMO's DEPLOY_ISO_URL: the agent ramdisk as virtual media; no boot_iso, so images deploy with `direct`
        return {"deploy_iso": self.inv["images"]["ipa_iso"]}

    def agent_entry(self, i: int, **spec) -> dict:
        """A baremetalhost entry as a user writes one for BMO: inspection and cleaning left at their defaults."""
        h = self.host(i)
        return {
            "name": h["name"],
            "spec": {"bmc": {"address": h["bmc"]["address"]}, "bootMACAddress": h["boot_mac"], "online": False, **spec},
            "bmc_username": h["bmc"]["username"],
            "bmc_password": h["bmc"]["password"],
        }

    def disk(self, i: int) -> str:
        """The loop device of lab host i (attached by the simulator when the host first booted the agent)."""
        dev = agent.loop_of(agent.disk_file(self.cfg, self.host(i)["name"]))
        assert dev, f"{self.host(i)['name']} has no disk attached"
        return dev

    def image_on_disk(self, i: int, image: dict) -> bool:
        """The image (whose bytes match its checksum) is on host i's disk.

        Compared past the GPT at both ends: to add its config-drive partition IPA rewrites the primary
        table and moves the backup one to the end of the disk, as on any host.
        """
        with urllib.request.urlopen(image["url"], timeout=60) as resp:
            data = resp.read()
        assert hashlib.new(image.get("checksumType") or "sha256", data).hexdigest() == image["checksum"]
        with open(self.disk(i), "rb") as fh:
            on_disk = fh.read(len(data))
        gpt = 34 * 512
        return on_disk[gpt : len(data) - gpt] == data[gpt : len(data) - gpt]

    def partition_table(self, i: int) -> str:
        """`sgdisk -p` of the host's disk (what partitions the kernel would see)."""
        return subprocess.run(["sgdisk", "-p", self.disk(i)], capture_output=True, text=True, check=False).stdout

    def agents(self) -> list[str]:
        return agent.running_names(self.cfg)


@pytest.fixture(scope="session")
def agent_lab_inventory(lab):
    lab.need("ironic", "nodesim")
    return lab_hosts.load_inventory(lab.cfg)


@pytest.fixture
def agentlab(lab, agent_lab_inventory, tmp_path):
    from lab.ironic import faults

    it = AgentLab(lab.cfg, agent_lab_inventory, tmp_path)
    try:
        yield it
    finally:
        faults.clear(lab.cfg)
        it.cleanup()
