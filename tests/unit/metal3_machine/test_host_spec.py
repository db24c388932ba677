"""The pure Metal3Machine/BareMetalHost functions: webhook image rules, setHostSpec, delete, pause, addresses."""

from __future__ import annotations

import json

import pytest
from capi_objects import bmh, machine, metal3_machine

from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.metal3 import host_spec
from ansible_collections.baremetal.capi.plugins.module_utils.model import names


@pytest.mark.parametrize(
    "image, custom, error_field",
    [
        ({"url": "http://x/i.qcow2", "checksum": "abc", "checksumType": "sha256", "diskFormat": "qcow2"}, None, None),
        ({}, None, "spec.image"),
        ({}, "install_coreos", None),
        ({"url": "not a url", "checksum": "abc"}, None, "spec.image.url"),
        ({"url": "relative/path", "checksum": "abc"}, None, "spec.image.url"),
        ({"url": "http://x/i.qcow2"}, None, "spec.image.checksum"),
        ({"url": "http://x/i.iso", "diskFormat": "live-iso"}, None, None),
        ({"url": "oci://quay.io/x/y:1"}, None, None),
        ({"url": "oci://quay.io/x/y:1", "checksum": "abc"}, None, "spec.image.checksum"),
        ({"url": "oci://quay.io/x/y:1", "checksumType": "sha256"}, None, "spec.image.checksum"),
        ({"url": "http://x/i", "checksum": "http://bad url"}, None, "spec.image.checksum"),
        ({"url": "http://x/i", "checksum": "https://x/i.sha256sum"}, None, None),
        ({"url": "http://x/i", "checksum": "abc", "checksumType": "crc32"}, None, "spec.image.checksumType"),
        ({"url": "http://x/i", "checksum": "abc", "diskFormat": "iso"}, None, "spec.image.diskFormat"),
    ],
)
def test_validate_image(image, custom, error_field):
    m = metal3_machine("m1", image=image)
    if custom:
        m["spec"]["customDeploy"] = {"method": custom}
    if error_field is None:
        host_spec.validate(m)
    else:
        with pytest.raises(Invalid) as err:
            host_spec.validate(m)
        assert err.value.field == error_field
        assert "Metal3Machine default/m1" in str(err.value)


def test_validate_secrets_same_namespace_and_cleaning_mode():
    with pytest.raises(Invalid, match="userData must be in"):
        host_spec.validate(metal3_machine("m1", userData={"name": "u", "namespace": "other"}))
    with pytest.raises(Invalid, match="automatedCleaningMode"):
        host_spec.validate(metal3_machine("m1", automatedCleaningMode="always"))


def test_user_data_secret_bootstrap_wins():
    m = metal3_machine("m1", userData={"name": "mine"})
    assert host_spec.user_data_secret(m, machine("m1", secret="boot")) == {"name": "boot", "namespace": "default"}
    assert host_spec.user_data_secret(m, machine("m1", secret=None)) == {"name": "mine", "namespace": "default"}
    mach = machine("m1", secret=None)
    mach["spec"]["bootstrap"] = {"configRef": {"name": "cfg"}}
    assert host_spec.user_data_secret(metal3_machine("m1"), mach) == {"name": "cfg", "namespace": "default"}


def _ready_m3m(**spec):
    m = metal3_machine("m1", **spec)
    m["status"] = {
        "userData": {"name": "boot", "namespace": "default"},
        "metaData": {"name": "m1-metadata", "namespace": "default"},
        "networkData": {"name": "m1-networkdata"},
    }
    return m


def test_set_host_spec():
    host = bmh("h1")
    assert host_spec.set_host_spec(host, _ready_m3m(automatedCleaningMode="disabled"), machine("m1"))
    assert host["spec"]["image"] == {
        "url": "http://192.0.2.1/img.qcow2",
        "checksum": "abc123",
        "checksumType": "sha256",
        "format": "qcow2",
    }
    assert host["spec"]["userData"] == {"name": "boot", "namespace": "default"}
    assert host["spec"]["metaData"] == {"name": "m1-metadata", "namespace": "default"}
    assert host["spec"]["networkData"] == {"name": "m1-networkdata", "namespace": "default"}
    assert host["spec"]["online"] is True
    assert host["spec"]["automatedCleaningMode"] == "disabled"
    assert not host_spec.set_host_spec(host, _ready_m3m(automatedCleaningMode="disabled"), machine("m1"))


def test_set_host_spec_never_touches_a_host_with_an_image():
    host = bmh("h1", image={"url": "http://other/img", "checksum": "x"}, online=True)
    assert not host_spec.set_host_spec(host, _ready_m3m(), machine("m1"))
    assert host["spec"]["image"] == {"url": "http://other/img", "checksum": "x"}
    assert "userData" not in host["spec"]


