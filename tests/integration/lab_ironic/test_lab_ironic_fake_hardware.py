"""fake:// hosts: Ironic fake-hardware nodes go through the whole lifecycle with a config drive."""

from __future__ import annotations

import pytest

from lab.ironic import iso

pytestmark = pytest.mark.timeout(600)


def test_fake_hardware_enroll_manage_provide_deploy_undeploy(ironic):
    bm = ironic.baremetal
    # a MAC of this run only: no other node holds it
    mac = ":".join(["52:54:00", ironic.run[0:2], ironic.run[2:4], ironic.run[4:6]])
    node = ironic.register_fake(f"t{ironic.run}-fake-0", mac)
    assert (node.driver, node.boot_interface, node.deploy_interface, node.power_interface) == (
        "fake-hardware",
        "fake",
        "fake",
        "fake",
    )
    assert node.provision_state == "enroll"

    bm.set_node_provision_state(node.id, "manage")
    managed = ironic.wait(node.id, "manageable")
    # the fake power interface reports whatever Ironic last set: nothing yet
    assert managed.power_state is None
    bm.set_node_power_state(node.id, "power off")
    bm.wait_for_node_power_state(node.id, "power off", timeout=60)

    bm.set_node_provision_state(node.id, "provide")
    ironic.wait(node.id, "available")
    image = ironic.inventory["images"]["test_image"]
    bm.update_node(
        node.id,
        instance_info={
            "image_source": image["url"],
            "image_os_hash_algo": image["checksumType"],
            "image_os_hash_value": image["checksum"],
        },
    )
    drive = {
        "meta_data": {"uuid": node.id, "name": "fake-0", "local-hostname": "fake-0"},
        "network_data": {"links": [{"id": "eth0", "type": "phy", "ethernet_mac_address": mac}]},
        "user_data": "#cloud-config\nhostname: fake-0 ✓\n",
    }
    bm.set_node_provision_state(node.id, "active", config_drive=drive)
    active = ironic.wait(node.id, "active")
    assert active.instance_info["configdrive"] == "******"
    # no BMC holds it: the lab reads what Ironic stored
    stored = iso.stored_config_drive(ironic.cfg, node.id)
    assert stored["meta_data"] == drive["meta_data"]
    assert stored["network_data"] == drive["network_data"]
    assert stored["user_data"] == drive["user_data"].encode()

    bm.set_node_power_state(node.id, "rebooting")
    bm.wait_for_node_power_state(node.id, "power on", timeout=60)

    bm.set_node_provision_state(node.id, "deleted")
    available = ironic.wait(node.id, "available")
    assert "configdrive" not in available.instance_info
    assert iso.stored_config_drive(ironic.cfg, node.id) is None
