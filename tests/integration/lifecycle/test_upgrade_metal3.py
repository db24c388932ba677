"""A Metal3 cluster's control-plane lifecycle through the user's playbooks, on the lab (fake-hardware hosts).

3 control-plane machines + 1 worker, provisioned; then, with the workload API probed every second and the etcd
member list watched every second:

- ``provision_cluster.yml --check`` with a new ``kubernetes_version`` prints the plan and writes nothing;
- ``provision_cluster.yml`` performs the upgrade: control-plane machines replaced one at a time (never more
  than replicas + 1), the worker only once every control-plane Machine is at the new version, 0 probe
  failures, never a member of a Machine already gone;
- ``scale_cluster.yml`` 3 -> 1 -> 3: members removed and added;
- a ``maxSurge: 0`` upgrade: never more than 3 control-plane machines;
- ``kill -9`` of the playbook at several points of an upgrade, then a re-run: converged, no stale member.
"""

from __future__ import annotations

import random

import pytest
import yaml

from tests.integration.e2e.conftest import E2E, free_endpoint, metal3_description, new_names
from tests.integration.e2e.test_e2e_metal3 import _ironic
from tests.integration.net import LOOP

from .watch import Watch

pytestmark = pytest.mark.timeout(3600)


def set_description(e: E2E, **changes) -> dict:
    path = f"{e.inventory}/host_vars/{e.name}.yml"
    with open(path) as fh:
        host_vars = yaml.safe_load(fh)
    desc = host_vars["capi_cluster"]
    for key, value in changes.items():
        target = desc
        *head, last = key.split(".")
        for k in head:
            target = target.setdefault(k, {})
        target[last] = value
    with open(path, "w") as fh:
        yaml.safe_dump(host_vars, fh, sort_keys=False)
    return desc


def converged(e: E2E, inv: dict, cp: int, workers: int, version: str) -> dict[str, dict]:
    machines = e.machines()
    roles = sorted(
        "cp" if "cluster.x-k8s.io/control-plane" in m["metadata"]["labels"] else "w" for m in machines.values()
    )
    assert roles == ["cp"] * cp + ["w"] * workers, roles
    nodes = e.workload_nodes()
    for name, m in machines.items():
        assert m["status"]["phase"] == "Running" and m["spec"]["version"] == version, (name, m["spec"], m["status"])
        assert nodes[m["status"]["nodeRef"]["name"]]["ready"] == "True", name
    claimed = {h for h, st in _ironic(e, inv).items() if st == "active"}
    assert len(claimed) == len(machines), claimed  # no host left deployed for nothing
    return machines


def cp_members(w: Watch, machines: dict) -> list[str]:
    s = w.e.store()
    try:
        from kubernetes import client as k8s

        nodes = {}
        for n in k8s.CoreV1Api(w.e.workload_api()).list_node().items:
            nodes[n.metadata.name] = {"addresses": [a.address for a in n.status.addresses if a.type == "InternalIP"]}
        cps = [m for m in s.list("Machine", w.e.ns) if "cluster.x-k8s.io/control-plane" in m["metadata"]["labels"]]
        return w.members(s, cps, nodes)
    finally:
        s.close()


def assert_one_at_a_time(w: Watch, replicas: int, surge: int, new_version: str) -> None:
    cps = [sum(1 for v in s["machines"].values() if v["cp"]) for s in w.samples]
    assert max(cps) <= replicas + surge, cps
    assert min(cps) >= replicas - (1 - surge), cps
    for s in w.samples:
        workers_new = [n for n, v in s["machines"].items() if not v["cp"] and v["version"] == new_version]
        if workers_new:
            cp_versions = {v["version"] for v in s["machines"].values() if v["cp"]}
            assert cp_versions == {new_version}, (workers_new, s)