def test_set_host_spec_waits_for_user_data_and_custom_deploy():
    host = bmh("h1")
    assert not host_spec.set_host_spec(host, metal3_machine("m1"), machine("m1"))  # no status.userData yet
    m = _ready_m3m(image={})
    m["spec"]["customDeploy"] = {"method": "install_coreos"}
    assert host_spec.set_host_spec(host, m, machine("m1"))
    assert host["spec"]["customDeploy"] == {"method": "install_coreos"} and "image" not in host["spec"]


def test_clear_host_spec(monkeypatch):
    monkeypatch.delenv(names.FAST_TRACK_ENV, raising=False)
    host = bmh("h1")
    m = _ready_m3m()
    host_spec.set_host_spec(host, m, machine("m1"))
    host["spec"]["userData"] = {"name": "boot", "namespace": "default"}
    assert host_spec.clear_host_spec(host, m)
    for key in ("image", "userData", "metaData", "networkData", "customDeploy"):
        assert key not in host["spec"]
    assert host["spec"]["online"] is False
    host["spec"]["disablePowerOff"] = True
    host_spec.clear_host_spec(host, m)
    assert host["spec"]["online"] is True
    del host["spec"]["disablePowerOff"]
    monkeypatch.setenv(names.FAST_TRACK_ENV, "true")
    host_spec.clear_host_spec(host, m)
    assert host["spec"]["online"] is True


@pytest.mark.parametrize(
    "state, powered, wait",
    [
        ("provisioned", True, True),
        ("deprovisioning", False, True),
        ("provisioning", True, True),
        ("available", False, False),
        ("ready", False, False),
        ("inspecting", False, False),
        ("externally provisioned", True, True),
        ("externally provisioned", False, False),
        ("some future state", False, True),
    ],
)
def test_delete_must_wait(state, powered, wait):
    host = bmh("h1", state=state)
    host["status"]["poweredOn"] = powered
    assert host_spec.delete_must_wait(host) is wait


def test_pause_and_unpause():
    host = bmh("h1", labels={names.CLUSTER_NAME_LABEL: "c1"})
    host["status"]["hardware"] = {"nics": []}
    host["status"]["poweredOn"] = True
    assert host_spec.ensure_block_move(host)
    assert host_spec.set_pause(host)
    ann = host["metadata"]["annotations"]
    assert ann[names.BMH_PAUSED_ANNOTATION] == "metal3.io/capm3"
    assert json.loads(ann[names.BMH_STATUS_ANNOTATION]) == {"provisioning": {"state": "available"}, "poweredOn": True}
    assert names.BLOCK_MOVE_ANNOTATION not in ann
    assert not host_spec.remove_pause(host, "other-cluster")
    assert host_spec.remove_pause(host, "c1")
    assert names.BMH_PAUSED_ANNOTATION not in ann


def test_user_pause_is_kept():
    host = bmh("h1", labels={names.CLUSTER_NAME_LABEL: "c1"}, annotations={names.BMH_PAUSED_ANNOTATION: "admin"})
    assert not host_spec.remove_pause(host, "c1")
    assert not host_spec.ensure_block_move(host)  # a paused host does not get block-move


def test_addresses_from_hardware():
    hw = {
        "nics": [{"name": "e0", "ip": "192.0.2.5"}, {"name": "e1", "ip": ""}, {"name": "e2", "ip": "fd00::5"}],
        "hostname": "node-1",
    }
    assert host_spec.addresses(hw) == [
        {"type": "InternalIP", "address": "192.0.2.5"},
        {"type": "InternalIP", "address": "fd00::5"},
        {"type": "Hostname", "address": "node-1"},
        {"type": "InternalDNS", "address": "node-1"},
    ]
    assert host_spec.addresses(None) == []


@pytest.mark.parametrize(
    "state, online, powered, settling",
    [
        ("available", False, True, True),  # deprovisioned, still on: BMO would power it off next
        ("ready", False, True, True),
        ("available", True, False, True),  # fast track / disablePowerOff: BMO would power it on
        ("available", False, False, False),
        ("available", True, True, False),
        ("available", False, None, False),  # power never read: nothing to settle
        ("deprovisioning", False, True, False),  # delete_must_wait's business
        ("inspecting", False, True, False),
    ],
)
def test_power_settling_only_for_a_deprovisioned_host_whose_power_differs(state, online, powered, settling):
    host = bmh("h1", state=state)
    host["spec"]["online"] = online
    if powered is None:
        host["status"].pop("poweredOn", None)
    else:
        host["status"]["poweredOn"] = powered
    assert host_spec.power_settling(host) is settling
