"""BMC address -> Ironic driver, interfaces and driver_info, as BMO maps them (baremetal-operator
pkg/hardwareutils/bmc)."""

from __future__ import annotations

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.hosts import bmc

SYS = "/redfish/v1/Systems/1"


def test_redfish_virtualmedia_http_suffix_sets_redfish_scheme():
    a = bmc.parse(f"redfish-virtualmedia+http://10.0.0.1:8000{SYS}")
    assert a.driver == "redfish"
    assert a.interfaces == {
        "boot_interface": "redfish-virtual-media",
        "raid_interface": "redfish",
        "firmware_interface": "redfish",
    }
    assert a.driver_info == {"redfish_address": "http://10.0.0.1:8000", "redfish_system_id": SYS}
    assert a.virtual_media


def test_redfish_defaults_to_https_and_ipxe():
    a = bmc.parse(f"redfish://bmc.example.com{SYS}")
    assert a.driver_info["redfish_address"] == "https://bmc.example.com"
    assert a.interfaces["boot_interface"] == "ipxe"
    assert not a.virtual_media
    assert bmc.parse(f"redfish+https://h{SYS}").driver_info["redfish_address"] == "https://h"


@pytest.mark.parametrize("path", ["", "/", "/redfish/v1", "/redfish/v1/"])
def test_system_id_omitted_for_empty_or_root_path(path):
    assert "redfish_system_id" not in bmc.parse(f"redfish://h{path}").driver_info


def test_uefihttp_always_sends_system_id():
    a = bmc.parse("redfish-uefihttp://h")
    assert a.interfaces["boot_interface"] == "redfish-https"
    assert a.driver_info["redfish_system_id"] == ""


@pytest.mark.parametrize(
    "address,driver,boot,vendor",
    [
        (f"idrac-virtualmedia://h{SYS}", "idrac", "idrac-redfish-virtual-media", "idrac-redfish"),
        (f"idrac-redfish://h{SYS}", "idrac", "ipxe", "idrac-redfish"),
        (f"ilo5-virtualmedia://h{SYS}", "redfish", "redfish-virtual-media", None),
        (f"ilo5-redfish://h{SYS}", "redfish", "ipxe", None),
    ],
)
def test_vendor_variants(address, driver, boot, vendor):
    a = bmc.parse(address)
    assert a.driver == driver
    assert a.interfaces["boot_interface"] == boot
    for name in ("power_interface", "management_interface", "vendor_interface", "bios_interface"):
        assert a.interfaces.get(name) == vendor


@pytest.mark.parametrize("address", ["ipmi://10.1.1.1", "10.1.1.1", "ipmi:10.1.1.1"])
def test_ipmi_forms(address):
    a = bmc.parse(address)
    assert a.driver == "ipmi"
    assert a.driver_info == {"ipmi_address": "10.1.1.1", "ipmi_port": "623", "ipmi_priv_level": "ADMINISTRATOR"}
    assert a.interfaces == {"boot_interface": "ipxe", "raid_interface": "no-raid"}
    assert a.credentials("u", "p") == {"ipmi_username": "u", "ipmi_password": "p"}
    assert not a.secure_boot


def test_ipmi_port_and_privilege_level():
    a = bmc.parse("ipmi://10.1.1.1:6230?privilegelevel=OPERATOR")
    assert a.driver_info["ipmi_port"] == "6230"
    assert a.driver_info["ipmi_priv_level"] == "OPERATOR"


def test_libvirt_needs_mac():
    assert bmc.parse("libvirt://10.1.1.1").needs_mac


def test_disable_certificate_verification():
    assert bmc.parse(f"redfish://h{SYS}", True).driver_info["redfish_verify_ca"] is False
    assert bmc.parse("ipmi://h", True).driver_info["ipmi_verify_ca"] is False
    assert "redfish_verify_ca" not in bmc.parse(f"redfish://h{SYS}").driver_info


def test_ipv6_host_keeps_brackets():
    a = bmc.parse(f"redfish://[fd00::1]:8000{SYS}")
    assert a.driver_info["redfish_address"] == "https://[fd00::1]:8000"


def test_fake_scheme_is_fake_hardware_without_credentials():
    a = bmc.parse("fake://anything")
    assert a.fake and a.driver == "fake-hardware"
    assert a.driver_info == {} and a.interfaces == {}
    assert a.credentials("u", "p") == {}


@pytest.mark.parametrize("address", ["foo://h", "redfish+ftp://h", "", "redfish://"])
def test_unusable_addresses_name_the_field(address):
    with pytest.raises(Invalid) as err:
        bmc.parse(address)
    assert err.value.field == "spec.bmc.address"
