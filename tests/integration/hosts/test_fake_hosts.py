"""BareMetalHosts on lab-only fake:// (Ironic fake-hardware) hosts: the whole state machine, fast.

Through ansible-playbook; asserted on the Ironic nodes and the store, not on module output alone.
"""

from __future__ import annotations

import json
import time

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.hosts.ironic import node as ironic_node
from ansible_collections.baremetal.capi.plugins.module_utils.hosts.ironic.driver import IronicDriver

pytestmark = pytest.mark.timeout(900)


def fake_entry(hl, i: int, **spec) -> dict:
    mac = f"52:54:00:{int(hl.ns[1:3], 16):02x}:{int(hl.ns[3:5], 16):02x}:{i:02x}"
    return {
        "name": f"fake-{i}",
        "spec": {
            "bmc": {"address": f"fake://fake-{i}"},
            "bootMACAddress": mac,
            "online": True,
            "automatedCleaningMode": "disabled",
            "inspectionMode": "disabled",
            **spec,
        },
        "labels": {"rack": "r1"},
        "hardware": {"hostname": f"fake-{i}", "nics": [{"name": "eth0", "mac": mac, "ip": f"192.168.111.{20 + i}"}]},
    }


def test_fake_hosts_register_provision_deprovision_power_delete(hostlab):
    hl = hostlab
    entries = [fake_entry(hl, i) for i in range(3)]

    # check mode writes nothing and calls no Ironic
    (checked,) = hl.play([{"baremetal.capi.baremetalhost": {"hosts": entries, "wait": True}}], check=True)
    assert checked["changed"] is True
    assert hl.store.list("BareMetalHost", hl.ns) == []
    assert hl.node("fake-0") is None

    (reg,) = hl.play([{"baremetal.capi.baremetalhost": {"hosts": entries, "wait": True}}])
    assert reg["changed"] is True
    for i in range(3):
        node = hl.node(f"fake-{i}")
        assert node.provision_state == "manageable"  # available host, manageable node
        assert node.driver == "fake-hardware" and node.power_state == "power on"
        assert [p.address for p in hl.conn.baremetal.ports(node_id=node.id)] == [entries[i]["spec"]["bootMACAddress"]]
        bmh = hl.bmh(f"fake-{i}")
        assert bmh["status"]["provisioning"]["state"] == "available"
        assert bmh["status"]["provisioning"]["ID"] == node.id
        assert bmh["status"]["poweredOn"] is True
        assert bmh["status"]["hardware"]["nics"][0]["ip"] == f"192.168.111.{20 + i}"
        assert "baremetalhost.metal3.io" in bmh["metadata"]["finalizers"]
        assert hl.store.get("HardwareData", f"fake-{i}", hl.ns)["spec"]["hardware"]["hostname"] == f"fake-{i}"

    # converged: again is no change, in check mode too
    (again,) = hl.play([{"baremetal.capi.baremetalhost": {"hosts": entries, "wait": True}}])
    assert again["changed"] is False, again["hosts"]
    (again_check,) = hl.play([{"baremetal.capi.baremetalhost": {"hosts": entries, "wait": True}}], check=True)
    assert again_check["changed"] is False

    (info,) = hl.play([{"baremetal.capi.baremetalhost_info": {"state": ["available"], "label_selector": "rack=r1"}}])
    assert [h["name"] for h in info["hosts"]] == ["fake-0", "fake-1", "fake-2"]

    # provision one as the machine flow sets the spec: image, user data, consumerRef
    image = dict(hl.inv["images"]["test_image"])
    hl.secret("fake-0-userdata", userData="#cloud-config\n")
    spec = {
        "image": image,
        "userData": {"name": "fake-0-userdata", "namespace": hl.ns},
        "consumerRef": {"kind": "Metal3Machine", "name": "m0", "namespace": hl.ns},
    }
    (prov,) = hl.play([{"baremetal.capi.baremetalhost": {"name": "fake-0", "spec": spec, "wait": True}}])
    assert prov["hosts"][0]["state"] == "provisioned"
    node, bmh = hl.node("fake-0"), hl.bmh("fake-0")
    assert node.provision_state == "active" and node.instance_id == bmh["metadata"]["uid"]
    assert bmh["status"]["provisioning"]["image"]["url"] == image["url"]
    assert bmh["spec"]["bmc"]["address"] == "fake://fake-0"  # the merge patch kept the registration
    assert hl.node("fake-1").provision_state == "manageable"  # the others untouched

    # power off through online, and back
    (off,) = hl.play([{"baremetal.capi.baremetalhost": {"name": "fake-0", "spec": {"online": False}, "wait": True}}])
    assert off["changed"] is True
    assert hl.node("fake-0").power_state == "power off" and hl.bmh("fake-0")["status"]["poweredOn"] is False
    hl.play([{"baremetal.capi.baremetalhost": {"name": "fake-0", "spec": {"online": True}, "wait": True}}])
    assert hl.node("fake-0").power_state == "power on"

    # deprovision: the image cleared -> available, the node back to available
    (deprov,) = hl.play([{"baremetal.capi.baremetalhost": {"name": "fake-0", "spec": {"image": None}, "wait": True}}])
    assert deprov["hosts"][0]["state"] == "available"
    assert hl.node("fake-0").provision_state == "available"
    assert "image" not in hl.bmh("fake-0")["status"]["provisioning"]

    # remove: Ironic node and object gone
    (gone,) = hl.play(
        [
            {
                "baremetal.capi.baremetalhost": {
                    "hosts": [{"name": e["name"]} for e in entries],
                    "state": "absent",
                    "wait": True,
                }
            }
        ]
    )
    assert gone["changed"] is True
    assert all(hl.node(e["name"]) is None for e in entries)
    assert hl.store.list("BareMetalHost", hl.ns) == []
    (gone_again,) = hl.play([{"baremetal.capi.baremetalhost": {"name": "fake-0", "state": "absent", "wait": True}}])
    assert gone_again["changed"] is False


