"""The reboot strategy against a real sqlite store and the lab's wkube-apiserver, with an injected clock."""

from __future__ import annotations

import json

import pytest
from world import Bmo, Clock, Crash, Crashing, make_world

from ansible_collections.baremetal.capi.plugins.module_utils.metal3 import choose
from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions
from ansible_collections.baremetal.capi.plugins.module_utils.remediation import reboot
from ansible_collections.baremetal.capi.plugins.module_utils.remediation.targets import Metal3Target

OOS = "node.kubernetes.io/out-of-service"


def remediator(store, wkube, bmo, clock, fencing="taint"):
    return reboot.Remediator(store, Metal3Target(store, bmo), fencing_mode=fencing, workload=wkube, clock=clock)


def drive(r, ns, limit=60, on_wait=None):
    """Step until done; ``on_wait(step)`` runs when a step only waits (the test moves the clock there)."""
    steps = []
    for _ in range(limit):
        step = r.step("m-0", ns)
        steps.append(step)
        if step.done:
            return steps
        if not step.changed and on_wait:
            on_wait(step)
    raise AssertionError(f"not done after {limit} steps: {[s.message for s in steps]}")


def phases(steps):
    out = []
    for s in steps:
        if not out or out[-1] != s.data.get("phase"):
            out.append(s.data.get("phase"))
    return out


def test_taint_fencing_power_cycle_and_node_ready_again(store, wkube):
    ns, node, _rem = make_world(store, wkube)
    bmo, clock = Bmo(wkube, node), Clock()
    steps = drive(remediator(store, wkube, bmo, clock), ns)
    assert steps[-1].data["outcome"] == reboot.OUTCOME_REMEDIATED
    assert phases(steps) == ["Running", "Waiting"]
    assert bmo.history == [False, True]  # one power cycle: off, then on
    # the host: no request left, not unhealthy
    host = store.get("BareMetalHost", "host-0", ns)
    assert not [k for k in host["metadata"].get("annotations", {}) if k.startswith("reboot.metal3.io")]
    assert "capm3.metal3.io/unhealthy" not in host["metadata"].get("annotations", {})
    # the taint (test_taint_is_on_the_node_while_the_host_is_off) is gone now, and the finalizer
    n = wkube.get_node(node)
    assert OOS not in [t["key"] for t in n["spec"].get("taints") or []]
    rem = store.get("Metal3Remediation", "m-0", ns)
    assert rem["status"]["phase"] == "Waiting" and rem["status"]["retryCount"] == 0
    assert "metal3remediation.infrastructure.cluster.x-k8s.io" not in rem["metadata"].get("finalizers", [])
    # converged: another step changes nothing and powers nothing
    again = remediator(store, wkube, bmo, clock).step("m-0", ns)
    assert again.done and not again.changed and bmo.history == [False, True]


def test_taint_is_on_the_node_while_the_host_is_off(store, wkube):
    ns, node, _rem = make_world(store, wkube)
    bmo, clock = Bmo(wkube, node), Clock()
    r = remediator(store, wkube, bmo, clock)
    for _ in range(20):
        r.step("m-0", ns)
        if store.get("Metal3Remediation", "m-0", ns)["status"].get("phase") == "Waiting":
            break
    n = wkube.get_node(node)
    assert {"key": OOS, "value": "nodeshutdown", "effect": "NoExecute"} in n["spec"]["taints"]
    assert store.get("BareMetalHost", "host-0", ns)["status"]["poweredOn"] is False
    rem = store.get("Metal3Remediation", "m-0", ns)
    key = f"reboot.metal3.io/metal3-remediation-{rem['metadata']['uid']}"
    assert store.get("BareMetalHost", "host-0", ns)["metadata"]["annotations"][key] == '{"mode":"hard","force":false}'


def test_delete_fencing_backs_up_deletes_and_restores_existing_keys_winning(store, wkube):
    labels = {"kubernetes.io/hostname": "x", "zone": "old", "team.example.com/owner": "ops"}
    ns, node, _rem = make_world(store, wkube, node_labels=labels, node_annotations={"note": "keep-me"})
    bmo, clock = Bmo(wkube, node), Clock()
    deleted_seen = []
    r = remediator(store, wkube, bmo, clock, fencing="delete")

    def on_wait(step):
        deleted_seen.append(wkube.get_node(node) is None)

    for _ in range(30):
        step = r.step("m-0", ns)
        rem = store.get("Metal3Remediation", "m-0", ns)
        if rem["status"].get("phase") == "Waiting" and not deleted_seen:
            # fenced: the Node is gone and its labels and annotations are saved on the remediation
            assert wkube.get_node(node) is None
            saved = json.loads(rem["metadata"]["annotations"]["remediation.metal3.io/node-labels-backup"])
            assert saved["team.example.com/owner"] == "ops" and saved["zone"] == "old"
            saved_ann = json.loads(rem["metadata"]["annotations"]["remediation.metal3.io/node-annotations-backup"])
            assert saved_ann["note"] == "keep-me"
            deleted_seen.append(True)
        if step.done:
            break
    assert step.data["outcome"] == reboot.OUTCOME_REMEDIATED
    n = wkube.get_node(node)
    # the kubelet re-registered with zone=new: the new Node's key wins; the rest comes back
    assert n["metadata"]["labels"]["zone"] == "new"
    assert n["metadata"]["labels"]["team.example.com/owner"] == "ops"
    assert n["metadata"]["annotations"]["note"] == "keep-me"
    rem = store.get("Metal3Remediation", "m-0", ns)
    assert not [k for k in rem["metadata"].get("annotations", {}) if k.startswith("remediation.metal3.io/")]
    assert bmo.history == [False, True]


