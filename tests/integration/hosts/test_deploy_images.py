"""The deploy ramdisk at registration: baremetalhost's deploy_kernel / deploy_ramdisk / deploy_iso reach the
Ironic node's driver_info when the host is registered (BMO's DEPLOY_KERNEL_URL / DEPLOY_RAMDISK_URL /
DEPLOY_ISO_URL, set by configureNode), since inspection and cleaning boot that ramdisk before any deploy.
As baremetal-operator chooses (setDeployImage): a virtual-media BMC boots the ISO when one is given, else the
kernel and ramdisk, and the keys of the other choice leave driver_info. One lab Redfish host (virtual media),
asserted on Ironic; a second run with the same options changes nothing. The IPMI host's kernel and ramdisk:
tests/integration/agent/test_agent_ipmi.py.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.timeout(900)

KERNEL = {"deploy_kernel": "http://images.example/ipa.kernel", "deploy_ramdisk": "http://images.example/ipa.initramfs"}
ISO = {"deploy_iso": "http://images.example/ipa.iso"}
KEYS = ("deploy_kernel", "deploy_ramdisk", "deploy_iso")


def test_deploy_images_set_at_registration(hostlab):
    hl = hostlab
    hl.wait_free([11])
    entry = hl.bmh_entry(11)
    name = hl.host(11)["name"]
    # no ISO: a virtual-media host takes the kernel and ramdisk
    (reg,) = hl.play([{"baremetal.capi.baremetalhost": {"hosts": [entry], "wait": True, **KERNEL}}])
    assert [h["state"] for h in reg["hosts"]] == ["available"], reg
    info = hl.node(name).driver_info
    assert {k: info.get(k) for k in KEYS} == {**KERNEL, "deploy_iso": None}, info

    # all three: the ISO wins on virtual media, and the kernel and ramdisk are removed
    task = {"baremetal.capi.baremetalhost": {"hosts": [entry], "wait": True, **KERNEL, **ISO}}
    hl.play([task])
    info = hl.node(name).driver_info
    assert {k: info.get(k) for k in KEYS} == {"deploy_kernel": None, "deploy_ramdisk": None, **ISO}, info
    assert "deploy_kernel" not in info and "deploy_ramdisk" not in info
    (again,) = hl.play([{"baremetal.capi.baremetalhost": {"hosts": [entry], "wait": True, **KERNEL, **ISO}}])
    assert again["changed"] is False, again
    assert {k: hl.node(name).driver_info.get(k) for k in KEYS} == {"deploy_kernel": None, "deploy_ramdisk": None, **ISO}
