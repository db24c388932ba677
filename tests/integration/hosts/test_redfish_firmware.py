"""BIOS settings, firmware components and hardware RAID of a BareMetalHost on a lab Redfish BMC, moved by the
ironic driver as baremetal-operator does: HostFirmwareSettings / FirmwareSchema / HostFirmwareComponents read
back from Ironic (which read them from the emulated BMC), a BIOS change applied by manual cleaning and seen by
the BMC, an invalid change refused, and hardware RAID failing on a host without a deploy ramdisk (the RAID
steps themselves, on the agent path: tests/integration/agent/test_agent_raid.py).

Lab host index 4 (host-05) only.
"""

from __future__ import annotations

import base64
import json
import urllib.request

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions
from ansible_collections.baremetal.capi.plugins.module_utils.model import names as S
from lab.ironic import hosts as lab_hosts

pytestmark = pytest.mark.timeout(1200)
HOST = 4


def bmc_get(url: str) -> dict:
    """A Redfish GET straight to the emulator (past the fault proxy)."""
    token = base64.b64encode(f"{lab_hosts.BMC_USERNAME}:{lab_hosts.BMC_PASSWORD}".encode()).decode()
    req = urllib.request.Request(url, headers={"Authorization": f"Basic {token}"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())


def bmc_post(url: str) -> None:
    token = base64.b64encode(f"{lab_hosts.BMC_USERNAME}:{lab_hosts.BMC_PASSWORD}".encode()).decode()
    headers = {"Authorization": f"Basic {token}", "Content-Type": "application/json"}
    req = urllib.request.Request(url, data=b"{}", headers=headers, method="POST")
    with urllib.request.urlopen(req, timeout=10):
        pass


def cond(obj: dict, ctype: str) -> dict:
    return conditions.get(obj, ctype) or {}


def test_bios_settings_and_firmware_read_back_changed_by_cleaning_and_hardware_raid_refused(hostlab):
    hl = hostlab
    hl.wait_free([HOST])
    h = hl.host(HOST)
    name = h["name"]
    system = h["system_url"]
    # the emulated BMC keeps its BIOS across tests, as a real one does: start from its defaults
    bmc_post(system + "/BIOS/Actions/Bios.ResetBios")
    entry = hl.bmh_entry(HOST)
    (reg,) = hl.play([{"baremetal.capi.baremetalhost": {"hosts": [entry], "wait": True, "wait_timeout": 300}}])
    assert [x["state"] for x in reg["hosts"]] == ["available"]
    node = hl.node(name)
    assert node.bios_interface == "redfish" and node.firmware_interface == "redfish"

    # -- read back: what the BMC has, through Ironic's cache, in the host's objects --
    bios = bmc_get(system + "/BIOS")["Attributes"]
    hfs = hl.store.get(S.HFS_KIND, name, hl.ns)
    assert hfs["metadata"]["ownerReferences"][0]["name"] == name
    assert hfs["status"]["settings"] == {k: v for k, v in bios.items() if "Password" not in k}
    assert hfs["status"]["settings"]["ProcTurboMode"] == "Enabled"
    assert cond(hfs, S.FIRMWARE_VALID)["status"] == "True"
    assert cond(hfs, S.FIRMWARE_CHANGE_DETECTED)["status"] == "False"
    schema = hl.store.get(S.FIRMWARE_SCHEMA_KIND, hfs["status"]["schema"]["name"], hl.ns)["spec"]["schema"]
    # the BMC's BIOS attribute registry, as Ironic reports it
    assert schema["ProcTurboMode"]["attribute_type"] == "Enumeration"
    assert sorted(schema["ProcTurboMode"]["allowable_values"]) == ["Disabled", "Enabled"]
    assert schema["NumCores"] == {
        "attribute_type": "Integer",
        "lower_bound": 10,
        "upper_bound": 20,
        "read_only": True,
        "unique": False,
    }
    assert "SysPassword" not in schema
    hfc = hl.store.get(S.HFC_KIND, name, hl.ns)
    versions = {c["component"]: c["currentVersion"] for c in hfc["status"]["components"]}
    assert versions == {"bios": bmc_get(system)["BiosVersion"], "bmc": "1.00"}

    def set_settings(settings: dict) -> None:
        hl.play([{"baremetal.capi.object": {"kind": S.HFS_KIND, "name": name, "spec": {"settings": settings}}}])

    def reconcile(**kw) -> dict:
        (r,) = hl.play([{"baremetal.capi.baremetalhost": {"hosts": [entry], "wait": True, "wait_timeout": 300, **kw}}])
        return r

    # -- an invalid change (a read-only setting) is refused and nothing is asked of the host --
    set_settings({"NumCores": 12})
    r = reconcile()
    assert [x["state"] for x in r["hosts"]] == ["available"]
    hfs = hl.store.get(S.HFS_KIND, name, hl.ns)
    assert cond(hfs, S.FIRMWARE_VALID)["status"] == "False"
    assert cond(hfs, S.FIRMWARE_VALID)["reason"] == S.HFS_REASON_CONFIGURATION_ERROR
    assert hl.node(name).clean_step in (None, {}) and hl.node(name).provision_state == "manageable"
    assert bmc_get(system + "/BIOS")["Attributes"]["NumCores"] == "10"

    # -- a valid change: preparing, manual clean with bios.apply_configuration, the BMC has it, status follows --
    # (not a Boolean: Ironic sends "false" to the BMC as JSON false and caches what comes back as "False", which
    # never equals the spec's text again -- baremetal-operator would clean again and again, and so would this)
    set_settings({"NumCores": None, "ProcTurboMode": "Disabled", "L2Cache": "20x256 KB"})
    r = reconcile()
    assert [x["state"] for x in r["hosts"]] == ["available"] and r["changed"] is True
    attrs = bmc_get(system + "/BIOS")["Attributes"]
    assert attrs["ProcTurboMode"] == "Disabled" and attrs["L2Cache"] == "20x256 KB"
    hfs = hl.store.get(S.HFS_KIND, name, hl.ns)
    assert hfs["status"]["settings"]["ProcTurboMode"] == "Disabled"
    assert cond(hfs, S.FIRMWARE_CHANGE_DETECTED)["status"] == "False"
    cached = hl.conn.baremetal.get(f"/nodes/{node.id}/bios/ProcTurboMode", microversion="1.74").json()
    assert cached["ProcTurboMode"]["value"] == "Disabled"  # Ironic's cache, refreshed after the clean
    bmh = hl.bmh(name)
    assert bmh["status"].get("errorType") is None and bmh["status"]["provisioning"]["state"] == "available"
    again = reconcile()
    assert again["changed"] is False  # converged

    # -- hardware RAID: Ironic's redfish RAID steps run with the agent ramdisk up, and this host has none
    # configured (no deploy_iso): Ironic fails the clean before any step, BMO's preparation error says why --
    raid = {"hardwareRAIDVolumes": [{"level": "1", "sizeGibibytes": 1, "name": "root"}]}
    (fail,) = hl.play(
        [
            {
                "baremetal.capi.baremetalhost": {
                    "hosts": [hl.bmh_entry(HOST, raid=raid)],
                    "wait": True,
                    "wait_timeout": 300,
                }
            }
        ],
        expect_failure=True,
    )
    assert fail.get("failed") is True
    assert f"BareMetalHost {hl.ns}/{name}" in fail["msg"] and S.BMH_ERROR_PREPARATION in fail["msg"]
    bmh = hl.bmh(name)
    assert bmh["status"]["errorType"] == S.BMH_ERROR_PREPARATION
    node = hl.node(name)
    assert node.provision_state == "clean failed" and node.raid_interface == "redfish"
    assert node.target_raid_config["logical_disks"][0]["raid_level"] == "1"
    assert "deploy_kernel" in bmh["status"]["errorMessage"]  # "Missing are: ['deploy_kernel', 'deploy_ramdisk']"

    # -- the RAID request withdrawn: the host recovers (manage again, nothing to build) --
    (r,) = hl.play(
        [
            {
                "baremetal.capi.baremetalhost": {
                    "hosts": [hl.bmh_entry(HOST, raid=None)],
                    "wait": True,
                    "wait_timeout": 300,
                }
            }
        ]
    )
    bmh = hl.bmh(name)
    assert "raid" not in bmh["spec"]
    assert [x["state"] for x in r["hosts"]] == ["available"] and bmh["status"].get("errorType") is None
    assert hl.node(name).provision_state == "manageable"
