"""MAAS remediation on the lab: the MAAS simulator powers machines off and on, the node simulator plays the Nodes.

A one control plane + two worker MAAS cluster through the modules (as tests/integration/maas does), then:

* ``w-0``: its kubelet is stopped; ``maas_remediation`` (ansible-playbook, delete fencing) powers the MAAS
  machine off and on through the MAAS API - seen in the simulator's power state - deletes the Node while the
  machine is off with its labels and annotations backed up, and restores them when the Node registers again
  (the test re-registers it as a rebooted kubelet would: the node simulator does not); it ends with the Node
  Ready.  Re-running changes nothing.
* ``w-1``: its kubelet never comes back.  The engine with an injected clock and the taint fencing: two power
  cycles (retryLimit 1), ``Deleting machine``, the machine tagged ``capi-unhealthy`` in MAAS, and allocation
  with ``not_tags`` passes it over once it is released.
"""

from __future__ import annotations

import datetime
import threading
import time

import pytest
import yaml
from kubernetes import client as k8s
from kubernetes import config as kconfig

from ansible_collections.baremetal.capi.plugins.module_utils.capi import workload as wl
from ansible_collections.baremetal.capi.plugins.module_utils.maas.client import Client, MaasConflict
from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions
from ansible_collections.baremetal.capi.plugins.module_utils.remediation import reboot
from ansible_collections.baremetal.capi.plugins.module_utils.remediation.targets import MaasTarget
from lab.nodesim import client as nodesim
from tests.integration import cni
from tests.integration.maas import objects
from tests.integration.nodesim import cabpk

from .conftest import PowerHistory, eventually, reregister

pytestmark = pytest.mark.timeout(1800)

NS = "default"
OOS = "node.kubernetes.io/out-of-service"


def _node(core, name):
    from kubernetes.client.exceptions import ApiException

    try:
        return core.api_client.sanitize_for_serialization(core.read_node(name))
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def _ready(node) -> str:
    return wl.node_ready(node) if node else "gone"


