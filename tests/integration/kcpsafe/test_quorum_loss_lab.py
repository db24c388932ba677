"""Lab fault: 2 of a Metal3 cluster's 3 control-plane hosts lose power.

The workload API stops answering (its etcd has lost quorum: proof that the lab can fail), and KCP refuses to
remediate the two Machines that a MachineHealthCheck marked, with upstream's reason (removing one would cost
etcd its quorum; etcd itself cannot even be asked); nothing is deleted. Power back on: the members start again,
the cluster answers, and once the health check clears the marks ``provision_cluster.yml`` converges with the
same three Machines and members.

The KCP step runs here as the engine call ``provision_cluster.yml``'s loop makes each round: a whole playbook run
would also step the hosts, and a powered-off host with ``online: true`` is powered on again (as
baremetal-operator does), which would end the fault before the test could look at it.
"""

from __future__ import annotations

import random
import time

import openstack
import pytest
from kubernetes import client as k8s

from ansible_collections.baremetal.capi.plugins.module_utils.capi import control_plane, kcp_remediation
from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions, names
from tests.integration.e2e.conftest import E2E, free_endpoint, metal3_description, new_names
from tests.integration.lifecycle.upgrade import cp_members, cp_nodes
from tests.integration.lifecycle.watch import Watch
from tests.integration.net import LOOP

# a guard against a hung run, not a timing: on a busy shared machine a playbook run takes minutes
pytestmark = pytest.mark.timeout(3600)


def eventually(check, what: str, patience: float = 240.0):
    deadline = time.monotonic() + patience
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not after {patience:.0f}s")
        time.sleep(0.5)


def api_answers(e: E2E) -> bool:
    try:
        k8s.CoreV1Api(e.workload_api()).list_node(_request_timeout=5)
        return True
    except Exception:  # noqa: BLE001 - any failure is "not answering"
        return False


def test_two_of_three_control_plane_hosts_off(e2e_lab, ironic_inventory, tmp_path):
    inv = ironic_inventory
    name, ns = new_names("q")
    # the day-2 tests run beside the other lines: endpoints and pools of their own (lab/addresses.py USES)
    desc = metal3_description(name, ns, free_endpoint(f"{LOOP}.12"), inv, random.randint(210, 219), hosts=3)
    desc["control_plane"]["replicas"] = 3
    desc["workers"] = []
    desc.pop("kubeadm", None)
    driver = {"ironic_url": inv["ironic"]["url"], "boot_iso": inv["images"]["boot_iso"], "poll": 1}
    e = E2E(e2e_lab, tmp_path, "metal3", desc, {"capi_host_driver_options": driver, "capi_no_log_hosts": False})
    conn = openstack.connect(auth_type="none", baremetal_endpoint_override=inv["ironic"]["url"])
    try:
        e.play("provision_cluster.yml")
        machines = e.machines()
        uids = {n: m["metadata"]["uid"] for n, m in machines.items()}
        assert len(machines) == 3 and api_answers(e)
        s = e.store()
        try:
            host_of = {
                h["spec"]["consumerRef"]["name"]: h["metadata"]["name"]
                for h in s.list("BareMetalHost", ns)
                if h["spec"].get("consumerRef")
            }
        finally:
            s.close()
        down = sorted(machines)[:2]

        # power lost on two hosts, at their BMCs
        for m in down:
            conn.baremetal.set_node_power_state(f"{ns}~{host_of[m]}", "power off", wait=True, timeout=120)
        eventually(lambda: not api_answers(e), "the workload API failing without etcd quorum")

        # a MachineHealthCheck hands both to their owner (HealthCheckSucceeded False, OwnerRemediated False)
        s = e.store()
        try:
            for m in down:
                obj = s.get("Machine", m, ns)
                conditions.set_condition(obj, names.HEALTH_CHECK_SUCCEEDED, False, "UnhealthyNode", "NotReady")
                conditions.set_condition(obj, names.OWNER_REMEDIATED, False, "WaitingForRemediation")
                s.update_status(obj)
            cluster = s.get("Cluster", name, ns)
            kcp = s.get("KubeadmControlPlane", f"{name}-control-plane", ns)
            step = control_plane.reconcile_control_plane(s, kcp, cluster)
            after = {m["metadata"]["name"]: m for m in s.list("Machine", ns)}
            kcp = s.get("KubeadmControlPlane", f"{name}-control-plane", ns)
        finally:
            s.close()
        assert "deleted" not in step.data, step
        assert {n: m["metadata"]["uid"] for n, m in after.items()} == uids
        assert not any(m["metadata"].get("deletionTimestamp") for m in after.values())
        assert names.REMEDIATION_IN_PROGRESS_ANNOTATION not in (kcp["metadata"].get("annotations") or {})
        refused = step.data["remediation"]
        assert refused["machine"] in down and not refused["remediating"], refused
        cond = conditions.get(after[refused["machine"]], names.OWNER_REMEDIATED)
        assert cond["reason"] == names.KCP_CANNOT_BE_REMEDIATED_REASON, cond
        assert cond["message"] == kcp_remediation.MSG_UNSAFE, cond
        print(f"remediation of {refused['machine']} refused: {refused}")

        # power back on: the members start on their data, quorum and the API come back
        for m in down:
            conn.baremetal.set_node_power_state(f"{ns}~{host_of[m]}", "power on", wait=True, timeout=120)
        eventually(lambda: api_answers(e), "the workload API back with quorum")

        # the health check sees them healthy again: the owner's pending remediation is dropped, nothing replaced
        s = e.store()
        try:
            for m in down:
                obj = s.get("Machine", m, ns)
                conditions.set_condition(obj, names.HEALTH_CHECK_SUCCEEDED, True, "HealthCheckSucceeded")
                s.update_status(obj)
        finally:
            s.close()
        e.play("provision_cluster.yml")
        final = e.machines()
        assert {n: m["metadata"]["uid"] for n, m in final.items()} == uids
        nodes = e.workload_nodes()
        assert all(nodes[m["status"]["nodeRef"]["name"]]["ready"] == "True" for m in final.values()), nodes
        for m in final.values():
            assert conditions.get(m, names.OWNER_REMEDIATED) is None, m["status"]["conditions"]
        with Watch(e) as w:
            assert cp_members(w, final) == cp_nodes(final)
    finally:
        conn.close()
        e.play("deprovision_cluster.yml", {"capi_deregister_hosts": True}, expect_ok=False)
