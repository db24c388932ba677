"""Which deploy ramdisk keys a host's Ironic node gets: baremetal-operator's setDeployImage (no PreprovisioningImage).

A BMC with virtual media (or HTTP boot) boots the deploy ISO when one is given; any other host (IPMI, a PXE-booting
Redfish BMC) needs the kernel and the ramdisk. The keys of the other choice and kernel_append_params are removed.
"""

from __future__ import annotations

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.hosts import bmc
from ansible_collections.baremetal.capi.plugins.module_utils.hosts.ironic.node import deploy_image_info, diff_patch

ALL = {"deploy_kernel": "http://i/k", "deploy_ramdisk": "http://i/r", "deploy_iso": "http://i/iso"}
REMOVED = {"deploy_kernel": None, "deploy_ramdisk": None, "deploy_iso": None, "kernel_append_params": None}


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("redfish-virtualmedia://bmc/redfish/v1/Systems/1", {**REMOVED, "deploy_iso": "http://i/iso"}),
        ("redfish-uefihttp://bmc/redfish/v1/Systems/1", {**REMOVED, "deploy_iso": "http://i/iso"}),
        ("ipmi://10.1.1.1:6230", {**REMOVED, "deploy_kernel": "http://i/k", "deploy_ramdisk": "http://i/r"}),
        (
            "redfish://bmc/redfish/v1/Systems/1",
            {**REMOVED, "deploy_kernel": "http://i/k", "deploy_ramdisk": "http://i/r"},
        ),
    ],
)
def test_the_bmc_decides_between_iso_and_kernel(address, expected):
    assert deploy_image_info(ALL, bmc.parse(address).virtual_media) == expected


def test_virtual_media_without_an_iso_takes_the_kernel_and_ramdisk():
    images = {"deploy_kernel": "http://i/k", "deploy_ramdisk": "http://i/r", "deploy_iso": None}
    assert deploy_image_info(images, True) == {**REMOVED, "deploy_kernel": "http://i/k", "deploy_ramdisk": "http://i/r"}


@pytest.mark.parametrize(
    "images",
    [
        {"deploy_iso": "http://i/iso"},  # an IPMI host cannot boot an ISO
        {"deploy_kernel": "http://i/k"},  # a kernel without its ramdisk
        {},
    ],
)
def test_nothing_that_fits_leaves_driver_info_alone(images):
    assert deploy_image_info(images, False) is None


def test_the_patch_removes_the_other_choice():
    current = {"ipmi_address": "10.1.1.1", "deploy_iso": "http://i/iso", "kernel_append_params": "x"}
    ops = diff_patch(current, deploy_image_info(ALL, False), "/driver_info")
    assert sorted(ops, key=lambda o: o["path"]) == [
        {"op": "remove", "path": "/driver_info/deploy_iso"},
        {"op": "add", "path": "/driver_info/deploy_kernel", "value": "http://i/k"},
        {"op": "add", "path": "/driver_info/deploy_ramdisk", "value": "http://i/r"},
        {"op": "remove", "path": "/driver_info/kernel_append_params"},
    ]
