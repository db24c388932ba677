"""BareMetalHosts on the lab's Redfish BMCs (sushy-tools behind the fault proxy), moved by the ironic driver.

Where the BMC's view is the point: power as the emulated BMC reports it, the config drive read back from its
virtual media, and a deploy fault injected in the proxy.  Asserted on Ironic, the BMC and the store.
"""

from __future__ import annotations

import json

import pytest

from lab.ironic import faults, iso

pytestmark = pytest.mark.timeout(3000)


def config_drive_of(hl, i: int) -> dict:
    media = iso.virtual_media(hl.cfg, hl.host(i)["uuid"])
    drives = [m for m in media.values() if m.get("Inserted") and "configdrive" in (m.get("Image") or "")]
    assert len(drives) == 1, media
    return iso.read_config_drive(iso.media_file(hl.cfg, drives[0]))


def test_register_12_provision_3_power_reboot_deprovision(hostlab):
    hl = hostlab
    hl.wait_free(range(12))
    entries = [hl.bmh_entry(i) for i in range(12)]
    (reg,) = hl.play([{"baremetal.capi.baremetalhost": {"hosts": entries, "wait": True, "workers": 12}}])
    assert reg["changed"] is True and [h["state"] for h in reg["hosts"]] == ["available"] * 12
    for i in range(12):
        h = hl.host(i)
        node = hl.node(h["name"])
        assert node.provision_state == "manageable" and node.driver == "redfish"
        assert node.boot_interface == "redfish-virtual-media"
        assert node.driver_info["redfish_system_id"] == f"/redfish/v1/Systems/{h['uuid']}"
        assert node.is_automated_clean_enabled is False
        bmh = hl.bmh(h["name"])
        assert bmh["status"]["provisioning"]["state"] == "available"
        assert bmh["status"]["poweredOn"] is False and hl.system_power(i) == "Off"
        assert bmh["spec"]["bmc"]["credentialsName"] == f"{h['name']}-bmc-secret"
        assert bmh["status"]["goodCredentials"]["credentials"]["name"] == f"{h['name']}-bmc-secret"

    # three at once, with the Secrets the machine flow would render
    picked = [0, 1, 2]
    specs = []
    for i in picked:
        name = hl.host(i)["name"]
        hl.secret(f"{name}-userdata", userData=f"#cloud-config\nhostname: {name}\n")
        hl.secret(f"{name}-metadata", metaData=f"local-hostname: node-{i}\nproviderid: metal3://{hl.ns}/{name}/m{i}\n")
        hl.secret(
            f"{name}-networkdata",
            networkData=json.dumps(
                {
                    "links": [{"id": "eth0", "type": "phy", "ethernet_mac_address": hl.host(i)["boot_mac"]}],
                    "networks": [],
                    "services": [],
                }
            ),
        )
        specs.append(
            {
                "name": name,
                "spec": {
                    "online": True,
                    "image": dict(hl.inv["images"]["test_image"]),
                    "userData": {"name": f"{name}-userdata", "namespace": hl.ns},
                    "metaData": {"name": f"{name}-metadata", "namespace": hl.ns},
                    "networkData": {"name": f"{name}-networkdata", "namespace": hl.ns},
                    "consumerRef": {
                        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2",
                        "kind": "Metal3Machine",
                        "name": f"m{i}",
                        "namespace": hl.ns,
                    },
                },
            }
        )
    (prov,) = hl.play([{"baremetal.capi.baremetalhost": {"hosts": specs, "wait": True}}])
    assert [h["state"] for h in prov["hosts"]] == ["provisioned"] * 3
    for i in picked:
        name = hl.host(i)["name"]
        bmh, node = hl.bmh(name), hl.node(name)
        assert node.provision_state == "active" and node.instance_id == bmh["metadata"]["uid"]
        assert node.power_state == "power on" and hl.system_power(i) == "On"
        drive = config_drive_of(hl, i)
        assert drive["volume_id"] == "config-2"
        assert drive["user_data"] == f"#cloud-config\nhostname: {name}\n".encode()
        md = drive["meta_data"]
        assert md["local-hostname"] == f"node-{i}"  # from the secret
        assert md["providerid"] == f"metal3://{hl.ns}/{name}/m{i}"
        assert md["uuid"] == bmh["metadata"]["uid"] and md["metal3-name"] == name  # BMO's defaults stay
        assert md["metal3-namespace"] == hl.ns and md["local_hostname"] == name
        assert drive["network_data"]["links"][0]["ethernet_mac_address"] == hl.host(i)["boot_mac"]
    assert hl.node(hl.host(3)["name"]).provision_state == "manageable"

    # converged: no change
    (again,) = hl.play([{"baremetal.capi.baremetalhost": {"hosts": specs, "wait": True}}])
    assert again["changed"] is False, again["hosts"]

    # power off and on through online, seen by the BMC
    h0 = hl.host(0)["name"]
    hl.play([{"baremetal.capi.baremetalhost": {"name": h0, "spec": {"online": False}, "wait": True}}])
    assert hl.system_power(0) == "Off" and hl.bmh(h0)["status"]["poweredOn"] is False
    hl.play([{"baremetal.capi.baremetalhost": {"name": h0, "spec": {"online": True}, "wait": True}}])
    assert hl.system_power(0) == "On"

    # a keyed reboot annotation powers off until it is removed (what remediation relies on)
    key = "reboot.metal3.io/metal3-remediation-test"
    h1 = hl.host(1)["name"]
    hl.play([{"baremetal.capi.baremetalhost": {"name": h1, "annotations": {key: '{"mode":"hard"}'}, "wait": True}}])
    assert hl.system_power(1) == "Off" and hl.node(h1).power_state == "power off"
    assert key in hl.bmh(h1)["metadata"]["annotations"]  # BMO never removes keyed annotations
    hl.play([{"baremetal.capi.baremetalhost": {"name": h1, "annotations": {key: None}, "wait": True}}])
    assert hl.system_power(1) == "On" and hl.bmh(h1)["status"]["poweredOn"] is True

    # the suffixless one is a full cycle: off, the annotation dropped, on again
    hl.play([{"baremetal.capi.baremetalhost": {"name": h1, "annotations": {"reboot.metal3.io": ""}, "wait": True}}])
    # the driver drops the annotation only once it has seen the host off
    assert "reboot.metal3.io" not in hl.bmh(h1)["metadata"].get("annotations", {})
    assert hl.system_power(1) == "On"

    # deprovision the three back to available
    clear = [
        {
            "name": s["name"],
            "spec": {"image": None, "userData": None, "metaData": None, "networkData": None, "consumerRef": None},
        }
        for s in specs
    ]
    (deprov,) = hl.play([{"baremetal.capi.baremetalhost": {"hosts": clear, "wait": True}}])
    assert [h["state"] for h in deprov["hosts"]] == ["available"] * 3
    for i in picked:
        node = hl.node(hl.host(i)["name"])
        assert node.provision_state == "available" and not node.instance_id

    # and remove all twelve
    (gone,) = hl.play(
        [
            {
                "baremetal.capi.baremetalhost": {
                    "hosts": [{"name": e["name"]} for e in entries],
                    "state": "absent",
                    "wait": True,
                    "workers": 12,
                }
            }
        ]
    )
    assert gone["changed"] is True
    assert all(hl.node(e["name"]) is None for e in entries)
    assert hl.store.list("BareMetalHost", hl.ns) == []


