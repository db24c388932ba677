"""provision_cluster.yml on the agent path: three lab Redfish hosts whose ramdisk is a real ironic-python-agent.

The user's flow, as a Metal3 user runs it: the description's hosts are registered as baremetal-operator registers
them (agent inspection, automated cleaning in metadata mode, the agent ISO as ``deploy_iso``), the machines
deploy a whole-disk image with its checksum through Ironic's direct deploy interface, each host reboots into
its disk and the node simulator plays cloud-init from the config drive the agent wrote there: the Nodes join.
deprovision_cluster.yml cleans the disks again and the hosts are available. Asserted on the workload API, the
store, the Ironic nodes, the emulated BMCs and the hosts' own disks (the loop devices the agents wrote).
"""

from __future__ import annotations

import base64
import random
import subprocess

import pytest
import yaml

from lab.ironic import hosts as lab_hosts
from lab.ironic import iso
from lab.nodesim import agent
from lab.nodesim import client as nodesim
from tests.integration.e2e.conftest import E2E, free_endpoint, new_names, prov_network
from tests.integration.net import LOOP

from .test_agent_hosts import bmc_macs

pytestmark = pytest.mark.timeout(3600)

PICKED = [8, 9, 10]  # lab hosts host-09 .. host-11
STALE_OFFSET = 1024**3  # 1 GiB into the disk: past the image, before the config drive at the disk's end
STALE_LABEL = "STALEDATA"


def description(al, name: str, ns: str, endpoint: str, octet: int) -> dict:
    """1 control plane + 2 workers on three agent-path hosts (inspection and cleaning at BMO's defaults)."""
    image = {k: al.inv["images"]["agent_image"][k] for k in ("url", "checksum", "checksumType", "format")}
    hosts = []
    for i in PICKED:
        h = al.host(i)
        hosts.append({
            "name": h["name"],
            "spec": {"bmc": {"address": h["bmc"]["address"]}, "bootMACAddress": h["boot_mac"]},
            "bmc_username": h["bmc"]["username"],
            "bmc_password": h["bmc"]["password"],
        })  # fmt: skip
    return {
        "name": name,
        "namespace": ns,
        "provider": "metal3",
        "kubernetes_version": "v1.34.4",
        "control_plane_endpoint": {"host": endpoint, "port": 6443},
        "control_plane": {"replicas": 1, "image": image},
        "workers": [{"name": "md-0", "replicas": 2, "image": image}],
        **prov_network(name, octet),
        "hosts": hosts,
    }  # fmt: skip


def stale_data(al, i: int) -> str:
    """A partition with an ISO9660 file system, as a host's previous life leaves one; the loop device."""
    name = al.host(i)["name"]
    dev = agent.ensure_disk(al.cfg, name, lab_hosts.DISK_BYTES)
    subprocess.run(["sgdisk", "-Z", dev], capture_output=True, check=False)
    start = STALE_OFFSET // 512
    subprocess.run(["sgdisk", "-n", f"1:{start}:+8M", "-c", "1:stale", dev], capture_output=True, check=True)
    iso_file = al.tmp / f"{name}-stale.iso"
    src = al.tmp / f"{name}-stale"
    src.mkdir(exist_ok=True)
    (src / "old.txt").write_text("a previous tenant's data\n")
    subprocess.run(["genisoimage", "-quiet", "-o", str(iso_file), "-V", STALE_LABEL, str(src)], check=True)
    with open(dev, "r+b") as fh:
        fh.seek(STALE_OFFSET)
        fh.write(iso_file.read_bytes())
        fh.flush()
    # the kernel's view of the new table (what IPA itself runs after partitioning; BLKRRPART alone does not
    # show the partition of a loop device here)
    subprocess.run(["partprobe", dev], capture_output=True, check=True)
    assert agent.partitions(dev) == [f"{dev}p1"], agent.partitions(dev)
    assert read_volume_id(dev, STALE_OFFSET) == STALE_LABEL
    return dev


def read_volume_id(dev: str, offset: int) -> str | None:
    """The ISO9660 volume id of a file system starting at ``offset`` of the device, None when there is none."""
    with open(dev, "rb") as fh:
        fh.seek(offset + 32768)
        pvd = fh.read(2048)
    return pvd[40:72].decode(errors="replace").strip() if pvd[1:6] == b"CD001" else None


def secret_text(store, ref: dict, ns: str, keys: tuple[str, ...]) -> str:
    data = store.get("Secret", ref["name"], ref.get("namespace") or ns)["data"]
    key = next(k for k in keys if k in data)
    return base64.b64decode(data[key]).decode()


