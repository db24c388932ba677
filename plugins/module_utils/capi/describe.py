# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A cluster's objects as a tree with their conditions, as ``clusterctl describe cluster`` prints it.

Upstream: cluster-api ``cmd/clusterctl/client/tree/discovery.go`` decides which objects go under which
parent (Cluster -> ClusterInfrastructure, ControlPlane -> its Machines, Workers -> MachineDeployments ->
MachineSets -> Machines, Other for Machines nobody controls; under a Machine its MachineInfrastructure and
BootstrapConfig), ``internal/util/tree/tree.go`` prints the v1beta2 table (NAME, REPLICAS, AVAILABLE, READY,
UP TO DATE, STATUS, REASON, SINCE, MESSAGE), replica counters as there.

Where this differs, on purpose:

- the tree goes one level further, to what a machine runs on: the BareMetalHost of a Metal3Machine (its
  ``metal3.io/BareMetalHost`` annotation) and the MAAS machine of a MaasMachine (as the MaasMachine records it:
  the store is read, MAAS is not called);
- Machines are never grouped and MachineSets and infrastructure machines are always shown (``--grouping=false
  --show-machinesets --echo``): the point is which machine sits on which host;
- a line shows the object's *failing* condition when it has one (positive polarity and False, or negative
  polarity and True), else its summary condition (Available for Cluster, control plane and MachineDeployment,
  Ready for the rest, as upstream). STATUS names the condition (``Ready=False``) since it is not always the
  summary one. A BootstrapConfig is shown only when it fails.

``describe`` returns plain data (the tree); ``describe_text.render`` turns it into text lines. Secrets are never
read: a reference naming a Secret is not followed, and no object's spec or data is copied into the tree.
"""

from __future__ import annotations

from ansible_collections.baremetal.capi.plugins.module_utils.capi import machineset, refs
from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions, meta, names

_SUMMARY_AVAILABLE = ("Cluster", "KubeadmControlPlane", "MachineDeployment")
_FAILED_HOST = "error"


# --- the tree ----------------------------------------------------------------------


def describe(store, cluster_name: str, ns: str) -> dict:
    """The tree of Cluster ``ns/cluster_name``: nested dicts (see ``node``), children in print order."""
    cluster = refs.get_or_none(store, "Cluster", cluster_name, ns)
    if cluster is None:
        raise Invalid(f"Cluster {ns}/{cluster_name} not found", obj=f"Cluster {ns}/{cluster_name}", field="cluster")
    spec = cluster.get("spec") or {}
    root = node(cluster)
    _add(root, _referenced(store, spec.get("infrastructureRef"), ns, "ClusterInfrastructure")[1])
    machines = sorted(
        store.list("Machine", ns, {"matchLabels": {names.CLUSTER_NAME_LABEL: cluster_name}}), key=meta.name
    )
    placed: set[str] = set()

    def add_machine(parent: dict, machine: dict) -> None:
        placed.add(meta.name(machine))
        _add(parent, _machine_node(store, machine, ns))

    kcp_obj, kcp = _referenced(store, spec.get("controlPlaneRef"), ns, "ControlPlane")
    controllers = [kcp_obj] if kcp_obj is not None else []
    if kcp is not None:
        _add(root, kcp)
        for m in machines:
            if names.CONTROL_PLANE_LABEL in meta.labels(m):
                add_machine(kcp, m)
    workers = virtual("Workers")
    sets = [s for s in store.list("MachineSet", ns) if _of_cluster(s, cluster_name)]
    for md in sorted((d for d in store.list("MachineDeployment", ns) if _of_cluster(d, cluster_name)), key=meta.name):
        controllers.append(md)
        md_node = _add(workers, node(md))
        for ms in sorted((s for s in sets if _controlled_by(s, md)), key=meta.name):
            ms_node = _add(md_node, node(ms))
            for m in machines:
                if _controlled_by(m, ms):
                    add_machine(ms_node, m)
    rest = [m for m in machines if meta.name(m) not in placed]
    if rest:
        other = _add(workers, virtual("Other"))
        for m in rest:
            add_machine(other, m)
    if workers["children"]:
        _add(root, workers)
    _cluster_counters(root, controllers)
    return root


def node(obj: dict, meta_name: str | None = None) -> dict:
    """One object's line: kind, name, the condition it shows (and whether it fails), replica counters."""
    cond, failing = pick(obj)
    out = {
        "kind": obj.get("kind"),
        "name": meta.name(obj),
        "namespace": meta.namespace(obj),
        "metaName": meta_name,
        "deleting": meta.is_deleting(obj),
        "condition": _plain(cond),
        "failing": failing,
        "replicas": None,
        "available": None,
        "ready": None,
        "upToDate": None,
        "children": [],
    }
    out.update(_counters(obj))
    return out


