"""HostFirmwareSettings / HostFirmwareComponents / FirmwareSchema as BMO's controllers and webhooks keep them,
and the BareMetalHost spec.raid / spec.firmware rules of BMO's webhook."""

from __future__ import annotations

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils import webhooks
from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.metal3 import host as m3host
from ansible_collections.baremetal.capi.plugins.module_utils.metal3 import host_firmware as hf
from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions
from ansible_collections.baremetal.capi.plugins.module_utils.model import names as S

# Ironic's GET /v1/nodes/{id}/bios?detail=True rows for a BMC with sushy-tools' BIOS attribute registry
BIOS_ROWS = [
    {"name": "ProcTurboMode", "value": "Enabled", "attribute_type": "Enumeration",
     "allowable_values": ["Enabled", "Disabled"], "read_only": False, "lower_bound": None},
    {"name": "NumCores", "value": "10", "attribute_type": "Integer", "lower_bound": 10, "upper_bound": 20,
     "read_only": True},
    {"name": "QuietBoot", "value": "true", "attribute_type": "Boolean", "read_only": False},
    {"name": "L2Cache", "value": "10x256 KB", "attribute_type": "String", "min_length": 0, "max_length": 16,
     "read_only": False},
    {"name": "SysPassword", "value": "", "attribute_type": "Password", "read_only": False},
    {"name": "Vendorless", "value": None},
]  # fmt: skip


def test_settings_and_schema_from_ironic_leave_passwords_out():
    settings, schema = hf.schema_from_ironic(BIOS_ROWS)
    assert settings == {
        "ProcTurboMode": "Enabled",
        "NumCores": "10",
        "QuietBoot": "true",
        "L2Cache": "10x256 KB",
        "Vendorless": "",
    }
    assert "SysPassword" not in schema
    assert schema["NumCores"] == {"attribute_type": "Integer", "lower_bound": 10, "upper_bound": 20, "read_only": True}
    assert schema["Vendorless"] == {}  # no registry entry: BMO lets any value through


@pytest.mark.parametrize(
    ("name", "value", "error"),
    [
        ("ProcTurboMode", "Disabled", None),
        ("ProcTurboMode", "Maybe", "Setting ProcTurboMode is invalid, unknown enumeration value - Maybe"),
        ("NumCores", 12, "Setting NumCores is invalid, it is ReadOnly"),
        ("QuietBoot", "false", None),
        ("QuietBoot", "yes", "Setting QuietBoot is invalid, yes is not a boolean"),
        ("L2Cache", "x" * 17, f"Setting L2Cache is invalid, string {'x' * 17} length is above maximum length 16"),
        ("Vendorless", "anything", None),
        ("Missing", "1", "Setting Missing is invalid, it is not in the associated schema"),
    ],
)
def test_a_setting_is_checked_against_its_schema_as_bmo_does(name, value, error):
    _settings, schema = hf.schema_from_ironic(BIOS_ROWS)
    assert hf.setting_error(name, value, schema.get(name)) == error


def test_integer_settings_take_numbers_and_numeric_strings():
    entry = {"attribute_type": "Integer", "lower_bound": 1, "upper_bound": 8}
    assert hf.setting_error("Cores", "4", entry) is None
    assert hf.setting_error("Cores", 9, entry) == "Setting Cores is invalid, integer 9 is above maximum value 8"
    assert hf.setting_error("Cores", "four", entry) == (
        "Setting Cores is invalid, String four entered while integer expected"
    )


def test_the_schema_name_is_a_hash_of_the_rules_not_of_the_values():
    _s, schema = hf.schema_from_ironic(BIOS_ROWS)
    name = hf.schema_name(schema)
    assert name.startswith("schema-") and len(name) == len("schema-") + 8
    assert hf.schema_name(dict(reversed(list(schema.items())))) == name
    changed = dict(schema, NumCores=dict(schema["NumCores"], upper_bound=32))
    assert hf.schema_name(changed) != name


def _hfs(spec_settings: dict, generation: int = 1) -> dict:
    return {
        "apiVersion": "metal3.io/v1alpha1",
        "kind": S.HFS_KIND,
        "metadata": {"name": "h0", "namespace": "ns", "generation": generation},
        "spec": {"settings": spec_settings},
    }