def test_deploy_fault_surfaces_ironic_error_and_a_later_run_recovers(hostlab):
    hl = hostlab
    i = 7
    hl.wait_free([i])
    h = hl.host(i)
    entry = hl.bmh_entry(i)
    hl.play([{"baremetal.capi.baremetalhost": {"hosts": [entry], "wait": True}}])
    faults.set_fault(hl.cfg, h["uuid"], fail_virtual_media=True)
    spec = {"name": h["name"], "spec": {"online": True, "image": dict(hl.inv["images"]["test_image"])}}
    (failed,) = hl.play([{"baremetal.capi.baremetalhost": {"hosts": [spec], "wait": True}}], expect_failure=True)
    assert failed["failed"] is True
    bmh = hl.bmh(h["name"])
    assert bmh["status"]["errorType"] == "provisioning error"
    msg = bmh["status"]["errorMessage"]
    assert msg.startswith(f"Image provisioning failed (url: {spec['spec']['image']['url']}")
    # Ironic's own words (from last_error or the node history) are in the message, and in the task's
    ironic_words = msg.split("): ", 1)[1]
    # Ironic clears last_error when it cleans up after this failure: the words come from the node history
    assert "Virtual media mount failed" in ironic_words, msg
    assert ironic_words in failed["msg"]
    assert bmh["status"]["errorCount"] >= 1
    # BMO's retry limit counts the failed attempt and the image it tried
    assert bmh["status"]["provisioningFailCount"] == 1
    assert bmh["status"]["lastAttemptedImage"]["url"] == spec["spec"]["image"]["url"]

    faults.clear(hl.cfg, h["uuid"])
    (ok,) = hl.play([{"baremetal.capi.baremetalhost": {"hosts": [spec], "wait": True}}])
    assert ok["hosts"][0]["state"] == "provisioned"
    bmh = hl.bmh(h["name"])
    assert not bmh["status"].get("errorType") and bmh["status"]["errorCount"] == 0
    assert "provisioningFailCount" not in bmh["status"] and "lastAttemptedImage" not in bmh["status"]
    assert hl.node(h["name"]).provision_state == "active" and hl.system_power(i) == "On"


