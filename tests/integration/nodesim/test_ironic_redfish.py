"""A redfish lab host: the simulator reads the bootstrap data from the config drive on the BMC's virtual media."""

from __future__ import annotations

import uuid
from urllib.parse import urlsplit

import pytest
from kubernetes import client as k

from lab.ironic import hosts as lab_hosts
from lab.nodesim import client as nodesim
from lab.nodesim import clusters

from . import cabpk
from .conftest import UNREACHABLE, eventually, install_cni, ready_status, workload_client

pytestmark = pytest.mark.timeout(1200)


@pytest.fixture
def redfish_node(nodesim_lab, ironic):
    """One lab host no Ironic node uses now, registered as baremetal-operator registers a host."""
    inventory = lab_hosts.inventory(nodesim_lab.cfg)

    def free_host():
        used = {p.address.lower() for p in ironic.baremetal.ports()}
        return next((h for h in reversed(inventory["hosts"]) if h["boot_mac"].lower() not in used), None)

    # the lab's hosts are shared with the rest of the run: wait for one nobody has registered
    host = eventually(free_host, "a lab host no Ironic node uses")
    bmc = host["bmc"]
    url = urlsplit(bmc["address"].partition("+")[2])
    node = ironic.baremetal.create_node(
        name=f"nodesim-{uuid.uuid4().hex[:6]}-{host['name']}",
        driver="redfish",
        driver_info={
            "redfish_address": f"{url.scheme}://{url.netloc}",
            "redfish_system_id": url.path,
            "redfish_username": bmc["username"],
            "redfish_password": bmc["password"],
        },
        boot_interface="redfish-virtual-media",
        deploy_interface="ramdisk",
        automated_clean=False,
        properties={"cpu_arch": "x86_64", "capabilities": "boot_mode:uefi"},
        instance_info={"boot_iso": inventory["images"]["boot_iso"]},
    )
    ironic.baremetal.create_port(node_id=node.id, address=host["boot_mac"], pxe_enabled=True)
    ironic.baremetal.set_node_provision_state(node, "manage", wait=True, timeout=300)
    ironic.baremetal.set_node_provision_state(node, "provide", wait=True, timeout=300)
    yield ironic.baremetal.get_node(node.id), host
    try:
        if ironic.baremetal.get_node(node.id).provision_state == "active":
            ironic.baremetal.set_node_provision_state(node, "deleted", wait=True, timeout=300)
        ironic.baremetal.set_node_maintenance(node.id, reason="test done")
        ironic.baremetal.delete_node(node.id)
    except Exception:  # noqa: BLE001 - best effort; lab reset removes the rest
        pass


def test_redfish_host_init_from_virtual_media(nodesim_lab, ironic, redfish_node, endpoint, tmp_path):
    cfg = nodesim_lab.cfg
    node, host = redfish_node
    cluster, machine = "rf-cluster", "rf-cluster-cp-0"
    ca = cabpk.new_cluster_ca()
    meta = {
        "uuid": str(uuid.uuid4()),
        "metal3-namespace": "nodesim",
        "metal3-name": host["name"],
        "local-hostname": host["name"],
        "local_hostname": host["name"],
        "name": machine,
        "providerid": f"nodesim/{host['name']}/{machine}",
    }
    data = cabpk.init_data(cluster, endpoint, ca, labels={"metal3.io/uuid": node.id})
    ironic.baremetal.set_node_provision_state(
        node, "active", config_drive={"meta_data": meta, "user_data": data}, wait=True, timeout=600
    )
    assert ironic.baremetal.get_node(node.id).power_state == "power on"

    core = k.CoreV1Api(workload_client(cabpk.admin_kubeconfig(cluster, endpoint, ca), tmp_path))

    def ready(want):
        def check():
            try:
                return ready_status(core.read_node(machine)) == want
            except UNREACHABLE:
                return False

        return check

    install_cni(cabpk.admin_kubeconfig(cluster, endpoint, ca), not_ready_first=machine)
    eventually(ready("True"), "the redfish host's Node Ready", last=lambda: nodesim.host(cfg, f"ironic/{node.id}"))
    n = core.read_node(machine)
    assert n.spec.provider_id == f"metal3://nodesim/{host['name']}/{machine}"
    assert n.metadata.labels["metal3.io/uuid"] == node.id
    # the address the lab gives this host (its BMC's NIC), found through its Ironic port's MAC
    assert {"type": "InternalIP", "address": host["ip"]} in [a.to_dict() for a in n.status.addresses]
    assert n.status.node_info.system_uuid == host["uuid"]

    # its only control-plane host off: the cluster's API goes away with it, and comes back with it
    ironic.baremetal.set_node_power_state(node, "power off", wait=True, timeout=120)
    eventually(lambda: not clusters.running(cfg, endpoint), "the API server stopped with its control plane")
    ironic.baremetal.set_node_power_state(node, "power on", wait=True, timeout=120)
    eventually(ready("True"), "the Node Ready again after power on")