def test_settings_status_detects_a_valid_change():
    settings, schema = hf.schema_from_ironic(BIOS_ROWS)
    hfs = _hfs({"ProcTurboMode": "Disabled"})
    status, errors = hf.settings_status(hfs, settings, {"namespace": "ns", "name": "schema-x"}, schema)
    assert errors == []
    obj = {**hfs, "status": status}
    assert conditions.is_true(obj, S.FIRMWARE_CHANGE_DETECTED) and conditions.is_true(obj, S.FIRMWARE_VALID)
    assert status["schema"] == {"namespace": "ns", "name": "schema-x"}
    assert status["settings"]["ProcTurboMode"] == "Enabled"  # what the BMC has, not what is asked


def test_settings_status_marks_an_invalid_change_and_says_why():
    settings, schema = hf.schema_from_ironic(BIOS_ROWS)
    hfs = _hfs({"NumCores": 12, "Unknown": "x", "SysPassword": "secret"})
    status, errors = hf.settings_status(hfs, settings, {"namespace": "ns", "name": "s"}, schema)
    assert errors == [
        "Setting NumCores is invalid, it is ReadOnly",
        "cannot set Password field",
        "setting Unknown is not in the Status field",
    ]
    valid = conditions.get({"status": status}, S.FIRMWARE_VALID)
    assert valid["status"] == "False" and valid["reason"] == S.HFS_REASON_CONFIGURATION_ERROR


def test_settings_equal_to_the_status_are_no_change():
    settings, schema = hf.schema_from_ironic(BIOS_ROWS)
    status, _ = hf.settings_status(_hfs({"NumCores": 10}), settings, {"namespace": "ns", "name": "s"}, schema)
    change = conditions.get({"status": status}, S.FIRMWARE_CHANGE_DETECTED)
    assert change["status"] == "False"  # 10 == "10": IntOrString compared as text, as BMO does


def test_components_keep_bios_and_bmc_only():
    rows = [
        {"component": "bios", "initial_version": "1.0.0", "current_version": "1.1.0",
         "updated_at": "2026-12-06T18:00:00.123456+00:00"},
        {"component": "bmc", "initial_version": "1.00", "current_version": "1.00", "last_version_flashed": None},
        {"component": "nic:NIC.Slot.1", "initial_version": "22.0"},
    ]  # fmt: skip
    assert hf.components_from_ironic(rows) == [
        {
            "component": "bios",
            "initialVersion": "1.0.0",
            "currentVersion": "1.1.0",
            "updatedAt": "2026-12-06T18:00:00Z",
        },
        {"component": "bmc", "initialVersion": "1.00", "currentVersion": "1.00"},
    ]


def test_components_status_and_the_updates_still_to_do():
    hfc = {
        "metadata": {"name": "h0", "namespace": "ns", "generation": 2},
        "spec": {"updates": [{"component": "bios", "url": "http://fw/bios-2.bin"}]},
        "status": {"updates": [{"component": "bios", "url": "http://fw/bios-1.bin"}]},
    }
    status = hf.components_status(hfc, [])
    cond = conditions.get({"status": status}, S.FIRMWARE_CHANGE_DETECTED)
    assert cond["status"] == "True" and cond["observedGeneration"] == 2
    assert hf.updates_difference(hfc["spec"]["updates"], hfc["status"]["updates"]) == hfc["spec"]["updates"]
    assert hf.updates_difference(hfc["spec"]["updates"], hfc["spec"]["updates"]) == []
    bad = dict(hfc, spec={"updates": [{"component": "nic", "url": "http://fw/nic.bin"}]})
    valid = conditions.get({"status": hf.components_status(bad, [])}, S.FIRMWARE_VALID)
    assert valid["status"] == "False" and valid["reason"] == S.HFC_REASON_INVALID_COMPONENT
    assert "component nic is invalid, only 'bmc' or 'bios' are allowed as update names" in valid["message"]


def test_the_webhooks_refuse_bad_objects_naming_the_field():
    with pytest.raises(Invalid) as exc:
        webhooks.admit(_hfs({"QuietBoot": True}))
    assert exc.value.field == "spec.settings.QuietBoot" and "HostFirmwareSettings ns/h0" in str(exc.value)
    hfc = {
        "apiVersion": "metal3.io/v1alpha1",
        "kind": S.HFC_KIND,
        "metadata": {"name": "h0", "namespace": "ns"},
        "spec": {"updates": [{"component": "nic", "url": "http://fw/nic.bin"}]},
    }
    with pytest.raises(Invalid, match="only 'bmc' or 'bios'"):
        webhooks.admit(hfc)
    hfc["spec"]["updates"] = [{"component": "bmc"}]
    with pytest.raises(Invalid) as exc:
        webhooks.admit(hfc)
    assert exc.value.field == "spec.updates[0].url"
    webhooks.admit(_hfs({"ProcTurboMode": "Disabled", "NumCores": 12}))  # the schema is the controller's business


