"""A Metal3 cluster (1 control plane, a MachineDeployment of 2) in a sqlite store, brought as far as the engine's
own steps take it without a workload API, for the cluster_info tests.

The Metal3Machine steps (host choice, claim, host spec) and the Machine reconcile are the engine's; what runs
elsewhere in real life is played: baremetal-operator provisioning the host (``play_bmo_provisioned``), and the
workload cluster's kubelet registering its Node (``WorkloadAPI``, the Nodes a kube-apiserver would list), which
the Metal3Machine's providerID step (metal3/provider_id.py) then finds and copies (``play_provider_id``).
With ``stuck=True`` the second worker's hostSelector matches no host: its step finds none and says why in
AssociateBareMetalHost, as it does on a real run.
"""

from __future__ import annotations

import copy
import datetime

from capi_objects import bmh, bootstrap_secret, cluster, machine, metal3_cluster, metal3_machine, put

from ansible_collections.baremetal.capi.plugins.module_utils.capi import describe_text, machineset, refs
from ansible_collections.baremetal.capi.plugins.module_utils.capi import machine as capi_machine
from ansible_collections.baremetal.capi.plugins.module_utils.errors import NoHostAvailable
from ansible_collections.baremetal.capi.plugins.module_utils.hosts import drivers
from ansible_collections.baremetal.capi.plugins.module_utils.metal3 import provider_id
from ansible_collections.baremetal.capi.plugins.module_utils.metal3.machine import MachineManager
from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions, meta, names

NS = "demo"
CP = "c1-cp-x7k2p"
WORKERS = ("c1-md-0-5d8f9-abcde", "c1-md-0-5d8f9-fghij")
T0 = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
NOW = T0 + datetime.timedelta(hours=4)  # "4h" in SINCE, whatever second of T0 a step wrote
SECRET_TEXT = "bmc-password-never-shown"


def clock():
    return T0


class WorkloadAPI:
    """The workload kube-apiserver's Nodes, as the Machine reconcile reads and patches them."""

    def __init__(self, nodes: list[dict]):
        self.nodes = {meta.name(n): n for n in nodes}

    def list_nodes(self, label_selector=None):
        return [copy.deepcopy(n) for n in self.nodes.values()]

    def patch_node(self, name, patch, resource_version=None):
        node = self.nodes[name]
        for key in ("labels", "annotations"):
            for k, v in ((patch.get("metadata") or {}).get(key) or {}).items():
                target = node["metadata"].setdefault(key, {})
                target.pop(k, None) if v is None else target.__setitem__(k, v)
        if "taints" in (patch.get("spec") or {}):
            node["spec"]["taints"] = patch["spec"]["taints"]
        return copy.deepcopy(node)


def _owned(obj: dict, owner: dict) -> dict:
    obj["metadata"]["ownerReferences"] = [meta.owner_reference(owner, controller=True)]
    return obj


def _topology(store) -> tuple[dict, dict, dict]:
    kcp = store.create(
        {
            "apiVersion": "controlplane.cluster.x-k8s.io/v1beta2",
            "kind": "KubeadmControlPlane",
            "metadata": {"name": "c1-cp", "namespace": NS, "labels": {names.CLUSTER_NAME_LABEL: "c1"}},
            "spec": {"replicas": 1, "version": "v1.34.1"},
        }
    )
    md = store.create(
        {
            "apiVersion": "cluster.x-k8s.io/v1beta2",
            "kind": "MachineDeployment",
            "metadata": {"name": "c1-md-0", "namespace": NS, "labels": {names.CLUSTER_NAME_LABEL: "c1"}},
            "spec": {"clusterName": "c1", "replicas": 2},
        }
    )
    ms = {
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "MachineSet",
        "metadata": {"name": "c1-md-0-5d8f9", "namespace": NS, "labels": {names.CLUSTER_NAME_LABEL: "c1"}},
        "spec": {"clusterName": "c1", "replicas": 2},
    }
    return kcp, md, store.create(_owned(ms, md))


