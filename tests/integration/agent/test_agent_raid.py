"""RAID of a BareMetalHost on the agent path, as baremetal-operator asks Ironic for it: software RAID through the
agent's raid interface (the host's ironic-python-agent), hardware RAID through the BMC's (Redfish) with the agent
ramdisk up.  Every lab host has one disk and its emulated BMC no Storage resource, so both are refused, as on such
a machine: the test asserts the whole chain up to the refusal (the node's raid_interface and target_raid_config, the
clean steps the agent ran, the error in Ironic and in the BareMetalHost) and the host's recovery.

And a BIOS firmware update from the host's HostFirmwareComponents, which Ironic's redfish firmware interface also
runs with the agent ramdisk up.

Lab host index 5 (host-06) only.
"""

from __future__ import annotations

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.model import names as S

pytestmark = pytest.mark.timeout(1500)
HOST = 5


def test_software_and_hardware_raid_refused_by_a_one_disk_host_then_withdrawn(agentlab):
    al = agentlab
    al.wait_free([HOST])
    name = al.host(HOST)["name"]

    def run(raid, expect_failure: bool) -> dict:
        entry = al.agent_entry(HOST, raid=raid, inspectionMode="disabled")
        task = {"baremetal.capi.baremetalhost": {"hosts": [entry], "wait": True, "wait_timeout": 600}}
        (r,) = al.play([task], expect_failure=expect_failure)
        return r

    # -- software RAID-1: the node goes to the agent's raid interface, the agent runs BMO's three clean steps --
    fail = run({"softwareRAIDVolumes": [{"level": "1"}]}, expect_failure=True)
    assert fail.get("failed") is True and f"BareMetalHost {al.ns}/{name}" in fail["msg"]
    bmh = al.bmh(name)
    assert bmh["status"]["errorType"] == S.BMH_ERROR_PREPARATION
    assert "needs at least 2 physical disks; this host has 1" in bmh["status"]["errorMessage"]
    node = al.node(name)
    assert node.provision_state == "clean failed" and node.raid_interface == "agent"
    assert node.target_raid_config["logical_disks"] == [
        {"size_gb": "MAX", "raid_level": "1", "controller": "software", "is_root_volume": True}
    ]
    assert "create_configuration" in node.last_error
    events = " ".join(
        e.get("event") or ""
        for e in al.conn.baremetal.get(f"/nodes/{node.id}/history", microversion="1.78").json()["history"]
    )
    assert "needs at least 2 physical disks" in events
    # no root device hints: the software RAID's root volume was to be the root device
    assert "rootDeviceHints" not in bmh["status"]["provisioning"]

    # -- hardware RAID: back to the BMC's raid interface; the agent boots, the BMC has no storage to build on --
    # (a merge patch, as every baremetalhost write: the software volumes are removed by naming them null)
    hardware = {
        "hardwareRAIDVolumes": [{"level": "1", "sizeGibibytes": 4, "name": "root"}],
        "softwareRAIDVolumes": None,
    }
    fail = run(hardware, expect_failure=True)
    assert fail.get("failed") is True
    bmh = al.bmh(name)
    node = al.node(name)
    assert bmh["status"]["errorType"] == S.BMH_ERROR_PREPARATION
    assert node.provision_state == "clean failed" and node.raid_interface == "redfish"
    assert node.target_raid_config["logical_disks"][0]["volume_name"] == "root"
    assert bmh["status"]["errorMessage"] == node.last_error
    # the emulated BMC has no Storage resource for the system: Redfish RAID cannot even list the controllers
    assert "raid" in node.last_error and "/Storage returned code 500" in node.last_error

    # -- withdrawn: manage again, nothing to build, the host is available and the error gone --
    ok = run(None, expect_failure=False)
    bmh = al.bmh(name)
    assert [x["state"] for x in ok["hosts"]] == ["available"] and bmh["status"].get("errorType") is None
    assert al.node(name).provision_state == "manageable" and "raid" not in bmh["spec"]


def test_a_bios_firmware_update_by_cleaning(agentlab):
    """HostFirmwareComponents spec.updates: BMO's firmware.update clean step; Ironic's redfish firmware interface
    (which needs the agent ramdisk up) posts UpdateService.SimpleUpdate to the emulated BMC, which raises the BIOS
    version's minor number (it never reads the image), reboots the host and caches the new version."""
    al = agentlab
    al.wait_free([HOST])
    name = al.host(HOST)["name"]
    entry = al.agent_entry(HOST, inspectionMode="disabled")
    task = {"baremetal.capi.baremetalhost": {"hosts": [entry], "wait": True, "wait_timeout": 900}}
    (reg,) = al.play([task])
    assert [x["state"] for x in reg["hosts"]] == ["available"]
    hfc = al.store.get(S.HFC_KIND, name, al.ns)
    before = {c["component"]: c["currentVersion"] for c in hfc["status"]["components"]}["bios"]
    major, minor, patch = before.split(".")
    updates = [{"component": "bios", "url": al.inv["images"]["url"] + "/images/lab-bios.bin"}]
    al.play([{"baremetal.capi.object": {"kind": S.HFC_KIND, "name": name, "spec": {"updates": updates}}}])

    (r,) = al.play([task])
    assert [x["state"] for x in r["hosts"]] == ["available"] and r["changed"] is True
    hfc = al.store.get(S.HFC_KIND, name, al.ns)
    after = {c["component"]: c for c in hfc["status"]["components"]}["bios"]
    assert after["currentVersion"] == f"{major}.{int(minor) + 1}.{patch}"
    assert after["lastVersionFlashed"] == after["currentVersion"] or after.get("lastVersionFlashed") is None
    assert hfc["status"]["updates"] == updates
    change = [c for c in hfc["status"]["conditions"] if c["type"] == S.FIRMWARE_CHANGE_DETECTED][0]
    assert change["status"] == "False"
    node = al.node(name)
    assert node.provision_state == "manageable" and not node.last_error
    (again,) = al.play([task])
    assert again["changed"] is False