def _bmh(spec: dict) -> dict:
    base = {"bmc": {"address": "redfish-virtualmedia+http://bmc/redfish/v1/Systems/1", "credentialsName": "c"}}
    return {
        "apiVersion": "metal3.io/v1alpha1",
        "kind": "BareMetalHost",
        "metadata": {"name": "h0", "namespace": "ns"},
        "spec": {**base, "bootMACAddress": "00:11:22:33:44:55", **spec},
    }


@pytest.mark.parametrize(
    ("spec", "field", "text"),
    [
        (
            {"raid": {"hardwareRAIDVolumes": [{"level": "1"}], "softwareRAIDVolumes": [{"level": "1"}]}},
            "spec.raid",
            "can not be set at the same time",
        ),
        ({"raid": {"softwareRAIDVolumes": [{"level": "5"}]}}, "spec.raid.softwareRAIDVolumes[0].level", "not one of"),
        ({"raid": {"softwareRAIDVolumes": [{"level": "1"}] * 3}}, "spec.raid.softwareRAIDVolumes", "at most 2"),
        (
            {"raid": {"hardwareRAIDVolumes": [{"level": "1", "sizeGibibytes": -1}]}},
            "spec.raid.hardwareRAIDVolumes[0].sizeGibibytes",
            "whole number",
        ),
        ({"firmware": {"virtualizationEnabled": "yes"}}, "spec.firmware.virtualizationEnabled", "not a boolean"),
        ({"firmware": {"turbo": True}}, "spec.firmware.turbo", "unknown field"),
    ],
)
def test_the_host_webhook_refuses_bad_raid_and_firmware(spec, field, text):
    with pytest.raises(Invalid) as exc:
        m3host.validate(_bmh(spec), None)
    assert exc.value.field == field and text in str(exc.value) and "BareMetalHost ns/h0" in str(exc.value)


def test_an_ipmi_bmc_takes_no_hardware_raid_and_no_firmware_settings():
    ipmi = {"bmc": {"address": "ipmi://10.0.0.1", "credentialsName": "c"}}
    with pytest.raises(Invalid, match="does not support configuring RAID"):
        m3host.validate(_bmh({**ipmi, "raid": {"hardwareRAIDVolumes": [{"level": "1"}]}}), None)
    with pytest.raises(Invalid, match="firmware settings for ipmi are not supported"):
        m3host.validate(_bmh({**ipmi, "firmware": {"sriovEnabled": True}}), None)
    # software RAID is the agent's, whatever the BMC
    m3host.validate(_bmh({**ipmi, "raid": {"softwareRAIDVolumes": [{"level": "1"}]}}), None)


def test_two_hosts_registering_at_once_share_one_firmware_schema(tmp_path):
    # hosts with the same BIOS rules make the same FirmwareSchema; the one that loses the create reads the
    # winner's and becomes one more owner (the lab failed "already exists" on one of three fake hosts)
    from types import SimpleNamespace

    from ansible_collections.baremetal.capi.plugins.module_utils.errors import NotFound
    from ansible_collections.baremetal.capi.plugins.module_utils.hosts.ironic import firmware
    from ansible_collections.baremetal.capi.plugins.module_utils.store.sqlite import SqliteStore

    store = SqliteStore(str(tmp_path / "state.db"))
    _settings, schema = hf.schema_from_ironic(BIOS_ROWS)
    hfs = [store.create(dict(_hfs({}), metadata={"name": f"h{i}", "namespace": "ns"})) for i in range(2)]

    class Racing:
        """The store as host h1 saw it: the schema not there yet when it looked, there when it created."""

        def __init__(self):
            self.looked = False

        def __getattr__(self, name):
            return getattr(store, name)

        def get(self, kind, name, ns=None):
            if kind == S.FIRMWARE_SCHEMA_KIND and not self.looked:
                self.looked = True
                raise NotFound(name)
            return store.get(kind, name, ns)

    first = firmware._schema(SimpleNamespace(store=store, ns="ns", status={}), hfs[0], schema)
    second = firmware._schema(SimpleNamespace(store=Racing(), ns="ns", status={}), hfs[1], schema)
    assert second["metadata"]["name"] == first["metadata"]["name"]
    stored = store.list(S.FIRMWARE_SCHEMA_KIND, "ns")
    assert len(stored) == 1
    assert sorted(o["name"] for o in stored[0]["metadata"]["ownerReferences"]) == ["h0", "h1"]