def virtual(name: str, meta_name: str | None = None, kind: str | None = None, **fields) -> dict:
    """A line for something that is not a stored object (Workers, Other, a MAAS machine)."""
    out = node({"kind": kind, "metadata": {"name": name}}, meta_name)
    out.update(virtual=True, **fields)
    return out


def _add(parent: dict, child: dict | None) -> dict | None:
    if child is not None:
        parent["children"].append(child)
    return child


def _plain(cond: dict | None) -> dict | None:
    if cond is None:
        return None
    keys = ("type", "status", "reason", "message", "lastTransitionTime")
    return {k: cond.get(k) or "" for k in keys}


def _of_cluster(obj: dict, cluster_name: str) -> bool:
    spec = obj.get("spec") or {}
    return (spec.get("clusterName") or meta.labels(obj).get(names.CLUSTER_NAME_LABEL)) == cluster_name


def _controlled_by(obj: dict, owner: dict) -> bool:
    """util.IsControlledBy: the controller ownerReference names ``owner`` (its uid, when both have one)."""
    ref = refs.controller_owner(obj)
    if ref is None or ref.get("kind") != owner.get("kind") or ref.get("name") != meta.name(owner):
        return False
    uid = (owner.get("metadata") or {}).get("uid")
    return not (uid and ref.get("uid")) or ref["uid"] == uid


def _missing(kind: str, name: str, where: str, meta_name: str) -> dict:
    """A failing line for a referenced object that is not in the store."""
    cond = {"type": "Exists", "status": conditions.FALSE, "reason": "NotFound", "message": f"{kind} {where} not found"}
    return virtual(name, meta_name, kind=kind, condition=_plain(cond), failing=True)


def _referenced(store, ref: dict | None, ns: str, meta_name: str) -> tuple[dict | None, dict | None]:
    """(the object a reference names, its line); a failing line when it is missing. Secrets are not followed."""
    if not ref or not ref.get("name") or ref.get("kind") == "Secret":
        return None, None
    obj = refs.get_ref(store, ref, ns)
    if obj is None:
        return None, _missing(ref.get("kind"), ref["name"], f"{ref.get('namespace') or ns}/{ref['name']}", meta_name)
    return obj, node(obj, meta_name)


def _machine_node(store, machine: dict, ns: str) -> dict:
    out = node(machine)
    spec = machine.get("spec") or {}
    obj, infra = _referenced(store, spec.get("infrastructureRef"), ns, "MachineInfrastructure")
    _boot_obj, boot = _referenced(store, (spec.get("bootstrap") or {}).get("configRef"), ns, "BootstrapConfig")
    if boot is not None and boot["failing"]:  # upstream NoEcho: shown when it says something the Machine does not
        _add(out, boot)
    if infra is not None:
        _add(out, infra)
        if obj is not None and obj.get("kind") == "Metal3Machine":
            _add(infra, _host_node(store, obj))
        elif obj is not None and obj.get("kind") == "MaasMachine":
            _add(infra, _maas_node(obj))
    return out


def _host_node(store, m3m: dict) -> dict | None:
    """The Metal3Machine's BareMetalHost: BMO has no conditions, so its operationalStatus and error speak."""
    value = meta.annotations(m3m).get(names.HOST_ANNOTATION)
    if not value:
        return None
    ns = meta.namespace(m3m)
    host = refs.get_or_none(store, "BareMetalHost", value.split("/")[-1], ns)
    if host is None:
        return _missing("BareMetalHost", value.split("/")[-1], f"{ns}/{value.split('/')[-1]}", "Host")
    status = host.get("status") or {}
    operational = status.get("operationalStatus") or ""
    error = status.get("errorType") or ""
    cond = {
        "type": "operationalStatus",
        "status": operational or "-",
        "reason": error or (status.get("provisioning") or {}).get("state") or "",
        "message": status.get("errorMessage") or "",
        "lastTransitionTime": status.get("lastUpdated") or "",
    }
    out = node(host, "Host")
    out.update(condition=cond, failing=bool(error) or operational == _FAILED_HOST)
    return out