def build(store, stuck: bool = False) -> None:
    """The objects, then every machine converged as far as it goes (the stuck one stops at its host)."""
    put(store, cluster("c1", NS, cp_ref={"apiGroup": "controlplane.cluster.x-k8s.io", "kind": "KubeadmControlPlane",
                                          "name": "c1-cp"}))  # fmt: skip
    m3c = put(store, metal3_cluster("c1", NS, port=6443))
    m3c["status"] = {"initialization": {"provisioned": True}}
    conditions.set_condition(m3c, names.READY, True, names.READY_REASON, clock=clock)
    store.update_status(m3c)
    put(store, bootstrap_secret("bootstrap", NS))
    kcp, md, ms = _topology(store)
    for name, slot in (("h-cp-0", "cp"), ("h-w-0", "w0"), ("h-w-1", "w1")):  # one host per machine: no dice
        put(store, bmh(name, NS, labels={"slot": slot}))
        store.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": f"{name}-bmc", "namespace": NS},
                      "stringData": {"username": "admin", "password": SECRET_TEXT}})  # fmt: skip
    put(store, _owned(machine(CP, "c1", NS, control_plane=True), kcp))
    put(store, metal3_machine(CP, NS, host_selector={"matchLabels": {"slot": "cp"}}))
    labels = {names.SET_NAME_LABEL: meta.name(ms), names.DEPLOYMENT_NAME_LABEL: meta.name(md)}
    for i, name in enumerate(WORKERS):
        put(store, _owned(machine(name, "c1", NS, labels=labels), ms))
        selector = {"rack": "r9"} if stuck and i == 1 else {"slot": f"w{i}"}
        put(store, metal3_machine(name, NS, host_selector={"matchLabels": selector}))
    nodes = []
    mgr = MachineManager(
        store, drivers.get_driver("external", {"poll": 0.1}), clock=clock, no_host_requeue=0.2, wait_for="provisioned"
    )
    for name in (CP, *WORKERS):
        try:
            mgr.step(name, NS)  # choose and claim a host
        except NoHostAvailable:
            capi_machine.reconcile(store, store.get("Machine", name, NS), clock=clock)
            continue
        host = meta.annotations(store.get("Metal3Machine", name, NS))[names.HOST_ANNOTATION].split("/")[-1]
        play_bmo_provisioned(store, host)
        assert mgr.step(name, NS).done  # the host spec, the host provisioned; then the Node step
        nodes.append(play_provider_id(store, name, host))
    workload = WorkloadAPI(nodes)
    for name in (CP, *WORKERS):
        capi_machine.reconcile(store, store.get("Machine", name, NS), workload=workload, clock=clock)
    _statuses(store, kcp, md, ms)


def play_bmo_provisioned(store, name: str) -> dict:
    host = store.get("BareMetalHost", name, NS)
    host["status"].update(
        provisioning={"state": "provisioned", "image": dict(host["spec"]["image"]), "ID": f"id-{name}"},
        poweredOn=True,
        operationalStatus="OK",
        lastUpdated=conditions.now_rfc3339(clock),
        hardware={"nics": [{"name": "enp1s0", "mac": "52:54:00:aa:bb:01", "ip": "192.0.2.31"}], "hostname": name},
    )
    return store.update_status(host)


def play_provider_id(store, name: str, host: str) -> dict:
    """The kubelet registers the Node; the Metal3Machine's step finds it and copies its providerID (CAPM3)."""
    pid = provider_id.provider_id(NS, host, name)
    uid = store.get("BareMetalHost", host, NS)["metadata"]["uid"]
    m3m = store.get("Metal3Machine", name, NS)
    after = copy.deepcopy(m3m)
    after["spec"]["providerID"] = pid
    after["status"].setdefault("initialization", {})["provisioned"] = True
    conditions.set_condition(after, names.READY, True, names.READY_REASON, clock=clock)
    refs.write(store, m3m, after)
    ready = {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": host, "labels": {names.METAL3_UUID_NODE_LABEL: uid}, "resourceVersion": "1"},
        "spec": {"providerID": pid},
        "status": {"conditions": [ready], "nodeInfo": {"kubeletVersion": "v1.34.1"}},
    }


def _statuses(store, kcp: dict, md: dict, ms: dict) -> None:
    """The replica counters KCP and the MachineSet controller write (their own counting rules)."""
    cp = [store.get("Machine", CP, NS)]
    kcp = store.get("KubeadmControlPlane", meta.name(kcp), NS)
    kcp["status"] = {
        "replicas": 1,
        "readyReplicas": sum(1 for m in cp if conditions.is_true(m, names.READY)),
        "upToDateReplicas": 1,
    }
    store.update_status(kcp)
    workers = [store.get("Machine", n, NS) for n in WORKERS]
    counts = machineset.counts(workers, 0, NOW, up_to_date=True)
    for kind, name in (("MachineSet", meta.name(ms)), ("MachineDeployment", meta.name(md))):
        obj = store.get(kind, name, NS)
        obj["status"] = dict(counts)
        store.update_status(obj)


def cells(lines: list[str]) -> list[tuple]:
    """Each line cut at the header's column starts: the cells must sit under their headings."""
    header = lines[0]
    starts = [header.index(h) for h in describe_text.HEADER]
    assert starts == sorted(starts) and starts[0] == 0
    out = []
    for line in lines[1:]:
        for start in starts[1:]:  # a cell never runs into the next column
            assert len(line) <= start or line[start - 2 : start] == "  ", (line, start)
        bounds = list(zip(starts, starts[1:] + [None], strict=True))
        row = tuple(line[a:b].strip() for a, b in bounds)
        out.append((line[: starts[1]].rstrip(), *row[1:]))  # the name keeps its tree prefix
    return out
