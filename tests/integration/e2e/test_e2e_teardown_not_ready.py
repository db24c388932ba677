"""Deprovisioning a cluster whose Nodes never became Ready (no CNI add-on: the kubelets report "cni plugin not
initialized", as on real hardware without a network).

provision_cluster.yml takes both Machines to Running with NotReady Nodes and is killed there (it would wait for
Ready until its deadline); deprovision_cluster.yml then removes the workers without waiting for the control
plane to become Ready (Cluster API deletes them whatever the control plane's health), then the control plane,
and ends well inside its deadline with every object of the cluster gone and the hosts deregistered.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time

import pytest
from kubernetes import client as k8s

from lab.config import REPO
from tests.integration.net import LOOP

from .conftest import E2E, free_endpoint, metal3_description, new_names

pytestmark = pytest.mark.timeout(1800)
DEADLINE = 300  # capi_wait_timeout of the deprovision: waiting for a Ready control plane would use all of it


def _registered_not_ready(e: E2E) -> bool:
    machines = e.machines()
    if len(machines) != 2 or any((m.get("status") or {}).get("phase") != "Running" for m in machines.values()):
        return False
    nodes = k8s.CoreV1Api(e.workload_api()).list_node().items
    ready = [next((c.status for c in n.status.conditions or [] if c.type == "Ready"), None) for n in nodes]
    return len(nodes) == 2 and all(r == "False" for r in ready)


def test_deprovision_a_cluster_whose_nodes_never_became_ready(e2e_lab, ironic_inventory, tmp_path):
    inv = ironic_inventory
    name, ns = new_names("t")
    desc = metal3_description(name, ns, free_endpoint(f"{LOOP}.9"), inv, random.randint(100, 199))
    desc["addons"] = []  # no CNI: the Nodes stay NotReady
    driver = {"ironic_url": inv["ironic"]["url"], "boot_iso": inv["images"]["boot_iso"], "poll": 1}
    e = E2E(e2e_lab, tmp_path, "metal3", desc, {"capi_host_driver_options": driver, "capi_no_log_hosts": False})
    log = open(tmp_path / "provision.log", "w")  # noqa: SIM115
    proc = subprocess.Popen(e.argv("provision_cluster.yml"), cwd=REPO, env=e.env, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 900
        while not _registered_not_ready(e):
            assert proc.poll() is None, (tmp_path / "provision.log").read_text()[-6000:]
            assert time.monotonic() < deadline, "no Running Machines with NotReady Nodes after 900 s"
            time.sleep(2)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        log.close()

    run = e.play("deprovision_cluster.yml", {"capi_deregister_hosts": True, "capi_wait_timeout": DEADLINE},
                 expect_ok=False)  # fmt: skip
    assert run.rc == 0, run.out[-8000:]
    assert "not converged" not in run.out
    s = e.store()
    try:
        for kind in ("Machine", "MachineDeployment", "KubeadmControlPlane", "Metal3Machine", "Cluster"):
            assert s.list(kind, ns) == [], kind
        assert all(not (h.get("spec") or {}).get("consumerRef") for h in s.list("BareMetalHost", ns))
    finally:
        s.close()
