"""The baremetalhost / baremetalhost_info modules in-process with a real sqlite store and the external driver.

(The ironic driver is exercised against the lab in tests/integration/hosts.)
"""

from __future__ import annotations

import base64

import pytest

from ansible_collections.baremetal.capi.plugins.modules import baremetalhost, baremetalhost_info

PASSWORD = "s3cret-bmc-password"


@pytest.fixture
def module_store(store) -> dict:
    return {"path": store.path, "namespace": "lab"}


def entry(name="node-0", **spec):
    return {
        "name": name,
        "spec": {
            "bmc": {"address": "redfish-virtualmedia+http://127.0.0.1:8000/redfish/v1/Systems/1"},
            "bootMACAddress": "00:5c:52:31:3a:01",
            "online": True,
            **spec,
        },
        "bmc_username": "admin",
        "bmc_password": PASSWORD,
        "labels": {"rack": "r1"},
        "hardware": {"hostname": name, "nics": [{"name": "eth0", "mac": "00:5c:52:31:3a:01", "ip": "10.0.0.5"}]},
    }


def test_register_writes_host_secret_and_hardware_never_the_password(run, store):
    checked = run(baremetalhost, {"hosts": [entry()], "host_driver": "external"}, check=True)
    assert checked["changed"] is True and store.list("BareMetalHost", "lab") == []
    assert store.list("Secret", "lab") == []

    res = run(baremetalhost, {"hosts": [entry()], "host_driver": "external"})
    assert res["changed"] is True and not res.get("failed")
    assert PASSWORD not in res["_stdout"]
    host = store.get("BareMetalHost", "node-0", "lab")
    assert host["spec"]["bmc"]["credentialsName"] == "node-0-bmc-secret"
    assert host["metadata"]["labels"] == {"rack": "r1"}
    secret = store.get("Secret", "node-0-bmc-secret", "lab")
    assert base64.b64decode(secret["data"]["password"]).decode() == PASSWORD
    assert store.get("HardwareData", "node-0", "lab")["spec"]["hardware"]["nics"][0]["ip"] == "10.0.0.5"

    again = run(baremetalhost, {"hosts": [entry()], "host_driver": "external"})
    assert again["changed"] is False


def test_merge_keeps_fields_the_task_does_not_name(run, store):
    run(baremetalhost, {"hosts": [entry()], "host_driver": "external"})
    host = store.get("BareMetalHost", "node-0", "lab")
    host["spec"]["consumerRef"] = {"kind": "Metal3Machine", "name": "m0", "namespace": "lab"}
    store.update(host)
    run(baremetalhost, {"name": "node-0", "spec": {"online": False}, "host_driver": "external"})
    host = store.get("BareMetalHost", "node-0", "lab")
    assert host["spec"]["online"] is False and host["spec"]["consumerRef"]["name"] == "m0"
    assert host["spec"]["bootMACAddress"] == "00:5c:52:31:3a:01"


@pytest.mark.parametrize(
    "spec,field",
    [
        ({"bmc": {"address": "nosuch://h"}}, "spec.bmc.address"),
        ({"bootMACAddress": "zz:zz"}, "spec.bootMACAddress"),
        ({"automatedCleaningMode": "always"}, "spec.automatedCleaningMode"),
        ({"image": {"url": "http://x/i.raw"}}, "spec.image.checksum"),
        ({"disablePowerOff": True, "online": False}, "spec.online"),
        ({"userData": {"name": "ud", "namespace": "elsewhere"}}, "spec.userData"),
    ],
)
def test_bad_input_fails_naming_object_and_field(run, store, spec, field):
    res = run(baremetalhost, {"hosts": [entry(**spec)], "host_driver": "external"})
    assert res["failed"] is True
    assert res["msg"].startswith(f"BareMetalHost lab/node-0: {field}:"), res["msg"]
    assert store.list("BareMetalHost", "lab") == [] and store.list("Secret", "lab") == []


