"""provision_cluster.yml on Metal3 end to end: lab Ironic (fake-hardware hosts), node simulator, workload API.

Provision (1 control plane + 1 worker), a second run changes nothing, scale_cluster.yml adds exactly one
worker and provision_cluster.yml (the description) removes exactly one again, a scale-up killed with -9 at a
random moment and run again converges with no host or address leaked, and deprovision_cluster.yml gives
every host and address back.
"""

from __future__ import annotations

import base64
import random

import openstack
import pytest
from kubernetes import client as k8s

from tests.integration.net import LOOP

from .conftest import E2E, free_endpoint, metal3_description, new_names

pytestmark = pytest.mark.timeout(2400)


APPS = "apps"


def cp_names(machines: dict[str, dict]) -> set[str]:
    return {n for n, m in machines.items() if "cluster.x-k8s.io/control-plane" in m["metadata"]["labels"]}


def _running_pod(core, name: str, node: str) -> None:
    """A Pod bound to the Node, Running and Ready (the test plays its kubelet), guarded by the "guard" budget."""
    for create, body in (
        (core.create_namespace, {"metadata": {"name": APPS}}),
        (lambda b: core.create_namespaced_service_account(APPS, b), {"metadata": {"name": "default"}}),
    ):
        try:
            create(body)
        except k8s.ApiException as exc:
            if exc.status != 409:
                raise
    spec = {"nodeName": node, "terminationGracePeriodSeconds": 0, "containers": [{"name": "app", "image": "app"}]}
    core.create_namespaced_pod(APPS, {"metadata": {"name": name, "labels": {"app": "guarded"}}, "spec": spec})
    running = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    core.patch_namespaced_pod_status(name, APPS, {"status": running})


def _ironic(e: E2E, inv: dict) -> dict[str, str]:
    conn = openstack.connect(auth_type="none", baremetal_endpoint_override=inv["ironic"]["url"])
    try:
        return {
            n.name.split("~", 1)[1]: n.provision_state
            for n in conn.baremetal.nodes(fields=["name", "provision_state"])
            if (n.name or "").startswith(e.ns + "~")
        }
    finally:
        conn.close()


def _converged(e: E2E, inv: dict, workers: int) -> dict[str, dict]:
    """Every Machine Running with a Ready Node of its providerID; hosts and addresses exactly the machines'."""
    machines = e.machines()
    roles = sorted(
        "cp" if "cluster.x-k8s.io/control-plane" in m["metadata"]["labels"] else "w" for m in machines.values()
    )
    assert roles == ["cp"] + ["w"] * workers, roles
    nodes = e.workload_nodes()
    assert len(nodes) == len(machines), (sorted(nodes), sorted(machines))
    for name, m in machines.items():
        assert m["status"]["phase"] == "Running", (name, m["status"])
        node = nodes[m["status"]["nodeRef"]["name"]]
        assert node["ready"] == "True" and node["providerID"] == m["spec"]["providerID"], (name, node)
        assert m["spec"]["providerID"].startswith(f"metal3://{e.ns}/")
    s = e.store()
    try:
        m3ms = {m["metadata"]["name"] for m in s.list("Metal3Machine", e.ns)}
        claimed = {h["metadata"]["name"]: h["spec"]["consumerRef"]["name"]
                   for h in s.list("BareMetalHost", e.ns) if h["spec"].get("consumerRef")}  # fmt: skip
        claims = [c["metadata"]["name"] for c in s.list("IPClaim", e.ns)]
        datas = [d["metadata"]["name"] for d in s.list("Metal3Data", e.ns)]
    finally:
        s.close()
    assert m3ms == set(machines) == set(claimed.values()), (m3ms, claimed)
    assert len(claims) == len(machines) == len(datas), (claims, datas)
    ironic = _ironic(e, inv)
    assert {h for h, st in ironic.items() if st == "active"} == set(claimed), ironic
    return machines