def test_bad_input_fails_before_anything_is_written(hostlab):
    hl = hostlab
    entry = fake_entry(hl, 9, bmc={"address": "nosuch://x"})
    (bad,) = hl.play([{"baremetal.capi.baremetalhost": {"hosts": [entry]}}], expect_failure=True)
    assert bad["failed"] is True
    assert "spec.bmc.address" in bad["msg"] and f"BareMetalHost {hl.ns}/fake-9" in bad["msg"]
    assert hl.store.list("BareMetalHost", hl.ns) == []
    entry = fake_entry(hl, 9, image={"url": "http://x/i.raw"}, online=True)
    (bad,) = hl.play([{"baremetal.capi.baremetalhost": {"hosts": [entry]}}], expect_failure=True)
    assert "spec.image.checksum" in bad["msg"]
    assert hl.store.list("BareMetalHost", hl.ns) == []


def test_status_annotation_restores_an_empty_status(hostlab):
    """What clusterctl move carries: the status as an annotation, restored instead of starting over."""
    hl = hostlab
    entry = fake_entry(hl, 7, online=False)
    entry.pop("hardware")
    moved = {
        "operationalStatus": "OK",
        "poweredOn": False,
        # the hints BMO saved for a host without any (its default hardware profile's): nothing to prepare again
        "provisioning": {"state": "available", "ID": "", "rootDeviceHints": {"deviceName": "/dev/sda"}},
        "hardware": {"hostname": "from-annotation", "nics": []},
    }
    entry["annotations"] = {"baremetalhost.metal3.io/status": json.dumps(moved)}
    (res,) = hl.play([{"baremetal.capi.baremetalhost": {"hosts": [entry], "wait": True}}])
    assert res["hosts"][0]["state"] == "available"
    bmh = hl.bmh("fake-7")
    assert "baremetalhost.metal3.io/status" not in (bmh["metadata"].get("annotations") or {})
    assert bmh["status"]["hardware"]["hostname"] == "from-annotation"
    # the moved status stays: its provisioning settings are what the spec asks, there is nothing to prepare
    assert bmh["status"]["provisioning"]["rootDeviceHints"] == {"deviceName": "/dev/sda"}
    node = hl.node("fake-7")
    assert node.provision_state == "manageable" and bmh["status"]["provisioning"]["ID"] == node.id


