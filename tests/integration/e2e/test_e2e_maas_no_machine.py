"""A MAAS cluster with more machines than MAAS has for it: the run ends at its deadline saying which machine got
no MAAS machine and why (issue 20: "no available host matching ..." - for MAAS, the constraints, how many
machines MAAS listed and why each was passed over), and deprovisioning it leaves nothing behind although a
machine never got a MAAS machine: no Machine, MaasMachine or template left, the one MAAS machine released."""

from __future__ import annotations

import pytest
import requests

from .conftest import E2E, new_names

pytestmark = pytest.mark.timeout(1800)

# What provision_cluster.yml makes for a MAAS cluster's machines.
OWNED = ("Cluster", "MaasCluster", "KubeadmControlPlane", "MachineDeployment", "MachineSet", "Machine",
         "MaasMachine", "MaasMachineTemplate", "KubeadmConfig", "KubeadmConfigTemplate")  # fmt: skip


def _tagged(control: str, tag: str) -> dict[str, dict]:
    return {m["system_id"]: m for m in requests.get(control + "machines", timeout=30).json() if tag in m["tags"]}


def test_too_few_maas_machines_fails_naming_the_machine_and_deprovision_leaves_nothing(e2e_lab, tmp_path):
    control = e2e_lab.info["maas"]["control_url"]
    name, ns = new_names("nm")
    tag = f"t{name}"
    spec = {"hostname": f"{tag}-0", "zone": "az-1", "tags": [tag], "cpu_count": 4, "memory": 8192}
    requests.post(control + "machines", json={"machines": [spec]}, timeout=30).raise_for_status()
    desc = {
        "name": name,
        "namespace": ns,
        "provider": "maas",
        "kubernetes_version": "v1.34.4",
        "dns_domain": "maas",
        "endpoint_via_maas_dns": True,
        "control_plane": {"replicas": 1, "image": "ubuntu/jammy", "constraints": {"tags": [tag]}},
        "workers": [{"name": "md-0", "replicas": 1, "image": "ubuntu/jammy", "constraints": {"tags": [tag]}}],
    }
    maas = e2e_lab.info["maas"]
    extra = {"capi_maas_url": maas["url"], "capi_maas_api_key": maas["api_key"], "capi_wait_timeout": 150}
    e = E2E(e2e_lab, tmp_path, "maas", desc, extra)
    try:
        run = e.play("provision_cluster.yml", expect_ok=False)
        assert run.rc != 0 and run.failed == 1, run.out[-6000:]
        assert "not converged after 150s" in run.out, run.out[-6000:]
        # the worker waited for a MAAS machine: the message names the constraints and what MAAS listed
        said = [line for line in run.out.splitlines() if "no available MAAS machine matching" in line]
        assert said and tag in said[-1] and "MAAS machine(s)" in said[-1], run.out[-6000:]
        assert "Unknown error" not in run.out and "Traceback" not in run.out
        # the one machine went to the control plane
        assert [m["status_name"] for m in _tagged(control, tag).values()] == ["Deployed"], _tagged(control, tag)

        run = e.play("deprovision_cluster.yml")
        assert run.failed == 0, run.out[-6000:]
        s = e.store()
        try:
            left = {kind: [o["metadata"]["name"] for o in s.list(kind, ns)] for kind in OWNED}
            assert {k: v for k, v in left.items() if v} == {}, left
            stuck = [f"{o['kind']} {o['metadata']['name']}" for kind in ("Secret", "ConfigMap")
                     for o in s.list(kind, ns) if o["metadata"].get("deletionTimestamp")]  # fmt: skip
            assert stuck == []
        finally:
            s.close()
        assert [m["status_name"] for m in _tagged(control, tag).values()] == ["Ready"], _tagged(control, tag)
    finally:
        e.play("deprovision_cluster.yml", expect_ok=False)
        for sid in _tagged(control, tag):
            requests.delete(control + f"machines/{sid}", timeout=30)
