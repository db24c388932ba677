"""BMO's ``preparing`` state: RAID, BIOS settings and firmware updates as manual clean steps.

Ironic is played by a small recorder (the lab tests drive the real one); the store is a real sqlite store.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.hosts.ironic import actions, prepare
from ansible_collections.baremetal.capi.plugins.module_utils.hosts.ironic.context import Ctx
from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions, meta
from ansible_collections.baremetal.capi.plugins.module_utils.model import names as S
from ansible_collections.baremetal.capi.plugins.module_utils.store.sqlite import SqliteStore

BIOS = [
    {"name": "ProcTurboMode", "value": "Enabled", "attribute_type": "Enumeration",
     "allowable_values": ["Enabled", "Disabled"], "read_only": False},
    {"name": "NumCores", "value": "10", "attribute_type": "Integer", "lower_bound": 10, "upper_bound": 20,
     "read_only": True},
]  # fmt: skip
FIRMWARE = [{"component": "bios", "initial_version": "1.0.0", "current_version": "1.0.0"}]


class _Resp:
    def __init__(self, status: int, body: dict | None = None):
        self.status_code, self._body = status, body or {}

    def json(self):
        return self._body


class FakeIronic:
    """The calls the preparing state makes, recorded; ``node`` is what the next read returns."""

    def __init__(self, state: str, raid_interface: str = "redfish"):
        self.node = SimpleNamespace(
            id="n-1",
            name="ns~h0",
            driver="redfish",
            provision_state=state,
            raid_interface=raid_interface,
            firmware_interface="redfish",
            is_maintenance=False,
            fault=None,
            last_error=None,
            power_state="power off",
            target_power_state=None,
        )
        self.calls: list = []
        self.bios, self.firmware = list(BIOS), list(FIRMWARE)

    def get(self, url, microversion=None):
        if url.endswith("/bios?detail=True"):
            return _Resp(200, {"bios": self.bios})
        if url.endswith("/firmware"):
            return _Resp(200, {"firmware": self.firmware})
        raise AssertionError(url)

    def put(self, url, json=None, microversion=None):
        self.calls.append(("put", url, json))
        return _Resp(204)

    def patch_node(self, node, ops):
        self.calls.append(("patch", ops))
        for op in ops:
            setattr(self.node, op["path"].strip("/"), op["value"])
        return self.node

    def set_node_provision_state(self, node, target, **kw):
        self.calls.append(("provision", target, kw))

    def unset_node_maintenance(self, node):
        self.calls.append(("unset_maintenance",))
        self.node.is_maintenance = False
        return self.node


@pytest.fixture
def store(tmp_path):
    return SqliteStore(str(tmp_path / "s.db"))


def _host(store, spec: dict | None = None, **status) -> dict:
    host = meta.new("BareMetalHost", "h0", "ns", spec={"online": False, **(spec or {})})
    host = store.create(host)
    host["status"] = {
        "provisioning": {"ID": "n-1", "state": S.BMH_STATE_PREPARING, "rootDeviceHints": {"deviceName": "/dev/sda"}},
        "errorMessage": "",
        **status,
    }
    return store.update_status(host)


def _step(store, host, ironic: FakeIronic) -> Ctx:
    driver = SimpleNamespace(poll=1.0, backoff=lambda n: float(2**n))
    ctx = Ctx(driver, store, store.get("BareMetalHost", "h0", "ns"), SimpleNamespace(baremetal=ironic))
    ctx.node = ironic.node
    actions.HANDLERS[ctx.state](ctx)
    ctx.save()
    return ctx


SOFTWARE = {"softwareRAIDVolumes": [{"level": "1", "sizeGibibytes": 10}, {"level": "0"}]}


def test_software_raid_is_a_manual_clean_with_the_agent_raid_interface(store):
    host = _host(store, {"raid": SOFTWARE})
    ironic = FakeIronic("manageable")
    ctx = _step(store, host, ironic)
    patch, put, clean = ironic.calls
    assert patch == ("patch", [{"op": "add", "path": "/raid_interface", "value": "agent"}])
    assert put == (
        "put",
        "/nodes/n-1/states/raid",
        {
            "logical_disks": [
                {"size_gb": 10, "raid_level": "1", "controller": "software", "is_root_volume": True},
                {"size_gb": "MAX", "raid_level": "0", "controller": "software"},
            ]
        },
    )
    assert clean == (
        "provision",
        "clean",
        {
            "clean_steps": [
                {"interface": "raid", "step": "delete_configuration"},
                {"interface": "deploy", "step": "erase_devices_metadata"},
                {"interface": "raid", "step": "create_configuration"},
            ]
        },
    )
    prov = ctx.status["provisioning"]
    assert prov["state"] == S.BMH_STATE_PREPARING and prov["raid"] == SOFTWARE
    assert "rootDeviceHints" not in prov  # the RAID's root volume is the root device
    # the HostFirmwareSettings / HostFirmwareComponents of the host exist, owned by it, with Ironic's values
    hfs = store.get(S.HFS_KIND, "h0", "ns")
    assert hfs["status"]["settings"] == {"ProcTurboMode": "Enabled", "NumCores": "10"}
    assert hfs["metadata"]["ownerReferences"][0]["name"] == "h0"
    schema = store.get(S.FIRMWARE_SCHEMA_KIND, hfs["status"]["schema"]["name"], "ns")
    assert schema["spec"]["schema"]["NumCores"]["read_only"] is True
    assert store.get(S.HFC_KIND, "h0", "ns")["status"]["components"][0]["currentVersion"] == "1.0.0"

    ironic.calls.clear()
    ironic.node.provision_state = "clean wait"
    assert _step(store, host, ironic).state == S.BMH_STATE_PREPARING and ironic.calls == []
    ironic.node.provision_state = "manageable"  # cleaning done
    ctx = _step(store, host, ironic)
    assert ctx.state == S.BMH_STATE_AVAILABLE and ironic.calls == [] and ctx.status["errorCount"] == 0


def test_an_unchanged_host_passes_through_preparing_without_touching_the_node(store):
    host = _host(store, {})
    ironic = FakeIronic("manageable")
    ctx = _step(store, host, ironic)
    assert ctx.state == S.BMH_STATE_AVAILABLE and ironic.calls == []
    assert ctx.status["provisioning"]["rootDeviceHints"] == {"deviceName": "/dev/sda"}


def test_a_failed_clean_is_a_preparation_error_and_the_next_step_retries(store):
    host = _host(store, {"raid": SOFTWARE})
    ironic = FakeIronic("manageable")
    _step(store, host, ironic)
    ironic.node.provision_state = "clean failed"
    ironic.node.last_error = "Clean step raid.create_configuration failed: not enough disks"
    ironic.node.is_maintenance = True
    ironic.calls.clear()
    ctx = _step(store, host, ironic)
    assert ctx.status["errorType"] == S.BMH_ERROR_PREPARATION
    assert ctx.status["errorMessage"] == "Clean step raid.create_configuration failed: not enough disks"
    assert ctx.status["provisioning"]["raid"] == SOFTWARE  # saved when the clean started: BMO keeps it here
    assert ironic.calls == []
    ctx = _step(store, host, ironic)  # the retry: out of maintenance, then manage
    assert ironic.calls == [("unset_maintenance",)]
    ctx = _step(store, host, ironic)
    assert ironic.calls[-1] == ("provision", "manage", {})
    ironic.node.provision_state = "manageable"
    ironic.calls.clear()
    ctx = _step(store, host, ironic)  # the RAID there is is not trusted: all of it again
    assert [c[0] for c in ironic.calls] == ["put", "provision"]  # raid_interface is already agent
    assert ctx.status.get("errorType") is None and ctx.status["provisioning"]["raid"] == SOFTWARE


def test_hardware_raid_on_a_bmc_without_raid_is_a_preparation_error(store):
    host = _host(store, {"raid": {"hardwareRAIDVolumes": [{"level": "1", "name": "root"}]}})
    ironic = FakeIronic("manageable", raid_interface="no-raid")
    ctx = _step(store, host, ironic)
    assert ctx.status["errorType"] == S.BMH_ERROR_PREPARATION
    assert (
        ctx.status["errorMessage"] == "RAID settings are defined, but the node's driver no-raid does not support RAID"
    )
    assert ironic.calls == []


def test_hardware_raid_keeps_the_bmc_raid_interface_and_names_the_volumes(store):
    raid = {"hardwareRAIDVolumes": [{"level": "1+0", "name": "root", "rotational": False, "sizeGibibytes": 100}]}
    host = _host(store, {"raid": raid})
    ironic = FakeIronic("manageable")
    _step(store, host, ironic)
    put, clean = ironic.calls
    assert put[2] == {
        "logical_disks": [{"size_gb": 100, "raid_level": "1+0", "volume_name": "root", "disk_type": "ssd"}]
    }  # the profile's root device hints are there: no root volume
    assert clean[2]["clean_steps"] == [
        {"interface": "raid", "step": "delete_configuration"},
        {"interface": "raid", "step": "create_configuration"},
    ]


def _hfs_spec(store, settings: dict) -> None:
    hfs = store.get(S.HFS_KIND, "h0", "ns")
    hfs["spec"]["settings"] = settings
    store.update(hfs)


def test_a_valid_bios_change_in_available_goes_back_to_preparing_and_is_applied(store):
    host = _host(store, {})
    ironic = FakeIronic("manageable")
    assert _step(store, host, ironic).state == S.BMH_STATE_AVAILABLE
    _hfs_spec(store, {"ProcTurboMode": "Disabled"})
    ctx = _step(store, host, ironic)  # available: the edited spec is a valid change -> preparing
    assert ctx.state == S.BMH_STATE_PREPARING and ironic.calls == []
    ctx = _step(store, host, ironic)
    clean = ironic.calls[-1]
    assert clean == (
        "provision",
        "clean",
        {
            "clean_steps": [
                {
                    "interface": "bios",
                    "step": "apply_configuration",
                    "args": {"settings": [{"name": "ProcTurboMode", "value": "Disabled"}]},
                }
            ]
        },
    )
    hfs = store.get(S.HFS_KIND, "h0", "ns")
    assert conditions.is_true(hfs, S.FIRMWARE_CHANGE_DETECTED) and conditions.is_true(hfs, S.FIRMWARE_VALID)
    ironic.bios[0] = dict(ironic.bios[0], value="Disabled")  # what the BMC has after the clean
    ctx = _step(store, host, ironic)
    assert ctx.state == S.BMH_STATE_AVAILABLE
    assert not conditions.is_true(store.get(S.HFS_KIND, "h0", "ns"), S.FIRMWARE_CHANGE_DETECTED)


def test_an_invalid_bios_change_is_not_applied(store):
    host = _host(store, {})
    ironic = FakeIronic("manageable")
    _step(store, host, ironic)
    _hfs_spec(store, {"NumCores": 12})
    store_host = store.get("BareMetalHost", "h0", "ns")
    store_host["status"]["provisioning"]["state"] = S.BMH_STATE_PREPARING
    store.update_status(store_host)
    ironic.calls.clear()
    ctx = _step(store, host, ironic)
    assert ctx.state == S.BMH_STATE_AVAILABLE and ironic.calls == []
    valid = conditions.get(store.get(S.HFS_KIND, "h0", "ns"), S.FIRMWARE_VALID)
    assert valid["status"] == "False" and valid["reason"] == S.HFS_REASON_CONFIGURATION_ERROR
    assert not prepare.needs_preparing(ctx)


def test_a_firmware_update_is_a_clean_step_and_recorded_as_started(store):
    host = _host(store, {})
    ironic = FakeIronic("available")
    _step(store, host, ironic)
    hfc = store.get(S.HFC_KIND, "h0", "ns")
    hfc["spec"]["updates"] = [{"component": "bios", "url": "http://fw/bios-1.1.bin"}]
    store.update(hfc)
    store_host = store.get("BareMetalHost", "h0", "ns")
    store_host["status"]["provisioning"]["state"] = S.BMH_STATE_PREPARING
    store.update_status(store_host)
    ctx = _step(store, host, ironic)  # Ironic's node is available: manage it first
    assert ironic.calls[-1] == ("provision", "manage", {}) and ctx.state == S.BMH_STATE_PREPARING
    ironic.node.provision_state = "manageable"
    _step(store, host, ironic)
    assert ironic.calls[-1] == (
        "provision",
        "clean",
        {
            "clean_steps": [
                {
                    "interface": "firmware",
                    "step": "update",
                    "args": {"settings": [{"component": "bios", "url": "http://fw/bios-1.1.bin"}]},
                }
            ]
        },
    )
    assert store.get(S.HFC_KIND, "h0", "ns")["status"]["updates"] == hfc["spec"]["updates"]
    ironic.calls.clear()
    ctx = _step(store, host, ironic)  # cleaning done: the spec matches the status
    assert ctx.state == S.BMH_STATE_AVAILABLE and ironic.calls == []


def test_deprovisioning_clears_software_raid_so_it_is_built_again():
    provisioning = {"raid": dict(SOFTWARE), "firmware": {"sriovEnabled": True}, "rootDeviceHints": {"x": 1}}
    prepare.clear_provisioning_settings(provisioning)
    assert provisioning == {"raid": {}}
    dirty, new = prepare.provisioning_settings({"raid": SOFTWARE}, provisioning)
    assert dirty and new["raid"] == SOFTWARE
    dirty, new = prepare.provisioning_settings({}, {"raid": {"hardwareRAIDVolumes": [{"level": "1"}]}})
    # no RAID asked: the hardware RAID there is stays, software RAID is to be removed
    assert new["raid"] == {"softwareRAIDVolumes": [], "hardwareRAIDVolumes": [{"level": "1"}]}
    assert prepare.raid_clean_steps("redfish", new["raid"], {"hardwareRAIDVolumes": [{"level": "1"}]}) == []


def test_the_first_software_raid_volume_must_be_raid1():
    with pytest.raises(prepare.PrepareError, match="must be RAID1"):
        prepare.logical_disks({"softwareRAIDVolumes": [{"level": "0"}]})
    with pytest.raises(prepare.PrepareError, match="are repeated"):
        prepare.logical_disks({"hardwareRAIDVolumes": [{"level": "1", "name": "a"}, {"level": "0", "name": "a"}]})


def test_hardware_raid_after_software_raid_goes_back_to_the_bmc_raid_interface(store):
    bmc = {"address": "redfish-virtualmedia+http://bmc:8000/redfish/v1/Systems/1", "credentialsName": "c"}
    host = _host(store, {"bmc": bmc, "raid": {"hardwareRAIDVolumes": [{"level": "1"}]}})
    ironic = FakeIronic("manageable", raid_interface="agent")  # left by an earlier software RAID
    _step(store, host, ironic)
    assert ironic.calls[0] == ("patch", [{"op": "add", "path": "/raid_interface", "value": "redfish"}])
    assert [c[0] for c in ironic.calls] == ["patch", "put", "provision"]


def test_reading_the_same_values_again_writes_nothing(store):
    host = _host(store, {})
    ironic = FakeIronic("manageable")
    _step(store, host, ironic)
    versions = {k: store.get(k, "h0", "ns")["metadata"]["resourceVersion"] for k in (S.HFS_KIND, S.HFC_KIND)}
    bmh = store.get("BareMetalHost", "h0", "ns")
    bmh["status"]["provisioning"]["state"] = S.BMH_STATE_PREPARING
    store.update_status(bmh)
    assert _step(store, host, ironic).state == S.BMH_STATE_AVAILABLE
    assert {k: store.get(k, "h0", "ns")["metadata"]["resourceVersion"] for k in versions} == versions
