"""A Metal3 cluster's control-plane lifecycle through the user's playbooks, on the lab (fake-hardware hosts).

One 3 control-plane + 2 worker cluster for the module (7 hosts: 5 machines, one spare for the control plane's
surge and one for the workers'), provisioned once; with the workload API probed every second and the etcd
member list read every second (tests/integration/lifecycle/watch.py), the tests below run on it in order:

- ``provision_cluster.yml --check`` with a new ``kubernetes_version`` prints the plan and writes nothing;
  ``provision_cluster.yml`` performs the upgrade: control-plane machines replaced one at a time (never more
  than replicas + 1), the workers only once every control-plane Machine is at the new version, 0 probe
  failures, never a member of a Machine already gone;
- ``scale_cluster.yml`` 3 -> 1 -> 3: members removed and added, 0 probe failures; then a ``maxSurge: 0``
  upgrade: never more than 3 control-plane machines, never fewer than 2 live ones;
- ``kill -9`` of the playbook at 5 points of an upgrade (each when the store shows the next step of the
  upgrade happening in that run), then a re-run: converged, no stale member, no host left deployed for nothing.
"""

from __future__ import annotations

import random
import time

import pytest

from lab.ironic import hosts as lab_hosts
from tests.integration.e2e.conftest import E2E, free_endpoint, metal3_description, new_names
from tests.integration.e2e.test_e2e_metal3 import _ironic
from tests.integration.net import LOOP

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


class Cluster:
    def __init__(self, e: E2E, inv: dict):
        self.e, self.inv = e, inv
        self.version = "v1.34.4"

    def converged(self, cp: int = CP, workers: int = WORKERS) -> dict[str, dict]:
        """Every Machine Running at the described version with a Ready Node; the hosts deployed (Ironic) and
        claimed (store) are exactly the machines'; every Node is a Machine's."""
        e = self.e
        machines = e.machines()
        assert sorted("cp" if is_cp(m) else "w" for m in machines.values()) == ["cp"] * cp + ["w"] * workers
        nodes = e.workload_nodes()
        for name, m in machines.items():
            assert m["status"]["phase"] == "Running" and m["spec"]["version"] == self.version, (name, m["status"])
            assert nodes[m["status"]["nodeRef"]["name"]]["ready"] == "True", name
        assert sorted(nodes) == sorted(m["status"]["nodeRef"]["name"] for m in machines.values()), nodes
        deployed = {h for h, st in _ironic(e, self.inv).items() if st == "active"}
        assert len(deployed) == len(machines), deployed  # no host left deployed for nothing
        s = e.store()
        try:
            consumers = sorted(
                h["spec"]["consumerRef"]["name"] for h in s.list("BareMetalHost", e.ns) if h["spec"].get("consumerRef")
            )
            claims = s.list("IPClaim", e.ns)
        finally:
            s.close()
        assert consumers == sorted(machines), consumers
        assert len(claims) == len(machines), [c["metadata"]["name"] for c in claims]
        return machines

    def upgrade_to(self, version: str, **changes) -> None:
        set_description(self.e, kubernetes_version=version, **changes)
        self.version = version


@pytest.fixture(scope="module")
def cluster(e2e_lab, tmp_path_factory):
    inv = lab_hosts.load_inventory(e2e_lab.cfg)
    name, ns = new_names("u")
    # the day-2 tests run beside the other lines: endpoints and pools of their own (lab/addresses.py USES)
    desc = metal3_description(name, ns, free_endpoint(f"{LOOP}.12"), inv, random.randint(200, 209), hosts=7)
    desc["control_plane"]["replicas"] = CP
    desc["workers"][0]["replicas"] = WORKERS
    desc.pop("kubeadm", None)
    driver = {"ironic_url": inv["ironic"]["url"], "boot_iso": inv["images"]["boot_iso"], "poll": 1}
    tmp = tmp_path_factory.mktemp(name)
    e = E2E(e2e_lab, tmp, "metal3", desc, {"capi_host_driver_options": driver, "capi_no_log_hosts": False})
    try:
        t0 = time.monotonic()
        e.play("provision_cluster.yml")
        print(f"\nprovisioned {CP}+{WORKERS} in {time.monotonic() - t0:.0f}s")
        yield Cluster(e, inv)
    finally:
        e.play("deprovision_cluster.yml", {"capi_deregister_hosts": True}, expect_ok=False)


