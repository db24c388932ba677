"""An IPMI host on the agent path: the lab's host-13 behind virtualbmc (``ipmi://127.A.11.13:<ports.ipmi>``), driven by
Ironic's ipmi hardware type through the real ipmitool, network-booting the real ironic-python-agent with iPXE.

The host is registered as baremetal-operator registers an ``ipmi://`` BMC (driver ``ipmi``, boot interface
``ipxe``, raid ``no-raid``, ``ipmi_address`` / ``ipmi_port`` / ``ipmi_priv_level``, the deploy kernel and ramdisk in
``driver_info`` and not the deploy ISO it was also given: an IPMI BMC has no virtual media), inspected by the agent,
powered on and off from ``spec.online``, provisioned with a whole-disk image (cleaning, the direct deploy, the
config drive on its disk) and deprovisioned. Asserted on the BareMetalHost, the Ironic node, what the BMC itself was
asked (virtualbmc's events: boot device, power), the machine's state in the emulator, ipmitool run by hand, the
firmware's network boots (the node simulator) and the host's disk.
"""

from __future__ import annotations

import json

import pytest

from lab.ironic import hosts as lab_hosts
from lab.ironic import ipmi, iso
from lab.nodesim import agent
from lab.nodesim import client as nodesim

from .conftest import AgentLab

pytestmark = pytest.mark.timeout(1800)

IPMI = 12  # inventory index of host-13: after the 12 Redfish hosts


class IpmiLab(AgentLab):
    def driver_options(self) -> dict:
        # all three of BMO's DEPLOY_*_URL: an IPMI host must get the kernel and ramdisk, not the ISO
        images = self.inv["images"]
        return {
            "deploy_kernel": images["ipa_kernel"],
            "deploy_ramdisk": images["ipa_ramdisk"],
            "deploy_iso": images["ipa_iso"],
        }

    def host(self, i: int) -> dict:
        return (self.inv["hosts"] + self.inv["ipmi_hosts"])[i]

    def lab_host(self) -> lab_hosts.Host:
        return next(h for h in lab_hosts.ipmi_hosts(net=self.cfg.net(1)) if h.name == self.host(IPMI)["name"])

    def events(self, since: int = 0) -> list[tuple[str, str | None]]:
        """(command, argument) the BMC carried out, from event number ``since`` on."""
        return [(e["command"], e["argument"]) for e in ipmi.events(self.cfg, self.lab_host())[since:]]

    def event_count(self) -> int:
        return len(ipmi.events(self.cfg, self.lab_host()))

    def boot_target(self) -> str:
        return (self.system()["Boot"] or {}).get("BootSourceOverrideTarget")

    def system(self) -> dict:
        return iso.bmc_get(self.cfg, f"/redfish/v1/Systems/{self.host(IPMI)['uuid']}")

    def ipmitool(self, *args: str, **kw):
        return ipmi.ipmitool(self.cfg, self.lab_host(), *args, **kw)


@pytest.fixture
def ipmilab(lab, agent_lab_inventory, tmp_path):
    from lab.ironic import faults

    it = IpmiLab(lab.cfg, agent_lab_inventory, tmp_path)
    try:
        yield it
    finally:
        faults.clear(lab.cfg)
        it.cleanup()


def play_online(il, entry: dict, online: bool) -> dict:
    (res,) = il.play(
        [
            {
                "baremetal.capi.baremetalhost": {
                    "hosts": [dict(entry, spec={**entry["spec"], "online": online})],
                    "wait": True,
                }
            }
        ]
    )
    return res


