"""12 lab hosts registered through the Redfish driver (via the fault proxy), 3 deployed at once
with a config drive that is then read back from the emulated BMC's virtual media."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from lab.ironic import iso

pytestmark = pytest.mark.timeout(1800)

REGISTERED = 12
DEPLOYED = (0, 5, 11)


def config_drive(host: dict, index: int) -> dict:
    """Shaped as baremetal-operator sends it: meta_data over BMO's defaults, network_data, user_data."""
    return {
        "meta_data": {
            "uuid": str(uuid.uuid4()),
            "metal3-namespace": "lab-ironic",
            "metal3-name": host["name"],
            "local-hostname": host["name"],
            "local_hostname": host["name"],
            "name": host["name"],
            "providerid": f"metal3://lab-ironic/{host['name']}/m-{index}",
        },
        "network_data": {
            "links": [{"id": "enp1s0", "type": "phy", "ethernet_mac_address": host["boot_mac"], "mtu": 1500}],
            "networks": [
                {
                    "id": "baremetal",
                    "type": "ipv4",
                    "link": "enp1s0",
                    "ip_address": f"192.0.2.{10 + index}",
                    "netmask": "255.255.255.0",
                    "routes": [{"network": "0.0.0.0", "netmask": "0.0.0.0", "gateway": "192.0.2.1"}],
                }
            ],
            "services": [{"type": "dns", "address": "192.0.2.53"}],
        },
        # non-ASCII on purpose: the bytes on the BMC must be the UTF-8 of what was sent
        "user_data": f"#cloud-config\nhostname: {host['name']}\nruncmd:\n  - echo 'héllo ✓ {index}'\n",
    }


def test_register_12_deploy_3_concurrently_and_read_config_drive_back(ironic):
    # the lab has 12 hosts unless BMCAPI_LAB_HOSTS says otherwise
    hosts = ironic.free_hosts(REGISTERED)
    nodes = [ironic.register_redfish(h) for h in hosts]

    def manage(node):
        ironic.baremetal.set_node_provision_state(node.id, "manage")
        return ironic.wait(node.id, "manageable")

    with ThreadPoolExecutor(REGISTERED) as pool:
        managed = list(pool.map(manage, nodes))
    # verifying read each system's power through the proxy: every node sees its own BMC
    bmc_power = [iso.bmc_get(ironic.cfg, f"/redfish/v1/Systems/{h['uuid']}")["PowerState"] for h in hosts]
    assert [n.power_state for n in managed] == [f"power {p.lower()}" for p in bmc_power]
    assert all(n.last_error is None for n in managed)

    drives = {i: config_drive(hosts[i], i) for i in DEPLOYED}

    def deploy(i):
        bm = ironic.baremetal
        node = nodes[i]
        bm.set_node_provision_state(node.id, "provide")
        ironic.wait(node.id, "available")
        bm.update_node(node.id, instance_info={"boot_iso": ironic.inventory["images"]["boot_iso"]})
        bm.set_node_provision_state(node.id, "active", config_drive=drives[i])
        return ironic.wait(node.id, "active")

    with ThreadPoolExecutor(len(DEPLOYED)) as pool:
        deployed = dict(zip(DEPLOYED, pool.map(deploy, DEPLOYED), strict=True))

    for i, node in deployed.items():
        host = hosts[i]
        assert node.power_state == "power on"
        # the API masks the drive; the BMC holds the real thing
        assert node.instance_info.get("configdrive") == "******"
        system = iso.bmc_get(ironic.cfg, f"/redfish/v1/Systems/{host['uuid']}")
        assert system["PowerState"] == "On"
        assert system["Boot"]["BootSourceOverrideTarget"] == "Cd"
        media = iso.virtual_media(ironic.cfg, host["uuid"])
        assert media["Cd"]["Inserted"] and media["Cd"]["ImageName"] == f"boot-{node.id}.iso"
        floppy = media["Floppy"]
        assert floppy["Inserted"] and floppy["ImageName"] == f"configdrive-{node.id}"
        read = iso.read_config_drive(iso.media_file(ironic.cfg, floppy))
        assert read["volume_id"] == "config-2"
        assert read["meta_data"] == drives[i]["meta_data"]
        assert read["network_data"] == drives[i]["network_data"]
        assert read["user_data"] == drives[i]["user_data"].encode("utf-8")

    # the other nine were left alone
    for i, node in enumerate(nodes):
        if i not in DEPLOYED:
            assert ironic.baremetal.get_node(node.id).provision_state == "manageable"

    def undeploy(i):
        ironic.baremetal.set_node_provision_state(nodes[i].id, "deleted")
        return ironic.wait(nodes[i].id, "available")

    with ThreadPoolExecutor(len(DEPLOYED)) as pool:
        undeployed = list(pool.map(undeploy, DEPLOYED))
    for i, node in zip(DEPLOYED, undeployed, strict=True):
        assert node.power_state == "power off"
        assert "configdrive" not in node.instance_info
        media = iso.virtual_media(ironic.cfg, hosts[i]["uuid"])
        assert not media["Cd"]["Inserted"] and not media["Floppy"]["Inserted"]
        assert iso.bmc_get(ironic.cfg, f"/redfish/v1/Systems/{hosts[i]['uuid']}")["PowerState"] == "Off"