def test_metal3_upgrade_control_plane_then_workers(cluster):
    e = cluster.e
    before = cluster.converged()
    old_cp = {n for n, m in before.items() if is_cp(m)}

    # the plan: every control-plane machine, in order, then the workers; nothing written
    cluster.upgrade_to("v1.35.0")
    plan = e.play("provision_cluster.yml", check=True)
    assert "rollout plan of" in plan.out and "v1.34.4 -> v1.35.0" in plan.out, plan.out[-6000:]
    for m in old_cp:
        assert f"then {m} removed" in plan.out, plan.out[-6000:]
    assert f"workers: MachineDeployment {e.name}-md-0 rolled to v1.35.0" in plan.out, plan.out[-6000:]
    assert {n: m["spec"]["version"] for n, m in e.machines().items()} == {n: "v1.34.4" for n in before}

    t0 = time.monotonic()
    with Watch(e) as w:
        e.play("provision_cluster.yml")
    print(f"upgrade of {CP}+{WORKERS}: {time.monotonic() - t0:.0f}s, {w.probes} probes")
    after = cluster.converged()
    assert not set(after) & set(before)
    assert w.probes > 0 and w.failures == [], w.failures[:10]
    assert w.stale == [], w.stale[:10]
    assert_rolled_in_order(w, CP, 1, "v1.35.0")
    assert_replaced_one_at_a_time(w, old_cp)
    assert cp_members(w, after) == cp_nodes(after)


def test_metal3_scale_3_1_3_then_max_surge_0(cluster):
    e = cluster.e
    cluster.converged()
    t0 = time.monotonic()
    with Watch(e) as w:
        e.play("scale_cluster.yml", {"capi_control_plane_replicas": 1})
        one = cluster.converged(cp=1)
        assert cp_members(w, one) == cp_nodes(one)
        e.play("provision_cluster.yml")
        three = cluster.converged()
        assert cp_members(w, three) == cp_nodes(three)
    print(f"scale 3 -> 1 -> 3: {time.monotonic() - t0:.0f}s, {w.probes} probes")
    assert w.probes > 0 and w.failures == [] and w.stale == [], (w.failures[:10], w.stale[:10])

    # maxSurge 0: an old machine goes before its replacement comes
    old_cp = {n for n, m in three.items() if is_cp(m)}
    cluster.upgrade_to("v1.35.1", **{"control_plane.rollout": {"max_surge": 0}})
    t0 = time.monotonic()
    with Watch(e) as w:
        e.play("provision_cluster.yml")
    print(f"maxSurge 0 upgrade: {time.monotonic() - t0:.0f}s, {w.probes} probes")
    after = cluster.converged()
    assert not old_cp & set(after)
    assert w.probes > 0 and w.failures == [] and w.stale == [], (w.failures[:10], w.stale[:10])
    assert_rolled_in_order(w, CP, 0, "v1.35.1")
    assert_replaced_one_at_a_time(w, old_cp)
    assert cp_members(w, after) == cp_nodes(after)


def test_metal3_upgrade_killed_at_five_points_then_rerun(cluster):
    e = cluster.e
    before = cluster.converged()
    cluster.upgrade_to("v1.35.2", **{"control_plane.rollout": {"max_surge": 1}})
    outcomes, w = killed_upgrade(e)
    final = cluster.converged()
    assert not set(final) & set(before)
    assert_recovered_from_kills(e, outcomes, w, final)