def test_ipmi_host_registered_inspected_and_powered_through_ipmitool(ipmilab):
    il = ipmilab
    il.wait_free([IPMI])
    h = il.host(IPMI)
    assert h["name"] == "host-13" and h["bmc"]["address"] == "ipmi://{}:{}".format(
        *lab_hosts.ipmi_bmc(il.cfg, il.lab_host())
    )
    entry = il.agent_entry(IPMI)
    start = il.event_count()
    task = {"baremetal.capi.baremetalhost": {"hosts": [entry], "wait": True}}
    (planned,) = il.play([task], check=True)
    assert planned["changed"] is True and il.node(h["name"]) is None  # check mode: nothing registered
    (reg,) = il.play([task])
    assert reg["hosts"][0]["state"] == "available", reg

    # registered as BMO registers an ipmi:// BMC (bmc/ipmi.go), with the deploy kernel and ramdisk
    node = il.node(h["name"])
    address, port = lab_hosts.ipmi_bmc(il.cfg, il.lab_host())
    assert node.driver == "ipmi" and node.boot_interface == "ipxe" and node.raid_interface == "no-raid"
    assert node.power_interface == "ipmitool" and node.management_interface == "ipmitool"
    info = node.driver_info
    assert (info["ipmi_address"], info["ipmi_port"], info["ipmi_priv_level"]) == (address, str(port), "ADMINISTRATOR")
    assert info["ipmi_username"] == "admin" and info["ipmi_password"] == "******"  # Ironic masks it
    assert info["deploy_kernel"] == il.inv["images"]["ipa_kernel"]
    assert info["deploy_ramdisk"] == il.inv["images"]["ipa_ramdisk"]
    assert "deploy_iso" not in info
    assert node.inspect_interface == "agent" and node.is_automated_clean_enabled is True

    # inspected by the agent the host network-booted: its inventory is the emulated machine's
    hw = il.bmh(h["name"])["status"]["hardware"]
    assert [n["mac"] for n in hw["nics"]] == [h["boot_mac"]] and hw["nics"][0]["name"] == lab_hosts.NIC_NAME
    assert hw["cpu"]["count"] == lab_hosts.CPU["count"] and hw["ramMebibytes"] == lab_hosts.MEMORY_MIB
    assert hw["storage"][0]["serialNumber"] == lab_hosts.disk_serial(IPMI + 1) and hw["hostname"] == h["name"]
    # what the BMC was asked: PXE as the boot device, then power on (the agent), then off again
    seen = il.events(start)
    assert ("set_boot_device", "network") in seen, seen
    on = seen.index(("power_on", None))
    assert seen.index(("set_boot_device", "network")) < on < seen.index(("power_off", None)), seen
    netboot = nodesim.status(il.cfg)["agents"][h["name"]]["netboot"]
    assert netboot["kind"] == "kernel" and netboot["agent"] is True, netboot
    assert netboot["kernel"].endswith(f"/{node.id}/deploy_kernel"), netboot  # the kernel Ironic cached for the node

    # spec.online: Ironic powers the host on and off through ipmitool; the BMC carries it out on the machine
    assert il.system()["PowerState"] == "Off" and node.power_state == "power off"
    start = il.event_count()
    res = play_online(il, entry, True)
    assert res["hosts"][0]["state"] == "available" and il.bmh(h["name"])["status"]["poweredOn"] is True
    assert il.system()["PowerState"] == "On" and il.node(h["name"]).power_state == "power on"
    assert ("power_on", None) in il.events(start), il.events(start)
    # ipmitool by hand: the same BMC, the same machine
    out = il.ipmitool("chassis", "power", "status")
    assert out.returncode == 0 and out.stdout.strip() == "Chassis Power is on", out
    start = il.event_count()
    res = play_online(il, entry, False)
    assert il.bmh(h["name"])["status"]["poweredOn"] is False
    assert il.system()["PowerState"] == "Off" and il.node(h["name"]).power_state == "power off"
    # BMO's power-off is soft first (Ironic's "soft power off": ipmitool's "power soft", an ACPI shutdown request)
    assert ("power_shutdown", None) in il.events(start), il.events(start)
    assert il.ipmitool("chassis", "power", "status").stdout.strip() == "Chassis Power is off"
    # the BMC refuses a wrong password (RMCP+ authentication), as a real one does
    wrong = il.ipmitool("chassis", "power", "status", password="not-the-password")
    assert wrong.returncode != 0 and "Chassis Power" not in wrong.stdout, wrong
    # converged: again changes nothing
    (again,) = il.play(
        [
            {
                "baremetal.capi.baremetalhost": {
                    "hosts": [dict(entry, spec={**entry["spec"], "online": False})],
                    "wait": True,
                }
            }
        ]
    )
    assert again["changed"] is False, again


