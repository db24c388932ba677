"""provision_cluster.yml on MAAS end to end: the MAAS simulator, the node simulator, the workload API.

Machines of the test's own tags; the endpoint is a MAAS DNS name reached at the record's address
(endpoint_via_maas_dns). Provision (1 control plane + 1 worker), a second run changes nothing, scale up and
back down by exactly one, a scale-up killed with -9 at a random moment then run again converges with no
machine left allocated or deployed for nothing and the DNS record holding exactly the control plane's
address, and deprovision releases everything and removes the record.
"""

from __future__ import annotations

import random

import pytest
import requests

from tests.integration.maas.conftest import Sim

from .conftest import E2E, new_names

pytestmark = pytest.mark.timeout(2400)


def _seed(control: str, tag: str) -> list[dict]:
    specs = [{"hostname": f"{tag}-{i}", "zone": "az-1", "tags": [tag], "cpu_count": 4, "memory": 8192}
             for i in range(4)]  # fmt: skip
    resp = requests.post(control + "machines", json={"machines": specs}, timeout=30)
    resp.raise_for_status()
    return resp.json()


def maas_description(name: str, ns: str, tag: str) -> dict:
    """A 1 control-plane + 1 worker MAAS cluster on the machines of ``tag``, its endpoint a MAAS DNS name."""
    return {
        "name": name,
        "namespace": ns,
        "provider": "maas",
        "kubernetes_version": "v1.34.4",
        "dns_domain": "maas",
        "endpoint_via_maas_dns": True,
        "control_plane": {"replicas": 1, "image": "ubuntu/jammy", "constraints": {"tags": [tag]}},
        "workers": [{"name": "md-0", "replicas": 1, "image": "ubuntu/jammy", "constraints": {"tags": [tag]}}],
    }


def _sim(control: str, tag: str) -> dict[str, dict]:
    return {m["system_id"]: m for m in requests.get(control + "machines", timeout=30).json() if tag in m["tags"]}


def _converged(e: E2E, control: str, tag: str, workers: int) -> dict[str, dict]:
    machines = e.machines()
    roles = sorted("cp" if "cluster.x-k8s.io/control-plane" in m["metadata"]["labels"] else "w"
                   for m in machines.values())  # fmt: skip
    assert roles == ["cp"] + ["w"] * workers, roles
    nodes = e.workload_nodes()
    assert len(nodes) == len(machines), (sorted(nodes), sorted(machines))
    by_pid = {n["providerID"]: n for n in nodes.values()}
    for name, m in machines.items():
        assert m["status"]["phase"] == "Running", (name, m["status"])
        assert m["spec"]["providerID"].startswith("maas:///"), m["spec"]
        assert by_pid[m["spec"]["providerID"]]["ready"] == "True", (name, by_pid)
    used = {m["spec"]["providerID"].rsplit("/", 1)[1] for m in machines.values()}
    sim = _sim(control, tag)
    # only the machines' MAAS machines are taken; everything else of the tag is free again
    assert {sid for sid, m in sim.items() if m["status_name"] != "Ready"} == used, {
        sid: m["status_name"] for sid, m in sim.items()
    }
    assert all(sim[sid]["status_name"] == "Deployed" for sid in used)
    s = e.store()
    try:
        mc = s.get("MaasCluster", e.name, e.ns)
        fqdn = mc["status"]["network"]["dnsName"]
    finally:
        s.close()
    cp_ips = {a["address"] for m in machines.values() if "cluster.x-k8s.io/control-plane" in m["metadata"]["labels"]
              for a in m["status"].get("addresses") or [] if a["type"].endswith("IP")}  # fmt: skip
    # the API record holds exactly the control plane's address (CAPMAAS's DNS attachment)
    assert set(Sim(e.lab.info["maas"]).dns_ips(fqdn)) == cp_ips, fqdn
    return machines


def test_maas_provision_rerun_scale_kill_deprovision(e2e_lab, tmp_path):
    control = e2e_lab.info["maas"]["control_url"]
    name, ns = new_names("a")
    tag = f"t{name}"
    _seed(control, tag)
    desc = maas_description(name, ns, tag)
    maas = e2e_lab.info["maas"]
    e = E2E(e2e_lab, tmp_path, "maas", desc, {"capi_maas_url": maas["url"], "capi_maas_api_key": maas["api_key"]})
    try:
        # the plan (check mode) of a cluster that does not exist yet: changes foreseen, nothing written or taken
        plan = e.play("provision_cluster.yml", check=True)
        assert plan.changed > 0 and "check mode:" in plan.out, plan.out[-6000:]
        s = e.store()
        try:
            assert s.list("Cluster", e.ns) == [] and s.list("Machine", e.ns) == [] and s.list("Secret", e.ns) == []
        finally:
            s.close()
        assert all(m["status_name"] == "Ready" for m in _sim(control, tag).values())

        e.play("provision_cluster.yml")
        before = _converged(e, control, tag, workers=1)

        again = e.play("provision_cluster.yml")
        assert again.changed == 0, again.out[-6000:]
        assert e.play("provision_cluster.yml", check=True).changed == 0  # and its plan is empty
        assert set(e.machines()) == set(before)

        e.play("scale_cluster.yml", {"capi_worker_replicas": {"md-0": 2}})
        up = _converged(e, control, tag, workers=2)
        assert set(before) < set(up) and len(set(up) - set(before)) == 1

        e.play("provision_cluster.yml")
        down = _converged(e, control, tag, workers=1)
        assert set(down) < set(up) and len(set(up) - set(down)) == 1

        outcome = e.play_killed("scale_cluster.yml", {"capi_worker_replicas": {"md-0": 2}}, random.uniform(3, 20))
        e.play("scale_cluster.yml", {"capi_worker_replicas": {"md-0": 2}})
        _converged(e, control, tag, workers=2)
        e.play("provision_cluster.yml")
        _converged(e, control, tag, workers=1)
        print(f"kill -9: {outcome}")

        s = e.store()
        try:
            fqdn = s.get("MaasCluster", e.name, e.ns)["status"]["network"]["dnsName"]
        finally:
            s.close()
        e.play("deprovision_cluster.yml")
        assert Sim(e.lab.info["maas"]).dns(fqdn) == []
        s = e.store()
        try:
            assert s.list("Machine", e.ns) == [] and s.list("MaasMachine", e.ns) == []
            assert s.list("Cluster", e.ns) == [] and s.list("MaasCluster", e.ns) == []
        finally:
            s.close()
        assert all(m["status_name"] == "Ready" for m in _sim(control, tag).values()), _sim(control, tag)
    finally:
        e.play("deprovision_cluster.yml", expect_ok=False)
        for sid in _sim(control, tag):
            requests.delete(control + f"machines/{sid}", timeout=30)