def test_metal3_upgrade_scale_surge0_and_kill(e2e_lab, ironic_inventory, tmp_path):
    inv = ironic_inventory
    name, ns = new_names("u")
    octet = random.randint(100, 199)
    desc = metal3_description(name, ns, free_endpoint(f"{LOOP}.9"), inv, octet)
    # 3 control planes + 1 worker, and 1 host to spare for the surge
    hosts = desc["hosts"]
    for i in range(4, 6):
        h = yaml.safe_load(yaml.safe_dump(hosts[0]))
        mac = h["spec"]["bootMACAddress"][:-2] + f"{i:02x}"
        h["name"] = f"{name}-host-{i}"
        h["spec"]["bmc"]["address"] = f"fake://{name}-host-{i}"
        h["spec"]["bootMACAddress"] = mac
        h["hardware"] = {
            "hostname": h["name"],
            "nics": [{"name": "enp1s0", "mac": mac, "ip": f"{LOOP}.{octet}.{10 + i}"}],
        }
        hosts.append(h)
    desc["control_plane"]["replicas"] = 3
    desc.pop("kubeadm", None)
    driver = {"ironic_url": inv["ironic"]["url"], "boot_iso": inv["images"]["boot_iso"], "poll": 1}
    e = E2E(e2e_lab, tmp_path, "metal3", desc, {"capi_host_driver_options": driver, "capi_no_log_hosts": False})
    try:
        e.play("provision_cluster.yml")
        before = converged(e, inv, cp=3, workers=1, version="v1.34.4")

        # the plan: every control-plane machine, in order, then the workers; nothing written
        set_description(e, kubernetes_version="v1.35.0")
        plan = e.play("provision_cluster.yml", check=True)
        assert "rollout plan of" in plan.out and "v1.34.4 -> v1.35.0" in plan.out, plan.out[-6000:]
        for m in before:
            if "cluster.x-k8s.io/control-plane" in before[m]["metadata"]["labels"]:
                assert f"then {m} removed" in plan.out, plan.out[-6000:]
        assert f"workers: MachineDeployment {name}-md-0 rolled to v1.35.0" in plan.out
        assert {n: m["spec"]["version"] for n, m in e.machines().items()} == {n: "v1.34.4" for n in before}

        with Watch(e) as w:
            e.play("provision_cluster.yml")
        after = converged(e, inv, cp=3, workers=1, version="v1.35.0")
        assert not set(after) & set(before)
        assert w.probes > 0 and w.failures == [], w.failures[:10]
        assert w.stale == [], w.stale[:10]
        assert_one_at_a_time(w, 3, 1, "v1.35.0")
        cp_nodes = sorted(
            m["status"]["nodeRef"]["name"]
            for m in after.values()
            if "cluster.x-k8s.io/control-plane" in m["metadata"]["labels"]
        )
        assert cp_members(w, after) == cp_nodes

        # scale 3 -> 1 -> 3: the members follow
        with Watch(e) as w:
            e.play("scale_cluster.yml", {"capi_control_plane_replicas": 1})
            one = converged(e, inv, cp=1, workers=1, version="v1.35.0")
            assert len(cp_members(w, one)) == 1
            e.play("provision_cluster.yml")
            three = converged(e, inv, cp=3, workers=1, version="v1.35.0")
            assert len(cp_members(w, three)) == 3
        assert w.failures == [] and w.stale == [], (w.failures[:10], w.stale[:10])

        # maxSurge 0: an old machine goes before its replacement comes
        set_description(e, kubernetes_version="v1.35.1", **{"control_plane.rollout": {"max_surge": 0}})
        with Watch(e) as w:
            e.play("provision_cluster.yml")
        converged(e, inv, cp=3, workers=1, version="v1.35.1")
        assert w.failures == [] and w.stale == [], (w.failures[:10], w.stale[:10])
        assert_one_at_a_time(w, 3, 0, "v1.35.1")

        # kill -9 of an upgrade at several points, then a re-run: converged, no stale member, nothing leaked
        set_description(e, kubernetes_version="v1.35.2", **{"control_plane.rollout": {"max_surge": 1}})
        outcomes = []
        with Watch(e) as w:
            for after_s in sorted(random.uniform(5, 90) for _ in range(5)):
                outcomes.append(e.play_killed("provision_cluster.yml", None, after_s))
            e.play("provision_cluster.yml")
        final = converged(e, inv, cp=3, workers=1, version="v1.35.2")
        assert w.stale == [], w.stale[:10]
        cp_nodes = sorted(
            m["status"]["nodeRef"]["name"]
            for m in final.values()
            if "cluster.x-k8s.io/control-plane" in m["metadata"]["labels"]
        )
        assert cp_members(w, final) == cp_nodes
        print(f"kill -9: {outcomes}; probe failures during the kills: {len(w.failures)}")
    finally:
        e.play("deprovision_cluster.yml", {"capi_deregister_hosts": True}, expect_ok=False)