def test_agent_hosts_join_through_provision_cluster_and_are_cleaned_on_deprovision(lab, agentlab, tmp_path):
    lab.need("kube", "ironic", "nodesim")
    al = agentlab
    al.wait_free(PICKED)
    for i in PICKED:
        stale_data(al, i)
    name, ns = new_names("a")
    endpoint = free_endpoint(f"{LOOP}.9")
    desc = description(al, name, ns, endpoint, random.randint(100, 199))
    # BMO's DEPLOY_ISO_URL; no boot_iso: images deploy with Ironic's direct deploy interface
    driver = {"ironic_url": al.inv["ironic"]["url"], "deploy_iso": al.inv["images"]["ipa_iso"], "poll": 1}
    extra = {"capi_host_driver_options": driver, "capi_no_log_hosts": False, "capi_wait_timeout": 1500}
    (tmp_path / "e2e").mkdir()
    e = E2E(lab, tmp_path / "e2e", "metal3", desc, extra)
    al.ns = ns  # the fixture's cleanup deletes this namespace's Ironic nodes whatever happens
    image = al.inv["images"]["agent_image"]
    e.play("provision_cluster.yml")

    # joined: one Ready Node per Machine, with the Machine's providerID
    machines = e.machines()
    nodes = e.workload_nodes()
    assert len(machines) == 3 and len(nodes) == 3, (sorted(machines), nodes)
    for mname, m in machines.items():
        assert m["status"]["phase"] == "Running", (mname, m["status"])
        node = nodes[m["status"]["nodeRef"]["name"]]
        assert node["ready"] == "True" and node["providerID"] == m["spec"]["providerID"], (mname, node)

    s = e.store()
    try:
        for i in PICKED:
            h = al.host(i)
            hname = h["name"]
            bmh = s.get("BareMetalHost", hname, ns)
            node = al.conn.baremetal.get_node(f"{ns}~{hname}")
            # registered as BMO does on this path: agent inspection, metadata cleaning, the agent ISO
            assert node.inspect_interface == "agent" and node.is_automated_clean_enabled is True
            assert node.driver_info["deploy_iso"] == al.inv["images"]["ipa_iso"]
            # inspected: status.hardware from Ironic's inventory, the host the BMC emulates
            hw = bmh["status"]["hardware"]
            assert sorted(n["mac"] for n in hw["nics"]) == bmc_macs(al, i) == [h["boot_mac"]]
            assert hw["nics"][0]["name"] == lab_hosts.NIC_NAME and hw["nics"][0]["pxe"] is True
            assert hw["cpu"]["count"] == lab_hosts.CPU["count"] and hw["cpu"]["model"] == lab_hosts.CPU["model"]
            assert hw["ramMebibytes"] == lab_hosts.MEMORY_MIB and hw["hostname"] == hname
            (disk,) = hw["storage"]
            assert disk["sizeBytes"] == lab_hosts.DISK_BYTES and disk["name"] == al.disk(i)
            assert disk["serialNumber"] == lab_hosts.disk_serial(i + 1)
            # deployed with BMO's instance_info through the direct deploy interface
            assert node.provision_state == "active" and node.deploy_interface == "direct"
            assert node.instance_info["image_source"] == image["url"]
            assert node.instance_info["image_os_hash_algo"] == "sha256"
            assert node.instance_info["image_os_hash_value"] == image["checksum"]
            # cleaned (metadata) before the deploy: the stale partition's file system is gone
            assert read_volume_id(al.disk(i), STALE_OFFSET) is None
            # the image's bytes on the disk, as its checksum says
            assert al.image_on_disk(i, image)
            # the config drive partition the agent wrote: the rendered data and the bootstrap user data
            part = agent.config_drive_partition(al.disk(i))
            assert part, al.partition_table(i)
            drive = iso.read_config_drive(part)
            spec = bmh["spec"]
            assert drive["user_data"].decode() == secret_text(s, spec["userData"], ns, ("userData", "value"))
            rendered_md = yaml.safe_load(secret_text(s, spec["metaData"], ns, ("metaData", "value")))
            assert rendered_md["cluster"] == name
            assert {k: drive["meta_data"].get(k) for k in rendered_md} == rendered_md
            assert drive["meta_data"]["uuid"] == bmh["metadata"]["uid"] and drive["meta_data"]["metal3-name"] == hname
            rendered_nd = yaml.safe_load(secret_text(s, spec["networkData"], ns, ("networkData", "value")))
            assert drive["network_data"] == rendered_nd
            assert drive["network_data"]["links"][0]["ethernet_mac_address"] == h["boot_mac"]
            # rebooted into the disk: on, the agent ISO ejected, no agent running, the simulator read the disk
            assert al.system_power(i) == "On" and node.power_state == "power on"
            cd = iso.virtual_media(al.cfg, h["uuid"]).get("Cd") or {}
            assert not cd.get("Inserted"), cd
            assert f"{agent.PREFIX}{hname}" not in al.agents()
            seen = nodesim.host(al.cfg, f"ironic/{node.id}") or {}
            assert seen.get("source") == "disk", seen
    finally:
        s.close()

    e.play("deprovision_cluster.yml")
    s = e.store()
    try:
        for i in PICKED:
            hname = al.host(i)["name"]
            node = al.conn.baremetal.get_node(f"{ns}~{hname}")
            bmh = s.get("BareMetalHost", hname, ns)
            assert bmh["status"]["provisioning"]["state"] == "available" and not bmh["spec"].get("consumerRef")
            assert node.provision_state in ("available", "manageable") and not node.instance_id
            # cleaned again: neither the config drive nor the image's partition table is left
            assert agent.config_drive_partition(al.disk(i)) is None
            assert "lab-root" not in al.partition_table(i)
    finally:
        s.close()
