"""A 1-control-plane cluster whose control plane is marked unhealthy is not deleted, and keeps answering.

Then, on the same cluster, the admin kubeconfig's renewal (the clock moved seven months on): the regenerated
client certificate is accepted by the workload's real kube-apiserver.

The Machine is marked as MachineHealthCheck marks a Machine it hands to its owner (HealthCheckSucceeded
False, OwnerRemediated False), then provision_cluster.yml converges the cluster again: KCP must leave the
Machine alone (the cluster is initialized and has one control plane) and say why on OwnerRemediated.
"""

from __future__ import annotations

import base64
import datetime
import random

import pytest
import yaml
from kubernetes import client as k8s
from kubernetes import config as kconfig

from ansible_collections.baremetal.capi.plugins.module_utils.bootstrap import certificates
from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions, names
from tests.integration.e2e.conftest import E2E, free_endpoint, metal3_description, new_names
from tests.integration.net import LOOP

pytestmark = pytest.mark.timeout(1800)


def test_single_control_plane_marked_unhealthy_is_kept_then_kubeconfig_renewed(e2e_lab, ironic_inventory, tmp_path):
    inv = ironic_inventory
    name, ns = new_names("r")
    desc = metal3_description(name, ns, free_endpoint(f"{LOOP}.9"), inv, random.randint(100, 199))
    desc["workers"] = []
    driver = {"ironic_url": inv["ironic"]["url"], "boot_iso": inv["images"]["boot_iso"], "poll": 1}
    e = E2E(e2e_lab, tmp_path, "metal3", desc, {"capi_host_driver_options": driver, "capi_no_log_hosts": False})
    try:
        e.play("provision_cluster.yml")
        (machine_name,) = e.machines()
        s = e.store()
        try:
            m = s.get("Machine", machine_name, ns)
            uid = m["metadata"]["uid"]
            conditions.set_condition(m, names.HEALTH_CHECK_SUCCEEDED, False, "UnhealthyNode", "marked by the test")
            conditions.set_condition(m, names.OWNER_REMEDIATED, False, "WaitingForRemediation")
            s.update_status(m)
        finally:
            s.close()

        e.play("provision_cluster.yml")

        after = e.machines()
        assert list(after) == [machine_name] and after[machine_name]["metadata"]["uid"] == uid
        assert "deletionTimestamp" not in after[machine_name]["metadata"]
        cond = conditions.get(after[machine_name], names.OWNER_REMEDIATED)
        assert cond["reason"] == names.KCP_CANNOT_BE_REMEDIATED_REASON, cond
        assert cond["message"] == "KubeadmControlPlane can't remediate if current replicas are less or equal to 1"
        s = e.store()
        try:
            kcp = s.get("KubeadmControlPlane", f"{name}-control-plane", ns)
            assert names.REMEDIATION_IN_PROGRESS_ANNOTATION not in (kcp["metadata"].get("annotations") or {})
        finally:
            s.close()
        # the workload API still answers, with the same Node
        nodes = k8s.CoreV1Api(e.workload_api()).list_node().items
        assert [n.metadata.name for n in nodes] == [after[machine_name]["status"]["nodeRef"]["name"]]

        # seven months later the client certificate has less than six months left: renewed, and it works
        s = e.store()
        try:
            cluster = s.get("Cluster", name, ns)
            old = s.get("Secret", f"{name}-kubeconfig", ns)["data"]["value"]
            later = datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=210)
            assert certificates.renew_kubeconfig(s, cluster, now=later)
            new = s.get("Secret", f"{name}-kubeconfig", ns)["data"]["value"]
        finally:
            s.close()
        assert new != old
        text = base64.b64decode(new).decode()
        assert certificates.client_cert_expiry(text) > later + datetime.timedelta(days=364)
        api = kconfig.new_client_from_config_dict(yaml.safe_load(text))
        assert [n.metadata.name for n in k8s.CoreV1Api(api).list_node().items] == [n.metadata.name for n in nodes]
    finally:
        e.play("deprovision_cluster.yml", expect_ok=False)
