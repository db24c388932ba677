"""Add-ons and the CNI end to end (Metal3, fake-hardware hosts, the node simulator's kubelets).

A new cluster without a CNI: provision_cluster.yml takes every Machine to Running with its Node registered,
and the Nodes stay NotReady with the kubelet's own reason ("cni plugin not initialized", the progress lines
saying "network not ready"); the CNI add-on written meanwhile is applied by the running converge loop, the
Nodes become Ready and the run finishes.  Then ApplyOnce applies a changed manifest never again, Reconcile
applies it again (the ClusterResourceSetBinding's hash follows), and an add-on removed from the description
is no longer reconciled.
"""

from __future__ import annotations

import random
import subprocess
import time

import pytest
import yaml
from kubernetes import client as k8s

from lab.config import REPO
from tests.integration import cni
from tests.integration.net import LOOP

from .conftest import E2E, free_endpoint, metal3_description, new_names

pytestmark = pytest.mark.timeout(2400)
KUBELET_NO_CNI = (
    "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady "
    "message:Network plugin returns error: cni plugin not initialized"
)


def _ready_conditions(core) -> dict[str, tuple]:
    out = {}
    for n in core.list_node().items:
        c = next((c for c in n.status.conditions or [] if c.type == "Ready"), None)
        out[n.metadata.name] = (c.status, c.reason, c.message) if c else None
    return out


def _wait(what: str, fn, timeout: float = 900, poll: float = 2):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = fn()
        except Exception as exc:  # noqa: BLE001 - the workload API comes up during the run
            last = exc
        if last and not isinstance(last, Exception):
            return last
        time.sleep(poll)
    pytest.fail(f"timed out waiting for {what}; last: {last!r}")


def _configmap(name: str, value: str) -> str:
    return yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"v": value}})


def test_nodes_not_ready_until_the_cni_addon_then_apply_once_and_reconcile(e2e_lab, ironic_inventory, tmp_path):
    inv = ironic_inventory
    name, ns = new_names("a")
    desc = metal3_description(name, ns, free_endpoint(f"{LOOP}.9"), inv, random.randint(100, 199))
    desc["addons"] = []  # no CNI yet
    driver = {"ironic_url": inv["ironic"]["url"], "boot_iso": inv["images"]["boot_iso"], "poll": 1}
    e = E2E(e2e_lab, tmp_path, "metal3", desc, {"capi_host_driver_options": driver, "capi_no_log_hosts": False})
    try:
        _scenario(e, desc, name, ns, tmp_path)
    finally:
        e.play("deprovision_cluster.yml", {"capi_deregister_hosts": True}, expect_ok=False)


