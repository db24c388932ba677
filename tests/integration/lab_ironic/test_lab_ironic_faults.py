"""Faults injected by the BMC proxy: what a BMC client sees, and what Ironic makes of it."""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

from lab.ironic import faults, hosts, iso

pytestmark = pytest.mark.timeout(1200)


def _proxy(cfg, method: str, path: str, body: dict | None = None) -> int:
    token = base64.b64encode(f"{hosts.BMC_USERNAME}:{hosts.BMC_PASSWORD}".encode()).decode()
    req = urllib.request.Request(
        f"http://{cfg.host}:{cfg.ports.bmc_proxy}{path}",
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers={"Authorization": f"Basic {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_proxy_faults_hit_one_system_only(ironic):
    cfg = ironic.cfg
    sick, well = ironic.free_hosts(2)
    assert faults.get(cfg) == {}
    assert faults.set_fault(cfg, sick["name"], unreachable=True, delay=0.1, power_delay=2) == {
        "unreachable": True,
        "delay": 0.1,
        "power_delay": 2.0,
    }
    assert faults.get(cfg, sick["uuid"])["unreachable"] is True

    with pytest.raises((urllib.error.URLError, ConnectionError)):
        _proxy(cfg, "GET", f"/redfish/v1/Systems/{sick['uuid']}")
    # the manager of a fake system carries the system's UUID: unreachable too
    with pytest.raises((urllib.error.URLError, ConnectionError)):
        _proxy(cfg, "GET", f"/redfish/v1/Managers/{sick['uuid']}")
    assert _proxy(cfg, "GET", f"/redfish/v1/Systems/{well['uuid']}") == 200
    assert _proxy(cfg, "GET", "/redfish/v1/Systems") == 200

    faults.set_fault(cfg, sick["uuid"], fail_virtual_media=True)
    media_before = iso.virtual_media(cfg, sick["uuid"])["Cd"]
    insert = f"/redfish/v1/Systems/{sick['uuid']}/VirtualMedia/Cd/Actions/VirtualMedia.InsertMedia"
    assert _proxy(cfg, "POST", insert, {"Image": ironic.inventory["images"]["boot_iso"]}) == 500
    assert _proxy(cfg, "GET", f"/redfish/v1/Systems/{sick['uuid']}/VirtualMedia/Cd") == 200
    # the insert never reached the BMC
    assert iso.virtual_media(cfg, sick["uuid"])["Cd"] == media_before

    # unknown fault names are refused, not ignored
    req = urllib.request.Request(
        f"http://{cfg.host}:{cfg.ports.bmc_proxy}/lab/faults/{sick['uuid']}",
        data=b'{"on_fire": true}',
        method="PUT",
    )
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, timeout=10)
    assert err.value.code == 400

    faults.clear(cfg)
    assert faults.get(cfg) == {}
    assert _proxy(cfg, "GET", f"/redfish/v1/Systems/{sick['uuid']}") == 200


def test_unreachable_bmc_is_an_ironic_error_for_that_node_only(ironic):
    cfg = ironic.cfg
    picked = ironic.free_hosts(3)
    nodes = [ironic.register_redfish(h) for h in picked]
    faults.set_fault(cfg, picked[0]["uuid"], unreachable=True)

    def manage(node):
        ironic.baremetal.set_node_provision_state(node.id, "manage")
        return ironic.wait_stable(node.id)

    with ThreadPoolExecutor(len(nodes)) as pool:
        sick, *well = pool.map(manage, nodes)

    # verification failed: Ironic puts the node back to enroll with the reason
    assert sick.provision_state == "enroll"
    assert "Redfish connection failed" in sick.last_error
    assert picked[0]["uuid"] in sick.last_error
    for node in well:
        assert node.provision_state == "manageable"
        assert node.last_error is None
        assert node.power_state == "power off"

    faults.clear(cfg, picked[0]["uuid"])
    ironic.baremetal.set_node_provision_state(sick.id, "manage")
    recovered = ironic.wait(sick.id, "manageable")
    assert recovered.last_error is None
    assert recovered.power_state == "power off"


def test_deploy_faults_fail_the_deploy_then_it_deploys_when_cleared(ironic):
    cfg = ironic.cfg
    (host,) = ironic.free_hosts(1)
    bm = ironic.baremetal
    node = ironic.register_redfish(host)
    bm.set_node_provision_state(node.id, "manage")
    ironic.wait(node.id, "manageable")
    bm.set_node_provision_state(node.id, "provide")
    ironic.wait(node.id, "available")
    bm.update_node(node.id, instance_info={"boot_iso": ironic.inventory["images"]["boot_iso"]})
    drive = {"meta_data": {"uuid": node.id, "name": host["name"]}, "user_data": "#cloud-config\n"}

    faults.set_fault(cfg, host["uuid"], fail_virtual_media=True)
    bm.set_node_provision_state(node.id, "active", config_drive=drive)
    failed = ironic.wait(node.id, "deploy failed")
    # Ironic 39 records the failure, but clearing up after it (a power-off of a node that is
    # already off) resets last_error; the node history keeps it (docs/lab.md).
    error = ironic.error_of(failed)
    assert error is not None and "Virtual media mount failed" in error, error
    assert any("Virtual media mount failed" in e for e in ironic.history_errors(node.id))
    assert not iso.virtual_media(cfg, host["uuid"])["Cd"]["Inserted"]

    # an unreachable BMC fails the next attempt before any deploy step: last_error says why
    faults.set_fault(cfg, host["uuid"], unreachable=True)
    bm.set_node_provision_state(node.id, "active", config_drive=drive)
    failed = ironic.wait(node.id, "deploy failed")
    assert failed.last_error is not None
    assert failed.last_error.startswith("Failed to prepare to deploy: Redfish connection failed"), failed.last_error

    faults.clear(cfg, host["uuid"])
    # deploy failed -> active is a new deploy attempt
    bm.set_node_provision_state(node.id, "active", config_drive=drive)
    deployed = ironic.wait(node.id, "active")
    assert deployed.last_error is None
    floppy = iso.virtual_media(cfg, host["uuid"])["Floppy"]
    read = iso.read_config_drive(iso.media_file(cfg, floppy))
    assert read["meta_data"] == drive["meta_data"]
    assert read["user_data"] == drive["user_data"].encode()