def test_ipmi_host_provisioned_and_deprovisioned_on_the_agent_path(ipmilab):
    il = ipmilab
    il.wait_free([IPMI])
    h = il.host(IPMI)
    (reg,) = il.play([{"baremetal.capi.baremetalhost": {"hosts": [il.agent_entry(IPMI)], "wait": True}}])
    assert reg["hosts"][0]["state"] == "available", reg
    image = il.inv["images"]["agent_image"]
    name = h["name"]
    il.secret(f"{name}-userdata", userData=f"#cloud-config\nhostname: {name}\n")
    links = [{"id": "enp1s0", "type": "phy", "ethernet_mac_address": h["boot_mac"]}]
    il.secret(f"{name}-networkdata", networkData=json.dumps({"links": links, "networks": [], "services": []}))
    spec = {
        "online": True,
        "image": {k: image[k] for k in ("url", "checksum", "checksumType", "format")},
        "userData": {"name": f"{name}-userdata", "namespace": il.ns},
        "networkData": {"name": f"{name}-networkdata", "namespace": il.ns},
    }
    start = il.event_count()
    (prov,) = il.play([{"baremetal.capi.baremetalhost": {"hosts": [{"name": name, "spec": spec}], "wait": True}}])
    assert prov["hosts"][0]["state"] == "provisioned", prov

    node = il.node(name)
    assert node.provision_state == "active" and node.deploy_interface == "direct"
    assert (
        node.instance_info["image_source"] == image["url"]
        and node.instance_info["image_os_hash_value"] == image["checksum"]
    )
    # the agent wrote the image and the config drive to the host's disk
    assert il.image_on_disk(IPMI, image)
    part = agent.config_drive_partition(il.disk(IPMI))
    assert part, il.partition_table(IPMI)
    drive = iso.read_config_drive(part)
    assert drive["user_data"].decode() == f"#cloud-config\nhostname: {name}\n"
    assert drive["meta_data"]["metal3-name"] == name and drive["network_data"]["links"] == links
    # the BMC's part: PXE for the agent (cleaning, deploy), then the disk, persistently, and the host left on
    seen = il.events(start)
    boots = [arg for cmd, arg in seen if cmd == "set_boot_device"]
    assert boots[0] == "network" and boots[-1] == "hd", seen
    assert il.boot_target() == "Hdd" and il.system()["PowerState"] == "On" and node.power_state == "power on"
    assert il.ipmitool("chassis", "bootparam", "get", "5").returncode == 0
    assert f"{agent.PREFIX}{name}" not in il.agents()  # booted from its disk: no agent runs
    seen_by_sim = nodesim.host(il.cfg, f"ironic/{node.id}") or {}
    assert seen_by_sim.get("source") == "disk", seen_by_sim

    # deprovisioned: undeploy, automated cleaning (metadata) through the agent again, available
    start = il.event_count()
    clear = {"image": None, "userData": None, "networkData": None, "online": False}
    (deprov,) = il.play([{"baremetal.capi.baremetalhost": {"hosts": [{"name": name, "spec": clear}], "wait": True}}])
    assert deprov["hosts"][0]["state"] == "available", deprov
    node = il.node(name)
    assert node.provision_state == "available" and not node.instance_id
    assert agent.config_drive_partition(il.disk(IPMI)) is None and "lab-root" not in il.partition_table(IPMI)
    assert ("set_boot_device", "network") in il.events(start), il.events(start)  # the cleaning agent, by PXE again
    assert il.system()["PowerState"] == "Off"
