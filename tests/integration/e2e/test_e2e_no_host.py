"""A cluster with more machines than hosts: the run ends at its deadline saying which machine got no host and
why (issue 20: "no available host matching ..."), and deprovisioning it leaves nothing behind although a machine
never got a host - no Machine, claim, address or data template stuck deleting on a finalizer; only the hosts
the user registered (deregistered too when asked)."""

from __future__ import annotations

import random

import pytest

from tests.integration.net import LOOP

from .conftest import E2E, free_endpoint, metal3_description, new_names

pytestmark = pytest.mark.timeout(1800)

# What provision_cluster.yml makes for a cluster's machines (the hosts, their credentials and the pools aside).
OWNED = ("Cluster", "Metal3Cluster", "KubeadmControlPlane", "MachineDeployment", "MachineSet", "Machine",
         "Metal3Machine", "Metal3MachineTemplate", "KubeadmConfig", "KubeadmConfigTemplate", "Metal3DataTemplate",
         "Metal3DataClaim", "Metal3Data", "IPClaim", "IPAddress.ipam.metal3.io", "IPAddressClaim",
         "IPAddress.ipam.cluster.x-k8s.io")  # fmt: skip


def test_too_few_hosts_fails_naming_the_machine_and_deprovision_leaves_nothing(e2e_lab, ironic_inventory, tmp_path):
    inv = ironic_inventory
    name, ns = new_names("n")
    desc = metal3_description(name, ns, free_endpoint(f"{LOOP}.9"), inv, random.randint(100, 199), hosts=1)
    driver = {"ironic_url": inv["ironic"]["url"], "boot_iso": inv["images"]["boot_iso"], "poll": 1}
    e = E2E(e2e_lab, tmp_path, "metal3", desc, {"capi_host_driver_options": driver, "capi_wait_timeout": 150})
    try:
        run = e.play("provision_cluster.yml", expect_ok=False)
        assert run.rc != 0 and run.failed == 1, run.out[-6000:]
        assert "not converged after 150s" in run.out, run.out[-6000:]
        # the worker waited for a host: the message says so, with the selector and what was seen
        assert "No available host found: no available host matching" in run.out, run.out[-6000:]
        assert "Unknown error" not in run.out and "Traceback" not in run.out
        s = e.store()
        try:
            hosts = s.list("BareMetalHost", ns)
            assert [h["spec"].get("consumerRef", {}).get("kind") for h in hosts] == ["Metal3Machine"]
            assert len(s.list("Machine", ns)) == 2
        finally:
            s.close()

        run = e.play("deprovision_cluster.yml")
        assert run.failed == 0, run.out[-6000:]
        s = e.store()
        try:
            left = {kind: [o["metadata"]["name"] for o in s.list(kind, ns)] for kind in OWNED}
            assert {k: v for k, v in left.items() if v} == {}, left
            hosts = s.list("BareMetalHost", ns)
            assert [h["metadata"]["name"] for h in hosts] == [f"{name}-host-0"]  # what the user registered
            assert not hosts[0]["spec"].get("consumerRef")
            stuck = [f"{o['kind']} {o['metadata']['name']}" for kind in ("Secret", "ConfigMap", "IPPool")
                     for o in s.list(kind, ns) if o["metadata"].get("deletionTimestamp")]  # fmt: skip
            assert stuck == []
        finally:
            s.close()
    finally:
        e.play("deprovision_cluster.yml", {"capi_deregister_hosts": True}, expect_ok=False)