def test_ironic_endpoint_from_clouds_yaml_as_awx_sets_it(hostlab):
    """OS_CLIENT_CONFIG_FILE + OS_CLOUD (what AWX's OpenStack credential injects) instead of ironic_url."""
    hl = hostlab
    env = {"OS_CLIENT_CONFIG_FILE": hl.inv["ironic"]["clouds_yaml"], "OS_CLOUD": hl.inv["ironic"]["cloud"]}
    (res,) = hl.play([{"baremetal.capi.baremetalhost": {"hosts": [fake_entry(hl, 5)], "wait": True}}], env=env)
    assert res["hosts"][0]["state"] == "available"
    assert hl.node("fake-5").provision_state == "manageable"
    # and without any endpoint the task says what is missing
    (bad,) = hl.play(
        [{"baremetal.capi.baremetalhost": {"hosts": [fake_entry(hl, 6)], "ironic_url": None}}],
        env={"OS_CLOUD": ""},
        expect_failure=True,
    )
    assert bad["failed"] is True and "OS_CLOUD" in bad["msg"]
    assert [h["metadata"]["name"] for h in hl.store.list("BareMetalHost", hl.ns)] == ["fake-5"]


def test_a_provide_another_runner_already_did_is_read_again(hostlab, monkeypatch):
    """Between this step's read of the node and its provide, another runner provides it: real Ironic answers
    400 (InvalidStateRequested); the step says so and reads the node again, the next ones deploy."""
    hl = hostlab
    hl.play([{"baremetal.capi.baremetalhost": {"hosts": [fake_entry(hl, 7)], "wait": True}}])
    hl.secret("fake-7-userdata", userData="#cloud-config\n")
    bmh = hl.bmh("fake-7")
    bmh["spec"].update(
        image=dict(hl.inv["images"]["test_image"]),
        userData={"name": "fake-7-userdata", "namespace": hl.ns},
        consumerRef={"kind": "Metal3Machine", "name": "m7", "namespace": hl.ns},
    )
    hl.store.update(bmh)
    assert hl.node("fake-7").provision_state == "manageable"

    raced = []
    real_check = ironic_node.before_state_change

    def before_state_change(ctx):  # the race window: after the read, before the state change
        if not raced and ctx.node.provision_state == "manageable":
            hl.conn.baremetal.set_node_provision_state(ctx.node.id, "provide", wait=True, timeout=120)
            raced.append(ctx.node.id)
        return real_check(ctx)

    monkeypatch.setattr(ironic_node, "before_state_change", before_state_change)
    driver = IronicDriver(ironic_url=hl.inv["ironic"]["url"], poll=1, boot_iso=hl.inv["images"]["boot_iso"])
    try:
        step = driver.reconcile(hl.store, hl.bmh("fake-7"))
        assert raced and "changed state meanwhile" in step.message, step.message  # not an error: read again
        assert hl.bmh("fake-7")["status"]["provisioning"]["state"] == "provisioning"
        deadline = time.monotonic() + 120
        while not step.done and time.monotonic() < deadline:
            time.sleep(1)
            step = driver.reconcile(hl.store, hl.bmh("fake-7"))
    finally:
        driver.close()
    assert step.done, step.message
    assert hl.bmh("fake-7")["status"]["provisioning"]["state"] == "provisioned"
    assert hl.node("fake-7").provision_state == "active"