def _scenario(e: E2E, desc: dict, name: str, ns: str, tmp_path) -> None:
    log = open(tmp_path / "first-run.log", "w")  # noqa: SIM115
    proc = subprocess.Popen(e.argv("provision_cluster.yml"), cwd=REPO, env=e.env, stdout=log,
                            stderr=subprocess.STDOUT)  # fmt: skip
    try:

        def registered_not_ready():
            machines = e.machines()
            if len(machines) != 2 or any((m.get("status") or {}).get("phase") != "Running" for m in machines.values()):
                return False
            conds = _ready_conditions(k8s.CoreV1Api(e.workload_api()))
            return conds if len(conds) == 2 and all(c and c[0] == "False" for c in conds.values()) else False

        # the machine flow does not wait for Ready: every Machine Running, its Node registered and NotReady
        conds = _wait("both Machines Running with NotReady Nodes", registered_not_ready)
        assert proc.poll() is None, "provision_cluster.yml finished without Ready Nodes"
        for status, reason, message in conds.values():
            assert (status, reason, message) == ("False", "KubeletNotReady", KUBELET_NO_CNI)
        for m in e.machines().values():
            cond = next(c for c in m["status"]["conditions"] if c["type"] == "NodeReady")
            assert cond["status"] == "False" and "cni plugin not initialized" in cond["message"], cond
        time.sleep(5)  # a few more rounds: still not Ready without a CNI (the lab cannot be kind)
        assert all(c[0] == "False" for c in _ready_conditions(k8s.CoreV1Api(e.workload_api())).values())

        # the CNI add-on, as the addons role writes it: the running rounds apply it, the Nodes become Ready
        s = e.store()
        try:
            cni.add_to_store(s, name, ns)
        finally:
            s.close()
        assert proc.wait(timeout=900) == 0, (tmp_path / "first-run.log").read_text()[-8000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()
    out = (tmp_path / "first-run.log").read_text()
    assert "node=NotReady (network not ready)" in out, out[-6000:]
    core = k8s.CoreV1Api(e.workload_api())
    assert {c[0] for c in _ready_conditions(core).values()} == {"True"}
    assert k8s.AppsV1Api(e.workload_api()).read_namespaced_daemon_set(cni.DAEMONSET[1], cni.DAEMONSET[0])
    s = e.store()
    try:
        binding = s.get("ClusterResourceSetBinding", name, ns)
        (entry,) = binding["spec"]["bindings"]
        assert entry["clusterResourceSetName"] == f"{name}-cni"
        (res,) = entry["resources"]
        assert res["applied"] is True and res["hash"].startswith("sha256:") and res["kind"] == "ConfigMap"
    finally:
        s.close()

    # the same add-on in the description: nothing changes
    base = {**desc, "addons": [cni.ADDON]}
    e.rewrite(base)
    assert e.play("provision_cluster.yml").changed == 0

    once, rec = tmp_path / "once.yaml", tmp_path / "rec.yaml"
    once.write_text(_configmap("addon-once", "v1"))
    rec.write_text(_configmap("addon-rec", "v1"))
    with_two = {
        **base,
        "addons": [
            cni.ADDON,
            {"name": "once", "manifests": [str(once)]},
            {"name": "rec", "manifests": [str(rec)], "strategy": "Reconcile"},
        ],
    }
    e.rewrite(with_two)
    e.play("provision_cluster.yml")
    value = lambda cm: core.read_namespaced_config_map(cm, "default").data["v"]  # noqa: E731
    assert (value("addon-once"), value("addon-rec")) == ("v1", "v1")

    once.write_text(_configmap("addon-once", "v2"))
    rec.write_text(_configmap("addon-rec", "v2"))
    e.play("provision_cluster.yml")
    assert (value("addon-once"), value("addon-rec")) == ("v1", "v2")  # ApplyOnce never again, Reconcile again
    s = e.store()
    try:
        entries = {
            b["clusterResourceSetName"]: b for b in s.get("ClusterResourceSetBinding", name, ns)["spec"]["bindings"]
        }
        data = s.get("ConfigMap", f"{name}-addon-rec", ns)["data"]
    finally:
        s.close()
    from ansible_collections.baremetal.capi.plugins.module_utils.capi import addons

    assert entries[f"{name}-rec"]["resources"][0]["hash"] == addons.compute_hash(
        [v.encode() for _k, v in sorted(data.items())]
    )

    # rec removed from the description: no longer reconciled (what it applied stays)
    e.rewrite({**base, "addons": [cni.ADDON, {"name": "once", "manifests": [str(once)]}]})
    rec.write_text(_configmap("addon-rec", "v3"))
    e.play("provision_cluster.yml")
    assert value("addon-rec") == "v2"
    s = e.store()
    try:
        assert [c["metadata"]["name"] for c in s.list("ClusterResourceSet", ns)] == [f"{name}-cni", f"{name}-once"]
        names = {b["clusterResourceSetName"] for b in s.get("ClusterResourceSetBinding", name, ns)["spec"]["bindings"]}
        assert names == {f"{name}-cni", f"{name}-once"}
    finally:
        s.close()
