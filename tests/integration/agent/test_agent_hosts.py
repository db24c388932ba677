"""BareMetalHosts on the agent path, one host at a time through the baremetalhost module: a wrong image
checksum (BMO's provisioning error, the retry, the corrected image), a live ISO and a customDeploy method.

The three-host flow through provision_cluster.yml (inspection, cleaning, direct deploy, config drive, Nodes
joined, deprovision) is test_agent_cluster.py. Asserted on the BareMetalHost, the Ironic node, the emulated BMC
and the host's own disk (the loop device the agent wrote).
"""

from __future__ import annotations

import json

import pytest

from lab.ironic import iso
from lab.nodesim import agent

pytestmark = pytest.mark.timeout(5400)

# the lab hardware manager's custom deploy step (lab/ipa/bmcapi_lab_ipa.py, which imports IPA: not importable here)
CUSTOM_DEPLOY_STEP = "install_lab_marker"
CUSTOM_DEPLOY_MARKER = b"baremetal.capi lab custom deploy: node "


def bmc_macs(al, i: int) -> list[str]:
    uuid = al.host(i)["uuid"]
    coll = iso.bmc_get(al.cfg, f"/redfish/v1/Systems/{uuid}/EthernetInterfaces")
    return sorted(iso.bmc_get(al.cfg, m["@odata.id"])["MACAddress"].lower() for m in coll["Members"])


def provision_spec(al, i: int, image: dict) -> dict:
    name = al.host(i)["name"]
    al.secret(f"{name}-userdata", userData=f"#cloud-config\nhostname: {name}\n")
    al.secret(f"{name}-metadata", metaData=f"local-hostname: node-{i}\nproviderid: metal3://{al.ns}/{name}/m{i}\n")
    links = [{"id": "enp1s0", "type": "phy", "ethernet_mac_address": al.host(i)["boot_mac"]}]
    al.secret(f"{name}-networkdata", networkData=json.dumps({"links": links, "networks": [], "services": []}))
    return {
        "name": name,
        "spec": {
            "online": True,
            "image": dict(image),
            "userData": {"name": f"{name}-userdata", "namespace": al.ns},
            "metaData": {"name": f"{name}-metadata", "namespace": al.ns},
            "networkData": {"name": f"{name}-networkdata", "namespace": al.ns},
        },
    }


def deploy_failures(al, name: str) -> list[str]:
    """The deploy failures Ironic recorded for the node (its history, API 1.78): one per failed attempt."""
    node = al.node(name)
    resp = al.conn.baremetal.get(f"/nodes/{node.id}/history", microversion="1.78")
    resp.raise_for_status()
    events = [e for e in resp.json()["history"] if e.get("severity") == "ERROR"]
    return [e["event"] for e in events if "checksum" in e["event"].lower()]


