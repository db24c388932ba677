"""The deploy ramdisk at registration: baremetalhost's deploy_kernel / deploy_ramdisk / deploy_iso reach the
Ironic node's driver_info when the host is registered (BMO's DEPLOY_KERNEL_URL / DEPLOY_RAMDISK_URL /
DEPLOY_ISO_URL, set by configureNode), since inspection and cleaning boot that ramdisk before any deploy.
One lab Redfish host, asserted on Ironic; a second run with the same options changes nothing.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.timeout(900)

IMAGES = {
    "deploy_kernel": "http://images.example/ipa.kernel",
    "deploy_ramdisk": "http://images.example/ipa.initramfs",
    "deploy_iso": "http://images.example/ipa.iso",
}


def test_deploy_images_set_at_registration(hostlab):
    hl = hostlab
    hl.wait_free([11])
    entry = hl.bmh_entry(11)
    task = {"baremetal.capi.baremetalhost": {"hosts": [entry], "wait": True, **IMAGES}}
    (reg,) = hl.play([task])
    assert [h["state"] for h in reg["hosts"]] == ["available"], reg
    node = hl.node(hl.host(11)["name"])
    assert {k: node.driver_info.get(k) for k in IMAGES} == IMAGES, node.driver_info
    (again,) = hl.play([{"baremetal.capi.baremetalhost": {"hosts": [entry], "wait": True, **IMAGES}}])
    assert again["changed"] is False, again