def _maas_node(mm: dict) -> dict | None:
    """The MAAS machine a MaasMachine holds, as it recorded it (spec.systemID, status.machineState)."""
    system_id = (mm.get("spec") or {}).get("systemID")
    if not system_id:
        return None
    status = mm.get("status") or {}
    state = status.get("machineState") or ""
    powered = status.get("machinePowered")
    cond = {
        "type": "machineState",
        "status": state or "-",
        "reason": "" if powered is None else ("PoweredOn" if powered else "PoweredOff"),
        "message": status.get("hostname") or "",
        "lastTransitionTime": "",
    }
    return virtual(system_id, "MAAS machine", condition=cond, failing=state in names.MAAS_STATES_FAILED)


# --- which condition a line shows ----------------------------------------------------


def _failing(cond: dict) -> bool:
    negative = cond.get("type") in names.NEGATIVE_POLARITY_CONDITIONS
    return cond.get("status") == (conditions.TRUE if negative else conditions.FALSE)


def pick(obj: dict) -> tuple[dict | None, bool]:
    """(the condition a line shows, whether it fails).

    A failing condition first, the most specific one: a failing condition other than the summary with a
    message (the Machine's InfrastructureReady says more than its Ready), else the failing summary, else any
    failing one; then the summary condition; then an Unknown one; then any True one.
    """
    conds = [c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type")]
    summary = names.AVAILABLE if obj.get("kind") in _SUMMARY_AVAILABLE else names.READY
    failing = [c for c in conds if _failing(c)]
    for chosen in (
        [c for c in failing if c["type"] != summary and c.get("message")],
        [c for c in failing if c["type"] == summary],
        failing,
    ):
        if chosen:
            return chosen[0], True
    negative = names.NEGATIVE_POLARITY_CONDITIONS
    for chosen in (
        [c for c in conds if c["type"] == summary],
        [c for c in conds if c.get("status") == conditions.UNKNOWN],
        [c for c in conds if c.get("status") == conditions.TRUE and c["type"] not in negative],
    ):
        if chosen:
            return chosen[0], False
    return None, False


# --- replica counters (upstream newRowDescriptor) --------------------------------------


def _num(value) -> str | None:
    return None if value is None else str(value)


def _counters(obj: dict) -> dict:
    kind, spec, status = obj.get("kind"), obj.get("spec") or {}, obj.get("status") or {}
    if kind == "Machine":
        # The Available condition when a controller wrote one, else its rule (a Ready Node; minReadySeconds is
        # the MachineSet's); UpToDate only when KCP or a MachineSet judged it.
        available = conditions.get(obj, names.AVAILABLE)
        up_to_date = conditions.get(obj, names.UP_TO_DATE)
        return {
            "replicas": "1",
            "available": "1"
            if (conditions.is_true(obj, names.AVAILABLE) if available else machineset.is_ready(obj))
            else "0",
            "ready": "1" if conditions.is_true(obj, names.READY) else "0",
            "upToDate": ("1" if up_to_date.get("status") == conditions.TRUE else "0") if up_to_date else None,
        }
    if kind not in ("KubeadmControlPlane", "MachineDeployment", "MachineSet") or spec.get("replicas") is None:
        return {}
    return {
        "replicas": f"{status.get('replicas') or 0}/{spec['replicas']}",
        "available": _num(status.get("availableReplicas")),
        "ready": _num(status.get("readyReplicas")),
        "upToDate": _num(status.get("upToDateReplicas")),
    }


def _cluster_counters(root: dict, controllers: list[dict]) -> None:
    """The Cluster's counters: its control plane's and its MachineDeployments' summed, as upstream's status has
    them (status.controlPlane + status.workers); a counter one of them does not report is left out."""
    desired = [(c.get("spec") or {}).get("replicas") for c in controllers]
    if not controllers or all(d is None for d in desired):
        return
    current = sum((c.get("status") or {}).get("replicas") or 0 for c in controllers)
    root["replicas"] = f"{current}/{sum(d or 0 for d in desired)}"
    for key, field in (
        ("available", "availableReplicas"),
        ("ready", "readyReplicas"),
        ("upToDate", "upToDateReplicas"),
    ):
        values = [(c.get("status") or {}).get(field) for c in controllers]
        if all(v is not None for v in values):  # a sum that leaves out a controller would read as a count
            root[key] = str(sum(values))