def test_metal3_provision_rerun_scale_kill_deprovision(e2e_lab, ironic_inventory, tmp_path):
    inv = ironic_inventory
    name, ns = new_names("m")
    octet = random.randint(100, 199)
    desc = metal3_description(name, ns, free_endpoint(f"{LOOP}.9"), inv, octet)
    driver = {"ironic_url": inv["ironic"]["url"], "boot_iso": inv["images"]["boot_iso"], "poll": 1}
    e = E2E(e2e_lab, tmp_path, "metal3", desc, {"capi_host_driver_options": driver, "capi_no_log_hosts": False})
    try:
        # the plan (check mode) of a new cluster: changes foreseen, nothing written, no Ironic node registered
        plan = e.play("provision_cluster.yml", check=True)
        assert plan.changed > 0 and "check mode:" in plan.out, plan.out[-6000:]
        s = e.store()
        try:
            assert s.list("Cluster", e.ns) == [] and s.list("BareMetalHost", e.ns) == []
        finally:
            s.close()
        assert _ironic(e, inv) == {}

        first = e.play("provision_cluster.yml")
        assert "Machines of" in first.out and "NODE READY" in first.out  # the progress callback's table
        before = _converged(e, inv, workers=1)
        s = e.store()
        try:
            for mname, m in before.items():
                secret = s.get("Secret", m["spec"]["bootstrap"]["dataSecretName"], ns)
                last = base64.b64decode(secret["data"]["value"]).decode().rstrip("\n").rsplit("\n", 1)[1]
                role = "init" if "cluster.x-k8s.io/control-plane" in m["metadata"]["labels"] else "join"
                assert last == f"# baremetal.capi e2e: {role} {ns}/{mname}", last
        finally:
            s.close()

        again = e.play("provision_cluster.yml")
        assert again.changed == 0, again.out[-6000:]
        assert e.play("provision_cluster.yml", check=True).changed == 0  # and its plan is empty
        assert set(e.machines()) == set(before)

        # scale up: exactly one new worker; nothing else replaced
        e.play("scale_cluster.yml", {"capi_worker_replicas": {"md-0": 2}})
        up = _converged(e, inv, workers=2)
        assert set(before) < set(up) and len(set(up) - set(before)) == 1

        # back to the description: exactly one worker goes, the control plane stays; its Node is drained first
        core = k8s.CoreV1Api(e.workload_api())
        workers = {n: m["status"]["nodeRef"]["name"] for n, m in up.items() if n not in cp_names(up)}
        for node in workers.values():
            _running_pod(core, f"app-{node}", node)
        e.play("provision_cluster.yml")
        down = _converged(e, inv, workers=1)
        assert set(down) < set(up) and len(set(up) - set(down)) == 1
        (gone,) = set(up) - set(down)
        pods = {p.metadata.name for p in core.list_namespaced_pod(APPS).items}
        assert pods == {f"app-{node}" for m, node in workers.items() if m != gone}, pods  # evicted, the other stays
        assert cp_names(up) <= set(down)

        # kill -9 in the middle of a scale-up, then run again: converged, nothing leaked
        outcome = e.play_killed("scale_cluster.yml", {"capi_worker_replicas": {"md-0": 2}}, random.uniform(4, 30))
        e.play("scale_cluster.yml", {"capi_worker_replicas": {"md-0": 2}})
        _converged(e, inv, workers=2)
        e.play("provision_cluster.yml")
        _converged(e, inv, workers=1)
        print(f"kill -9: {outcome}")

        # deprovision: every host back, every address released; a budget allowing no disruption does not hold
        # it up (no Node is drained while the whole cluster goes, as in Cluster API)
        for n, m in e.machines().items():
            _running_pod(core, f"kept-{n}", m["status"]["nodeRef"]["name"])
        guard = {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "guarded"}}}
        k8s.PolicyV1Api(e.workload_api()).create_namespaced_pod_disruption_budget(
            APPS, {"metadata": {"name": "guard"}, "spec": guard}
        )
        e.play("deprovision_cluster.yml")
        s = e.store()
        try:
            assert s.list("Machine", e.ns) == [] and s.list("Metal3Machine", e.ns) == []
            assert s.list("IPClaim", e.ns) == [] and s.list("Metal3Data", e.ns) == []
            assert all(not h["spec"].get("consumerRef") for h in s.list("BareMetalHost", e.ns))
            assert s.list("Cluster", e.ns) == []
        finally:
            s.close()
        assert all(st in ("available", "manageable") for st in _ironic(e, inv).values()), _ironic(e, inv)
    finally:
        e.play("deprovision_cluster.yml", {"capi_deregister_hosts": True}, expect_ok=False)