def test_auto_fencing_follows_the_workload_api_version(store, wkube):
    ns, node, _rem = make_world(store, wkube)
    wkube.version = "v1.27.9"
    bmo, clock = Bmo(wkube, node), Clock()
    r = remediator(store, wkube, bmo, clock, fencing="auto")
    for _ in range(30):
        r.step("m-0", ns)
        if store.get("Metal3Remediation", "m-0", ns)["status"].get("phase") == "Waiting":
            break
    assert wkube.get_node(node) is None  # 1.27: no out-of-service taint, so the Node is deleted


def test_never_back_retries_then_deleting_machine_and_unhealthy_host(store, wkube):
    ns, node, _rem = make_world(store, wkube, retry_limit=2, timeout=100)
    bmo, clock = Bmo(wkube, node, comes_back=False), Clock()
    retries = []

    def on_wait(step):
        if step.data.get("phase") == "Waiting":
            clock.advance(101)  # the timeout passes
            retries.append(step.data["retryCount"])

    steps = drive(remediator(store, wkube, bmo, clock), ns, limit=200, on_wait=on_wait)
    assert steps[-1].data["outcome"] == "Deleting machine"
    assert bmo.cycles == 3  # the first attempt plus retryLimit retries
    rem = store.get("Metal3Remediation", "m-0", ns)
    assert rem["status"]["phase"] == "Deleting machine" and rem["status"]["retryCount"] == 2
    host = store.get("BareMetalHost", "host-0", ns)
    assert host["metadata"]["annotations"]["capm3.metal3.io/unhealthy"] == "capm3/UnhealthyNode"
    assert choose.skip_reason(host) == "unhealthy"
    machine = store.get("Machine", "m-0", ns)
    cond = conditions.get(machine, "OwnerRemediated")
    assert cond["status"] == "False" and cond["reason"] == "WaitingForRemediation"
    # terminal: nothing more happens
    last = remediator(store, wkube, bmo, clock).step("m-0", ns)
    assert last.done and not last.changed and bmo.cycles == 3


def test_no_retry_before_the_timeout(store, wkube):
    ns, node, _rem = make_world(store, wkube, retry_limit=1, timeout=100)
    bmo, clock = Bmo(wkube, node, comes_back=False), Clock()
    r = remediator(store, wkube, bmo, clock)
    for _ in range(30):
        step = r.step("m-0", ns)
        if step.data.get("phase") == "Waiting" and not step.changed:
            break
    clock.advance(99)
    for _ in range(5):
        assert not r.step("m-0", ns).changed
    assert bmo.cycles == 1
    clock.advance(2)
    assert "retry 1 of 1" in r.step("m-0", ns).message


def test_offline_host_fails(store, wkube):
    ns, node, _rem = make_world(store, wkube)
    host = store.get("BareMetalHost", "host-0", ns)
    host["spec"]["online"] = False
    store.update(host)
    step = remediator(store, wkube, Bmo(wkube, node), Clock()).step("m-0", ns)
    assert step.done and step.data["outcome"] == "Failed"
    assert store.get("Metal3Remediation", "m-0", ns)["status"]["phase"] == "Failed"


def test_check_mode_writes_nothing(store, wkube):
    ns, node, rem = make_world(store, wkube)
    bmo = Bmo(wkube, node)
    step = remediator(store, wkube, bmo, Clock()).step("m-0", ns, check=True)
    assert step.changed and step.message.startswith("would")
    now = store.get("Metal3Remediation", "m-0", ns)
    assert now["metadata"]["resourceVersion"] == rem["metadata"]["resourceVersion"]
    assert bmo.history == []


def _count_writes(store, wkube, fencing):
    ns, node, _rem = make_world(store, wkube)
    counter = {"n": 0}
    bmo = Bmo(wkube, node)
    r = reboot.Remediator(
        Crashing(store, counter, None),
        Metal3Target(Crashing(store, counter, None), bmo),
        fencing_mode=fencing,
        workload=Crashing(wkube, counter, None, ("patch_node", "delete_node")),
        clock=Clock(),
    )
    drive(r, ns)
    return counter["n"]