def test_wrong_checksum_fails_the_deploy_and_the_corrected_image_provisions(agentlab):
    al = agentlab
    i = 11
    al.wait_free([i])
    h = al.host(i)
    (reg,) = al.play([{"baremetal.capi.baremetalhost": {"hosts": [al.agent_entry(i)], "wait": True}}])
    assert reg["hosts"][0]["state"] == "available"
    good = al.inv["images"]["agent_image"]
    bad = dict(good, checksum="0" * 64)
    spec = provision_spec(al, i, bad)
    (failed,) = al.play([{"baremetal.capi.baremetalhost": {"hosts": [spec], "wait": True}}], expect_failure=True)
    assert failed["failed"] is True
    status = al.bmh(h["name"])["status"]
    # BMO's provisioning error: the image named, then Ironic's last_error (the agent's checksum verification)
    assert status["errorType"] == "provisioning error"
    msg = status["errorMessage"]
    assert msg.startswith(f"Image provisioning failed (url: {bad['url']}, checksum: {bad['checksum']}): "), msg
    assert "checksum" in msg[len("Image provisioning failed") :].split("): ", 1)[1].lower(), msg
    assert status["errorCount"] == 1
    assert len(deploy_failures(al, h["name"])) == 1
    # the deploy stopped at the checksum (IPA streams a raw image to the disk and verifies it as it goes): no
    # config drive was written
    assert agent.config_drive_partition(al.disk(i)) is None

    # retried: as BMO, the failed host is deprovisioned (undeploy, clean) after the backoff and deployed again;
    # the same bad image fails the same way (a second failure in Ironic's history), with BMO's error again
    (again,) = al.play([{"baremetal.capi.baremetalhost": {"hosts": [spec], "wait": True}}], expect_failure=True)
    assert again["failed"] is True
    status = al.bmh(h["name"])["status"]
    assert status["errorType"] == "provisioning error" and status["errorMessage"] == msg
    # BMO zeroes errorCount when the deprovision completes: the retry's failure counts 1 again
    assert status["errorCount"] == 1
    assert len(deploy_failures(al, h["name"])) == 2

    # corrected: provisioned, error cleared, the good image's bytes on the disk
    fixed = {"name": spec["name"], "spec": dict(spec["spec"], image=dict(good))}
    (ok,) = al.play([{"baremetal.capi.baremetalhost": {"hosts": [fixed], "wait": True}}])
    assert ok["hosts"][0]["state"] == "provisioned"
    status = al.bmh(h["name"])["status"]
    assert not status.get("errorType") and not status["errorMessage"] and status["errorCount"] == 0
    assert al.node(h["name"]).provision_state == "active"
    assert al.image_on_disk(i, good)
    assert agent.config_drive_partition(al.disk(i))


def test_live_iso_boots_without_writing_the_disk_and_custom_deploy_runs_its_step(agentlab):
    al = agentlab
    live, custom = 0, 1
    al.wait_free([live, custom])
    entries = [al.agent_entry(live), al.agent_entry(custom)]
    (reg,) = al.play([{"baremetal.capi.baremetalhost": {"hosts": entries, "wait": True, "workers": 2}}])
    assert [h["state"] for h in reg["hosts"]] == ["available"] * 2, reg["hosts"]
    iso_url = al.inv["images"]["boot_iso"]
    specs = [
        {"name": al.host(live)["name"], "spec": {"online": True, "image": {"url": iso_url, "format": "live-iso"}}},
        {"name": al.host(custom)["name"], "spec": {"online": True, "customDeploy": {"method": CUSTOM_DEPLOY_STEP}}},
    ]
    (prov,) = al.play([{"baremetal.capi.baremetalhost": {"hosts": specs, "wait": True, "workers": 2}}])
    assert [h["state"] for h in prov["hosts"]] == ["provisioned"] * 2, prov["hosts"]

    # live-iso: the ramdisk interface boots the ISO from the virtual CD; the disk stays as cleaning left it
    h = al.host(live)
    node = al.node(h["name"])
    assert node.deploy_interface == "ramdisk" and node.instance_info["boot_iso"] == iso_url
    assert al.system_power(live) == "On"
    cd = iso.virtual_media(al.cfg, h["uuid"])["Cd"]
    assert cd.get("Inserted") and iso.iso_volume_id(iso.media_file(al.cfg, cd)) == "LABBOOT"
    assert f"{agent.PREFIX}{h['name']}" not in al.agents()
    assert agent.config_drive_partition(al.disk(live)) is None
    assert "lab-root" not in al.partition_table(live)

    # customDeploy: the custom-agent interface runs the named deploy step in the agent
    h = al.host(custom)
    node, bmh = al.node(h["name"]), al.bmh(h["name"])
    assert node.deploy_interface == "custom-agent" and node.provision_state == "active"
    assert bmh["status"]["provisioning"]["customDeploy"] == {"method": CUSTOM_DEPLOY_STEP}
    with open(al.disk(custom), "rb") as fh:
        head = fh.read(200)
    assert head.startswith(CUSTOM_DEPLOY_MARKER + node.id.encode() + b"\n"), head[:80]