def test_maas_reboot_remediation(sim, play, store, tag, lab):
    cname = f"r{tag[1:7]}"
    cp_tags, w_tags = [f"{tag}cp"], [f"{tag}w"]
    (s0,) = sim.seed({"zone": "az-1", "tags": cp_tags, "cpu_count": 4, "memory": 8192}, tag=tag)
    s1, s2, spare = sim.seed(
        *({"zone": "az-1", "tags": w_tags, "cpu_count": 4, "memory": 8192} for _ in range(3)), tag=tag
    )
    for obj in objects.cluster(cname, NS, ["az-1"]):
        store.create(obj)
    r = play("maas_cluster", {"name": cname})
    assert not r.get("failed"), r
    endpoint = f"{r['dns_name']}:6443"
    ca, token = cabpk.new_cluster_ca(), cabpk.new_token()
    kubeconfig = objects.admin_kubeconfig(cname, f"{s0['ip']}:6443", ca)
    store.create(objects.secret(f"{cname}-kubeconfig", NS, cname, kubeconfig))
    specs = {
        "cp-0": ({"systemID": s0["system_id"]}, objects.init_data(cname, endpoint, ca), True),
        "w-0": ({"systemID": s1["system_id"]}, objects.join_data(endpoint, ca, token, control_plane=False), False),
        "w-1": ({"systemID": s2["system_id"]}, objects.join_data(endpoint, ca, token, control_plane=False), False),
    }
    for name, (spec, data, cp) in specs.items():
        store.create(objects.secret(f"{name}-bootstrap", NS, cname, data))
        for obj in objects.machine(
            name, NS, cname, control_plane=cp, spec={"image": "ubuntu/jammy", "tags": [tag], **spec}
        ):
            store.create(obj)
    r = play("maas_machine", {"name": "cp-0", "wait_timeout": 300})
    assert not r.get("failed"), r
    objects.create_token(kubeconfig, token)
    cni.apply(kubeconfig)  # the lab's Nodes are NotReady until a CNI runs
    r = play("maas_machine", {"cluster": cname, "wait_timeout": 300})
    assert not r.get("failed"), r
    core = k8s.CoreV1Api(kconfig.new_client_from_config_dict(yaml.safe_load(kubeconfig)))
    n0, n1 = (sim.machine(s["system_id"])["hostname"].lower() for s in (s1, s2))
    for n in (n0, n1):
        eventually(lambda n=n: _ready(_node(core, n)) == "True", f"Node {n} Ready")
    core.patch_node(n0, {"metadata": {"labels": {"team.example.com/owner": "ops"}, "annotations": {"note": "keep"}}})

    # --- w-0: the module reboots it; delete fencing, restored when the kubelet registers again ----------------
    old = _node(core, n0)
    nodesim.stop_kubelet(lab.cfg, n0)
    eventually(lambda: _ready(_node(core, n0)) == "Unknown", "w-0's Node Unknown")
    time.sleep(2)
    args = {
        "machines": ["w-0"],
        "fencing": "delete",
        "strategy": {"retryLimit": 1, "timeoutSeconds": 600},
        "workload_kubeconfig": kubeconfig,
        "wait_timeout": 600,
        "wait_sleep": 1,
    }
    preview = play("maas_remediation", args, check=True)
    assert not preview.get("failed") and preview["changed"], preview
    assert "would create" in preview["remediations"][0]["message"]
    assert store.list("MaasRemediation", NS) == [] and sim.machine(s1["system_id"])["power_state"] == "on"
    result = {}
    with PowerHistory(lambda: sim.machine(s1["system_id"])["power_state"]) as power:
        runner = threading.Thread(target=lambda: result.update(play("maas_remediation", args)))
        runner.start()
        eventually(lambda: power.offs() >= 1 or not runner.is_alive(), "w-0 powered off (MAAS)")
        eventually(lambda: _node(core, n0) is None or not runner.is_alive(), "w-0's Node deleted (fenced)")
        nodesim.start_kubelet(lab.cfg, n0)  # the reboot cures the kubelet
        eventually(lambda: power.values[-1:] == ["on"] or not runner.is_alive(), "w-0 back on (MAAS)")
        if _node(core, n0) is None:
            reregister(core, old)
        runner.join(timeout=600)
    assert not result.get("failed"), result
    assert result["changed"] and result["remediations"][0]["outcome"] == "remediated", result
    assert power.values == ["on", "off", "on"], power.values
    node = _node(core, n0)
    assert _ready(node) == "True"
    # restored from the backup: what the new Node lacked came back
    assert node["metadata"]["labels"]["team.example.com/owner"] == "ops"
    assert node["metadata"]["annotations"]["note"] == "keep"
    assert result["remediations"][0]["phase"] == "Waiting" and result["remediations"][0]["retryCount"] == 0
    # healthy again: the MaasRemediation is deleted, as MachineHealthCheck deletes it (its finalizer was let go)
    assert store.list("MaasRemediation", NS) == []
    assert not [
        k
        for k in store.get("MaasMachine", "w-0", NS)["metadata"].get("annotations", {})
        if k.startswith("reboot.metal3.io")
    ]
    again = play("maas_remediation", args)
    assert not again.get("failed") and again["changed"] is False, again
    assert sim.machine(s1["system_id"])["power_state"] == "on"

    # --- w-1: never back; injected clock, taint fencing ------------------------------------------------------
    nodesim.stop_kubelet(lab.cfg, n1)
    eventually(lambda: _ready(_node(core, n1)) == "Unknown", "w-1's Node Unknown")
    reboot.ensure(
        store,
        "MaasRemediation",
        store.get("Machine", "w-1", NS),
        strategy={"type": "Reboot", "retryLimit": 1, "timeoutSeconds": 100},
    )
    maas = lab.info["maas"]
    client = Client(maas["url"], maas["api_key"])
    clock_t = [datetime.datetime.now(datetime.UTC)]
    r = reboot.Remediator(
        store,
        MaasTarget(store, client),
        fencing_mode="taint",
        workload=wl.cached_client(kubeconfig),
        clock=lambda: clock_t[0],
        poll=0.5,
    )
    taint = PowerHistory(
        lambda: "tainted" if OOS in [t["key"] for t in (_node(core, n1)["spec"].get("taints") or [])] else "clear"
    )
    with PowerHistory(lambda: sim.machine(s2["system_id"])["power_state"]) as power_b, taint:
        deadline = time.monotonic() + 600
        while True:
            step = r.step("w-1", NS)
            if step.done:
                break
            if not step.changed and step.data.get("phase") == "Waiting" and step.data.get("power_state") == "on":
                clock_t[0] += datetime.timedelta(seconds=101)
            assert time.monotonic() < deadline, step.message
            time.sleep(0 if step.changed else 0.5)
        time.sleep(1)
    assert step.data["outcome"] == "Deleting machine", step.message
    assert power_b.values == ["on", "off", "on", "off", "on"], power_b.values
    assert "tainted" in taint.values and taint.values[-1] == "clear", taint.values
    rem = store.get("MaasRemediation", "w-1", NS)
    assert rem["status"]["retryCount"] == 1 and rem["status"]["phase"] == "Deleting machine"
    assert "capi-unhealthy" in sim.machine(s2["system_id"])["tags"]
    cond = conditions.get(store.get("Machine", "w-1", NS), "OwnerRemediated")
    assert (cond["status"], cond["reason"]) == ("False", "WaitingForRemediation")
    # once MAAS has it back, allocation with not_tags never picks it; without, it could
    client.release(s2["system_id"], force=True)
    eventually(lambda: sim.machine(s2["system_id"])["status_name"] == "Ready", "w-1's machine released")
    picked = set()
    for _ in range(6):
        try:
            m = client.allocate({"tags": [w_tags[0]], "not_tags": ["capi-unhealthy"]}, dry_run=True)
        except MaasConflict:
            pytest.fail("no machine for the workers' tag besides the unhealthy one")
        picked.add(m["system_id"])
    assert picked == {spare["system_id"]}
    with pytest.raises(MaasConflict):
        client.allocate(
            {"tags": [w_tags[0]], "not_tags": ["capi-unhealthy"], "system_id": s2["system_id"]}, dry_run=True
        )