def _run_under_fault(hl, h: dict, entry: dict, **fault) -> tuple[dict, dict]:
    """The baremetalhost task for ``entry`` while lab host ``h``'s BMC has ``fault``: it must fail; (its result, the
    BareMetalHost after it). The fault is cleared whatever happens."""
    faults.set_fault(hl.cfg, h["uuid"], **fault)
    try:
        (failed,) = hl.play(
            [{"baremetal.capi.baremetalhost": {"hosts": [entry], "wait": True, "wait_timeout": 300}}],
            expect_failure=True,
        )
    finally:
        faults.clear(hl.cfg, h["uuid"])
    assert failed["failed"] is True
    return failed, hl.bmh(h["name"])


def test_bmc_down_and_power_failure_name_the_host_and_a_later_run_recovers(hostlab):
    """BMO's registration error for a BMC that does not answer, its power management error for a power action the
    BMC refuses: each names the host and what Ironic was told, and the next run after the fault is gone
    converges (as BMO requeues a host in error)."""
    hl = hostlab
    i = 8
    hl.wait_free([i])
    h = hl.host(i)
    entry = hl.bmh_entry(i)
    # the BMC is down while the host registers: Ironic cannot validate its power interface
    failed, bmh = _run_under_fault(hl, h, entry, unreachable=True)
    assert bmh["status"]["errorType"] == "registration error", bmh["status"]
    assert bmh["status"]["errorCount"] >= 1
    assert h["name"] in failed["msg"] and "registration error" in failed["msg"], failed["msg"]
    assert bmh["status"]["errorMessage"] in failed["msg"], failed["msg"]
    assert "Unknown error" not in failed["msg"] and "Traceback" not in failed["msg"]
    (ok,) = hl.play([{"baremetal.capi.baremetalhost": {"hosts": [entry], "wait": True}}])
    assert ok["hosts"][0]["state"] == "available", ok["hosts"]
    bmh = hl.bmh(h["name"])
    assert not bmh["status"].get("errorType") and bmh["status"]["errorCount"] == 0, bmh["status"]

    # the chassis lost its power supply: powering on is refused by the BMC
    on = {"name": h["name"], "spec": {"online": True}}
    failed, bmh = _run_under_fault(hl, h, on, fail_power=True)
    assert bmh["status"]["errorType"] == "power management error", bmh["status"]
    assert bmh["status"]["errorMessage"].startswith("PowerOn operation failed: "), bmh["status"]
    assert "Lab fault: power action failed" in bmh["status"]["errorMessage"], bmh["status"]
    assert bmh["status"]["errorMessage"] in failed["msg"] and h["name"] in failed["msg"], failed["msg"]
    assert hl.system_power(i) == "Off" and bmh["status"]["poweredOn"] is False
    (ok,) = hl.play([{"baremetal.capi.baremetalhost": {"hosts": [on], "wait": True}}])
    bmh = hl.bmh(h["name"])
    assert bmh["status"]["poweredOn"] is True and not bmh["status"].get("errorType"), bmh["status"]
    assert hl.system_power(i) == "On"
    (gone,) = hl.play(
        [{"baremetal.capi.baremetalhost": {"hosts": [{"name": h["name"]}], "state": "absent", "wait": True}}]
    )
    assert gone["changed"] is True and hl.node(h["name"]) is None
