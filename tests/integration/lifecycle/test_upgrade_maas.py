"""A MAAS cluster's control-plane upgrade through provision_cluster.yml, on the MAAS simulator.

3 control-plane + 2 worker machines of the test's own tag (7 MAAS machines: 5, one spare for the control
plane's surge and one for the workers'), the endpoint a MAAS DNS name; with the workload API probed every second
and the etcd member list read every second (watch.py): ``--check`` prints the plan and writes nothing, then the
upgrade replaces the control-plane machines one at a time, the workers only once every control-plane Machine is at
the new version, with 0 probe failures and never a member of a Machine already gone; afterwards exactly the
machines' MAAS machines are deployed and the DNS record holds exactly the control plane's addresses. Then a
second upgrade whose playbook is killed with -9 at five points (upgrade.KILL_POINTS), and a re-run: converged,
no member of a deleted Machine, no MAAS machine left allocated or deployed for nothing.
"""

from __future__ import annotations

import time

import pytest
import requests

from tests.integration.e2e.conftest import E2E, new_names
from tests.integration.maas.conftest import Sim

from .upgrade import (
    assert_recovered_from_kills,
    assert_replaced_one_at_a_time,
    assert_rolled_in_order,
    cp_members,
    cp_nodes,
    is_cp,
    killed_upgrade,
    set_description,
)
from .watch import Watch

# a guard against a hung run, not a timing: on a busy shared machine a playbook run's start takes minutes
pytestmark = pytest.mark.timeout(3600)

CP, WORKERS = 3, 2


def _sim(control: str, tag: str) -> dict[str, dict]:
    return {m["system_id"]: m for m in requests.get(control + "machines", timeout=30).json() if tag in m["tags"]}


def converged(e: E2E, control: str, tag: str, version: str) -> dict[str, dict]:
    machines = e.machines()
    assert sorted("cp" if is_cp(m) else "w" for m in machines.values()) == ["cp"] * CP + ["w"] * WORKERS
    nodes = e.workload_nodes()
    by_pid = {n["providerID"]: n for n in nodes.values()}
    for name, m in machines.items():
        assert m["status"]["phase"] == "Running" and m["spec"]["version"] == version, (name, m["status"])
        assert by_pid[m["spec"]["providerID"]]["ready"] == "True", (name, by_pid)
    assert sorted(nodes) == sorted(m["status"]["nodeRef"]["name"] for m in machines.values()), nodes
    used = {m["spec"]["providerID"].rsplit("/", 1)[1] for m in machines.values()}
    sim = _sim(control, tag)
    # exactly the machines' MAAS machines are taken (and deployed); every other one of the tag is free again
    assert {sid for sid, m in sim.items() if m["status_name"] != "Ready"} == used, {
        sid: m["status_name"] for sid, m in sim.items()
    }
    assert all(sim[sid]["status_name"] == "Deployed" for sid in used)
    s = e.store()
    try:
        fqdn = s.get("MaasCluster", e.name, e.ns)["status"]["network"]["dnsName"]
    finally:
        s.close()
    cp_ips = {a["address"] for m in machines.values() if is_cp(m)
              for a in m["status"].get("addresses") or [] if a["type"].endswith("IP")}  # fmt: skip
    assert set(Sim(e.lab.info["maas"]).dns_ips(fqdn)) == cp_ips, fqdn
    return machines


def test_maas_upgrade_control_plane_then_workers(e2e_lab, tmp_path):
    control = e2e_lab.info["maas"]["control_url"]
    name, ns = new_names("v")
    tag = f"t{name}"
    specs = [{"hostname": f"{tag}-{i}", "zone": "az-1", "tags": [tag], "cpu_count": 4, "memory": 8192}
             for i in range(CP + WORKERS + 2)]  # fmt: skip
    requests.post(control + "machines", json={"machines": specs}, timeout=30).raise_for_status()
    desc = {
        "name": name,
        "namespace": ns,
        "provider": "maas",
        "kubernetes_version": "v1.34.4",
        "dns_domain": "maas",
        "endpoint_via_maas_dns": True,
        "control_plane": {"replicas": CP, "image": "ubuntu/jammy", "constraints": {"tags": [tag]}},
        "workers": [{"name": "md-0", "replicas": WORKERS, "image": "ubuntu/jammy", "constraints": {"tags": [tag]}}],
    }
    maas = e2e_lab.info["maas"]
    e = E2E(e2e_lab, tmp_path, "maas", desc, {"capi_maas_url": maas["url"], "capi_maas_api_key": maas["api_key"]})
    try:
        t0 = time.monotonic()
        e.play("provision_cluster.yml")
        print(f"\nprovisioned {CP}+{WORKERS} in {time.monotonic() - t0:.0f}s")
        before = converged(e, control, tag, "v1.34.4")
        old_cp = {n for n, m in before.items() if is_cp(m)}

        set_description(e, kubernetes_version="v1.35.0")
        plan = e.play("provision_cluster.yml", check=True)
        assert "rollout plan of" in plan.out and "v1.34.4 -> v1.35.0" in plan.out, plan.out[-6000:]
        for m in old_cp:
            assert f"then {m} removed" in plan.out, plan.out[-6000:]
        assert f"workers: MachineDeployment {name}-md-0 rolled to v1.35.0" in plan.out, plan.out[-6000:]
        assert {n: m["spec"]["version"] for n, m in e.machines().items()} == {n: "v1.34.4" for n in before}

        t0 = time.monotonic()
        with Watch(e) as w:
            e.play("provision_cluster.yml")
        print(f"upgrade of {CP}+{WORKERS}: {time.monotonic() - t0:.0f}s, {w.probes} probes")
        after = converged(e, control, tag, "v1.35.0")
        assert not set(after) & set(before)
        assert w.probes > 0 and w.failures == [], w.failures[:10]
        assert w.stale == [], w.stale[:10]
        assert_rolled_in_order(w, CP, 1, "v1.35.0")
        assert_replaced_one_at_a_time(w, old_cp)
        assert cp_members(w, after) == cp_nodes(after)

        # kill -9 at five points of a second upgrade, then a re-run
        set_description(e, kubernetes_version="v1.35.2")
        outcomes, w = killed_upgrade(e)
        final = converged(e, control, tag, "v1.35.2")  # and no MAAS machine of the tag taken for nothing
        assert not set(final) & set(after)
        assert_recovered_from_kills(e, outcomes, w, final)

        e.play("deprovision_cluster.yml")
        assert all(m["status_name"] == "Ready" for m in _sim(control, tag).values()), _sim(control, tag)
    finally:
        e.play("deprovision_cluster.yml", expect_ok=False)
        for sid in _sim(control, tag):
            requests.delete(control + f"machines/{sid}", timeout=30)
