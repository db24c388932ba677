"""A deploy that fails on a Redfish lab host (virtual media refused by the BMC fault proxy).

Ironic's error lands on the BareMetalHost (status.errorType/errorMessage) and
in the metal3_machine result; once the fault is gone a later run recovers and
the host is deployed.
"""

from __future__ import annotations

import pytest

from lab.ironic import faults

from .test_metal3_machines_lab import _machine_objects

pytestmark = pytest.mark.timeout(1200)

LAB_HOST = 9  # a lab host (of 12) no other test of this directory uses


def test_deploy_fault_surfaces_ironic_error_and_a_later_run_recovers(mlab):
    ml = mlab
    h = ml.inv["hosts"][LAB_HOST]
    entry = {
        "name": h["name"],
        "spec": {
            "bmc": {"address": h["bmc"]["address"]},
            "bootMACAddress": h["boot_mac"],
            "online": False,
            "automatedCleaningMode": "disabled",
            "inspectionMode": "disabled",
        },
        "bmc_username": h["bmc"]["username"],
        "bmc_password": h["bmc"]["password"],
        "hardware": {"hostname": h["name"], "nics": [{"name": "enp1s0", "mac": h["boot_mac"], "ip": h["ip"]}]},
    }
    machine, m3m = _machine_objects(ml, "w0", False, "bootstrap", ml.inv["images"]["test_image"])
    m3m["spec"].pop("dataTemplate")
    host, port = ml.endpoint.split(":")
    cluster = ml.obj(
        "Cluster",
        ml.cluster,
        {
            "infrastructureRef": {
                "apiGroup": "infrastructure.cluster.x-k8s.io",
                "kind": "Metal3Cluster",
                "name": ml.cluster,
            }
        },
        "cluster.x-k8s.io/v1beta2",
    )
    ml.play(
        [{"baremetal.capi.baremetalhost": {"hosts": [entry], "wait": True}}]
        + [
            {"baremetal.capi.object": {"definition": o}}
            for o in (cluster, ml.secret("bootstrap", "#cloud-config\n"), machine, m3m)
        ]
        + [
            {
                "baremetal.capi.metal3_cluster": {
                    "name": ml.cluster,
                    "control_plane_endpoint": {"host": host, "port": int(port)},
                }
            }
        ]
    )
    task = {"baremetal.capi.metal3_machine": {"name": "w0", "wait_for": "provisioned", "wait_timeout": 600}}
    faults.set_fault(ml.cfg, h["uuid"], fail_virtual_media=True)
    try:
        (failed,) = ml.play([dict(task)], expect_failure=True)
    finally:
        faults.clear(ml.cfg, h["uuid"])
    assert failed["failed"] is True
    bmh = ml.store.get("BareMetalHost", h["name"], ml.ns)
    assert bmh["spec"]["consumerRef"]["name"] == "w0"
    assert bmh["status"]["errorType"] == "provisioning error"
    msg = bmh["status"]["errorMessage"]
    assert msg and msg in failed["msg"], (msg, failed["msg"])
    [m] = failed["machines"]
    assert m["failed"] and msg in m["message"]

    (ok,) = ml.play([dict(task)])
    [m] = ok["machines"]
    assert m["done"] and not m["failed"], m
    bmh = ml.store.get("BareMetalHost", h["name"], ml.ns)
    assert bmh["status"]["provisioning"]["state"] == "provisioned" and not bmh["status"].get("errorType")
    assert ml.node(h["name"]).provision_state == "active"