def test_boot_mac_is_immutable(run, store):
    run(baremetalhost, {"hosts": [entry()], "host_driver": "external"})
    res = run(
        baremetalhost, {"name": "node-0", "spec": {"bootMACAddress": "00:5c:52:31:3a:09"}, "host_driver": "external"}
    )
    assert res["failed"] is True and "spec.bootMACAddress" in res["msg"]


def test_reboot_annotation_values_are_checked(run, store):
    run(baremetalhost, {"hosts": [entry()], "host_driver": "external"})
    bad = run(
        baremetalhost,
        {"name": "node-0", "annotations": {"reboot.metal3.io/x": '{"mode":"cold"}'}, "host_driver": "external"},
    )
    assert bad["failed"] is True and "reboot.metal3.io/x" in bad["msg"]
    ok = run(
        baremetalhost,
        {"name": "node-0", "annotations": {"reboot.metal3.io/x": '{"mode":"hard"}'}, "host_driver": "external"},
    )
    assert ok["changed"] is True
    gone = run(
        baremetalhost, {"name": "node-0", "annotations": {"reboot.metal3.io/x": None}, "host_driver": "external"}
    )
    assert gone["changed"] is True
    assert "reboot.metal3.io/x" not in (
        store.get("BareMetalHost", "node-0", "lab")["metadata"].get("annotations") or {}
    )


def test_external_driver_wait_times_out_with_the_hosts_state(run, store):
    res = run(
        baremetalhost, {"hosts": [entry()], "host_driver": "external", "wait": True, "wait_timeout": 1, "poll": 0.2}
    )
    assert res["failed"] is True
    assert "timed out" in res["msg"] and "wants available" in res["msg"]
    # someone else (a real BMO) moves the host: the next wait succeeds
    host = store.get("BareMetalHost", "node-0", "lab")
    host["status"] = {"provisioning": {"state": "available"}, "poweredOn": True}
    store.update_status(host)
    res = run(baremetalhost, {"hosts": [entry()], "host_driver": "external", "wait": True, "wait_timeout": 5})
    assert not res.get("failed") and res["changed"] is False and res["hosts"][0]["state"] == "available"


def test_info_filters_and_hardware(run, store):
    run(baremetalhost, {"hosts": [entry("a"), entry("b")], "host_driver": "external"})
    host = store.get("BareMetalHost", "b", "lab")
    host["status"] = {"provisioning": {"state": "available"}, "poweredOn": False}
    store.update_status(host)
    res = run(baremetalhost_info, {"state": ["available"], "hardware": True})
    assert [h["name"] for h in res["hosts"]] == ["b"]
    assert res["hosts"][0]["hardware"]["hostname"] == "b" and res["changed"] is False
    assert [h["name"] for h in run(baremetalhost_info, {"label_selector": "rack=r1"})["hosts"]] == ["a", "b"]
    assert run(baremetalhost_info, {"name": "a"})["hosts"][0]["state"] == ""
    assert run(baremetalhost_info, {"name": "zz"})["hosts"] == []


def test_absent_with_external_driver_deletes_the_object(run, store):
    run(baremetalhost, {"hosts": [entry()], "host_driver": "external"})
    res = run(baremetalhost, {"name": "node-0", "state": "absent", "host_driver": "external", "wait": True})
    assert res["changed"] is True and store.list("BareMetalHost", "lab") == []
    assert run(baremetalhost, {"name": "node-0", "state": "absent", "host_driver": "external"})["changed"] is False


def test_an_empty_host_list_is_nothing_to_do(run, store):
    run(baremetalhost, {"hosts": [entry()], "host_driver": "external"})
    before = store.get("BareMetalHost", "node-0", "lab")
    res = run(baremetalhost, {"hosts": [], "host_driver": "external"})
    assert not res.get("failed"), res
    assert res["changed"] is False and res["hosts"] == []
    assert store.get("BareMetalHost", "node-0", "lab") == before