@pytest.mark.parametrize("fencing", ["taint", "delete"])
def test_interrupted_after_every_write_continues_without_a_second_power_cycle(store, wkube, fencing):
    total = _count_writes(store, wkube, fencing)
    # finalizer, request, power off, taint (or backup + delete), Waiting, request gone, power on, restore...
    assert total >= 8, total
    for at in range(1, total + 1):
        ns, node, _rem = make_world(store, wkube)
        bmo, clock, counter = Bmo(wkube, node), Clock(), {"n": 0}
        crashing = reboot.Remediator(
            Crashing(store, counter, at),
            Metal3Target(Crashing(store, counter, at), bmo),
            fencing_mode=fencing,
            workload=Crashing(wkube, counter, at, ("patch_node", "delete_node")),
            clock=clock,
        )
        with pytest.raises(Crash):
            drive(crashing, ns)
        # a new run (a new process) picks up from what was recorded
        steps = drive(remediator(store, wkube, bmo, clock, fencing), ns)
        assert steps[-1].data["outcome"] == reboot.OUTCOME_REMEDIATED, (at, [s.message for s in steps])
        assert bmo.history == [False, True], (at, bmo.history)
        n = wkube.get_node(node)
        assert OOS not in [t["key"] for t in n["spec"].get("taints") or []]
        rem = store.get("Metal3Remediation", "m-0", ns)
        assert not rem["metadata"].get("finalizers") and rem["status"]["retryCount"] == 0


def test_the_same_on_the_kubernetes_store(kube_store, kube_namespace, wkube):
    """The state machine over the kubernetes store (the lab's wkube-apiserver with the collection's CRDs)."""
    ns, node, _rem = make_world(kube_store, wkube, ns=kube_namespace, retry_limit=1, timeout=100)
    bmo, clock = Bmo(wkube, node, comes_back=False), Clock()

    def on_wait(step):
        if step.data.get("phase") == "Waiting":
            clock.advance(101)

    steps = drive(remediator(kube_store, wkube, bmo, clock, fencing="delete"), ns, limit=200, on_wait=on_wait)
    assert steps[-1].data["outcome"] == "Deleting machine" and bmo.cycles == 2
    rem = kube_store.get("Metal3Remediation", "m-0", ns)
    assert rem["status"]["phase"] == "Deleting machine" and rem["status"]["retryCount"] == 1
    assert "remediation.metal3.io/node-labels-backup" in rem["metadata"]["annotations"]
    host = kube_store.get("BareMetalHost", "host-0", ns)
    assert host["metadata"]["annotations"]["capm3.metal3.io/unhealthy"] == "capm3/UnhealthyNode"
    cond = conditions.get(kube_store.get("Machine", "m-0", ns), "OwnerRemediated")
    assert cond["reason"] == "WaitingForRemediation"


def test_deleting_after_the_machine_went_lets_go(store, wkube):
    """Deleting machine with delete fencing keeps the finalizer (the Node never came back to be restored);
    once the machines flow has removed the Metal3Machine, deleting the remediation lets go of it."""
    ns, node, _rem = make_world(store, wkube, retry_limit=1, timeout=100)
    bmo, clock = Bmo(wkube, node, comes_back=False), Clock()

    def on_wait(step):
        if step.data.get("phase") == "Waiting":
            clock.advance(101)

    r = remediator(store, wkube, bmo, clock, fencing="delete")
    assert drive(r, ns, limit=200, on_wait=on_wait)[-1].data["outcome"] == "Deleting machine"
    assert store.get("Metal3Remediation", "m-0", ns)["metadata"]["finalizers"]
    store.delete("Metal3Machine", "m-0", ns)
    store.delete("Metal3Remediation", "m-0", ns)
    step = r.step("m-0", ns)
    assert step.changed and step.done and "let go" in step.message
    assert store.list("Metal3Remediation", ns) == []
    assert bmo.cycles == 2  # deleting powered nothing


def test_deleting_while_off_powers_the_host_back_on(store, wkube):
    ns, node, _rem = make_world(store, wkube)
    bmo, clock = Bmo(wkube, node), Clock()
    r = remediator(store, wkube, bmo, clock, fencing="taint")
    for _ in range(20):
        r.step("m-0", ns)
        if store.get("Metal3Remediation", "m-0", ns)["status"].get("phase") == "Waiting":
            break
    store.delete("Metal3Remediation", "m-0", ns)
    for _ in range(10):
        step = r.step("m-0", ns)
        bmo.reconcile(store, (ns, "host-0"))  # BMO acts on the annotation gone
        if step.done:
            break
    assert store.list("Metal3Remediation", ns) == []
    host = store.get("BareMetalHost", "host-0", ns)
    assert not [k for k in host["metadata"].get("annotations", {}) if k.startswith("reboot.metal3.io")]
    assert host["status"]["poweredOn"] is True and bmo.history == [False, True]
    assert OOS not in [t["key"] for t in wkube.get_node(node)["spec"].get("taints") or []]
