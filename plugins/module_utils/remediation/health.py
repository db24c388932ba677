# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The MachineHealthCheck rule: which Machines need remediation (cluster-api
internal/controllers/machinehealthcheck/machinehealthcheck_targets.go needsRemediation).

A target Machine (matching the selector, with the cluster-name label) is unhealthy when

* it has the annotation ``cluster.x-k8s.io/remediate-machine``            -> HasRemediateAnnotation
* its Node was deleted (nodeRef set, Node gone)                          -> NodeDeleted
* it has no Node ``nodeStartupTimeoutSeconds`` after the latest of its creation, the Cluster's
  InfrastructureReady / ControlPlaneInitialized and its own InfrastructureReady (0 disables) -> NodeStartupTimeout
* a Node condition of ``unhealthyNodeConditions`` ({type, status, timeoutSeconds}, ORed; by default
  Ready=False and Ready=Unknown) has held longer than its timeout             -> UnhealthyNode

Machines with ``cluster.x-k8s.io/skip-remediation`` or paused (annotation or Cluster) are skipped, as are
machines being deleted; workers are not judged while the Cluster says its control plane is not initialized.

Pure over dicts: ``evaluate`` takes the Machine, its Node (or None), its Cluster and the time.
"""

from __future__ import annotations

import datetime

from ansible_collections.baremetal.capi.plugins.module_utils.capi import refs
from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions, convert, meta, names
from ansible_collections.baremetal.capi.plugins.module_utils.remediation import common

HAS_REMEDIATE_ANNOTATION = "HasRemediateAnnotation"
NODE_DELETED = "NodeDeleted"
NODE_STARTUP_TIMEOUT = "NodeStartupTimeout"
UNHEALTHY_NODE = "UnhealthyNode"
UNHEALTHY_MACHINE = "UnhealthyMachine"
CONTROL_PLANE_INITIALIZED = "ControlPlaneInitialized"
DEFAULT_NODE_STARTUP_TIMEOUT = 600  # the MachineHealthCheck webhook's default


def default_conditions(timeout: int) -> list[dict]:
    return [
        {"type": "Ready", "status": "False", "timeoutSeconds": timeout},
        {"type": "Ready", "status": "Unknown", "timeoutSeconds": timeout},
    ]


def _cond_time(obj: dict | None, ctype: str) -> datetime.datetime | None:
    cond = conditions.get(obj or {}, ctype)
    if cond is None or cond.get("status") != conditions.TRUE:
        return None
    return common.parse_time(cond.get("lastTransitionTime"))


def _held_too_long(conds, rules: list[dict], now: datetime.datetime) -> str | None:
    """The first condition matching a rule {type, status, timeoutSeconds} for longer than its timeout."""
    for cond in conds or []:
        for rule in rules:
            if cond.get("type") != rule["type"] or cond.get("status") != rule["status"]:
                continue
            timeout = int(rule.get("timeoutSeconds") or 0)
            since = common.parse_time(cond.get("lastTransitionTime"))
            if since is None:
                return f"condition {rule['type']}={rule['status']} (since an unknown time)"
            held = (now - since).total_seconds()
            if held > timeout:
                return f"condition {rule['type']}={rule['status']} for {held:.0f}s (timeout {timeout}s)"
    return None


def skip_reason(machine: dict, cluster: dict | None) -> str | None:
    ann = meta.annotations(machine)
    if common.SKIP_REMEDIATION_ANNOTATION in ann:
        return "skip-remediation"
    if refs.is_paused(cluster, machine):
        return "paused"
    if meta.is_deleting(machine):
        return "deleting"
    if names.CONTROL_PLANE_LABEL not in meta.labels(machine) and cluster is not None:
        cond = conditions.get(cluster, CONTROL_PLANE_INITIALIZED)
        if cond is not None and cond.get("status") != conditions.TRUE:
            return "control plane not initialized"
    return None


def evaluate(
    machine: dict,
    node: dict | None,
    cluster: dict | None,
    *,
    now: datetime.datetime,
    unhealthy_conditions: list[dict],
    node_startup_timeout: int = DEFAULT_NODE_STARTUP_TIMEOUT,
    machine_conditions: list[dict] | None = None,
) -> dict:
    """{machine, node, healthy, skipped, reason, message} for one Machine."""
    out = {"machine": meta.name(machine), "node": None, "healthy": True, "skipped": None, "reason": "", "message": ""}
    node_ref = ((machine.get("status") or {}).get("nodeRef") or {}).get("name")
    out["node"] = node_ref

    def bad(reason: str, message: str) -> dict:
        out.update(healthy=False, reason=reason, message=message)
        return out

    skipped = skip_reason(machine, cluster)
    if skipped:
        out["skipped"] = skipped
        return out
    if names.REMEDIATE_MACHINE_ANNOTATION in meta.annotations(machine):
        return bad(HAS_REMEDIATE_ANNOTATION, f"annotation {names.REMEDIATE_MACHINE_ANNOTATION}")
    held = _held_too_long((machine.get("status") or {}).get("conditions"), machine_conditions or [], now)
    if held and node is None:
        return bad(UNHEALTHY_MACHINE, f"Machine {meta.name(machine)}: {held}")
    if node_ref and node is None:
        return bad(NODE_DELETED, f"Node {node_ref} has been deleted")
    if node is None:
        if not node_startup_timeout:
            return out
        starts = [common.parse_time(machine["metadata"].get("creationTimestamp"))]
        starts += [_cond_time(cluster, names.INFRASTRUCTURE_READY), _cond_time(cluster, CONTROL_PLANE_INITIALIZED)]
        starts.append(_cond_time(machine, names.INFRASTRUCTURE_READY))
        start = max((s for s in starts if s is not None), default=None)
        if start is not None and now - start > datetime.timedelta(seconds=node_startup_timeout):
            return bad(NODE_STARTUP_TIMEOUT, f"no Node after {node_startup_timeout}s")
        return out
    out["node"] = meta.name(node)
    held = _held_too_long((node.get("status") or {}).get("conditions"), unhealthy_conditions, now)
    if held:
        return bad(UNHEALTHY_NODE, f"Node {meta.name(node)}: {held}")
    held = _held_too_long((machine.get("status") or {}).get("conditions"), machine_conditions or [], now)
    if held:
        return bad(UNHEALTHY_MACHINE, f"Machine {meta.name(machine)}: {held}")
    return out


def check(
    store,
    ns: str,
    *,
    cluster: str | None = None,
    selector=None,
    names_=None,
    workload=None,
    workload_kubeconfig=None,
    now: datetime.datetime | None = None,
    unhealthy_conditions: list[dict] | None = None,
    unhealthy_timeout: int = 300,
    node_startup_timeout: int = DEFAULT_NODE_STARTUP_TIMEOUT,
    machine_conditions: list[dict] | None = None,
    nodes: dict | None = None,
) -> list[dict]:
    """Evaluate the Machines of a namespace (of one cluster, matching ``selector``, or named in ``names_``).

    Each workload cluster's Nodes are listed once (``nodes``, {name: Node}, when the caller has them).  A
    workload API that cannot be reached skips its machines (MachineHealthCheck does not judge what it
    cannot see).
    """
    from ansible_collections.baremetal.capi.plugins.module_utils.capi import workload as wl
    from ansible_collections.baremetal.capi.plugins.module_utils.errors import NotFound, Requeue

    sel = selector
    if cluster:
        extra = f"{names.CLUSTER_NAME_LABEL}={cluster}"
        sel = f"{sel},{extra}" if isinstance(sel, str) and sel else (extra if not sel else sel)
    machines = [m for m in store.list("Machine", ns, sel) if names.CLUSTER_NAME_LABEL in meta.labels(m)]
    if cluster and not isinstance(sel, str):
        machines = [m for m in machines if m["spec"].get("clusterName") == cluster]
    if names_:
        machines = [m for m in machines if meta.name(m) in names_]
    now = now or common.now()
    rules = unhealthy_conditions or default_conditions(unhealthy_timeout)
    nodes_of: dict[str, dict | str] = {}
    out = []
    for machine in machines:
        cname = machine["spec"]["clusterName"]
        cl = refs.get_or_none(store, "Cluster", cname, ns)
        if cname not in nodes_of and nodes is not None:
            nodes_of[cname] = nodes
        if cname not in nodes_of:
            try:
                client = workload or wl.client_for(store, cname, ns, workload_kubeconfig)
                nodes_of[cname] = {meta.name(n): n for n in client.list_nodes()}
            except (NotFound, Requeue) as exc:
                nodes_of[cname] = f"workload API of {cname} not reachable: {exc}"
        nodes = nodes_of[cname]
        if isinstance(nodes, str):
            # only what needs no Node: skip reasons and the remediate-machine annotation
            bare = {**machine, "status": {k: v for k, v in (machine.get("status") or {}).items() if k != "nodeRef"}}
            res = evaluate(bare, None, cl, now=now, unhealthy_conditions=rules, node_startup_timeout=0)
            if res["healthy"] and not res["skipped"]:
                res.update(skipped="unreachable", message=nodes)
            res["cluster"] = cname
            out.append(res)
            continue
        node_ref = ((machine.get("status") or {}).get("nodeRef") or {}).get("name")
        res = evaluate(
            machine,
            nodes.get(node_ref) if node_ref else None,
            cl,
            now=now,
            unhealthy_conditions=rules,
            node_startup_timeout=node_startup_timeout,
            machine_conditions=machine_conditions,
        )
        res["cluster"] = cname
        out.append(res)
    return out


# -- a MachineHealthCheck object --------------------------------------------------------------------------------


def from_health_check(mhc: dict) -> dict:
    """``check`` keyword arguments from a MachineHealthCheck (v1beta2 ``spec.checks``; v1beta1 fields accepted)."""
    spec = mhc.get("spec") or {}
    checks = spec.get("checks") or {}
    startup = checks.get("nodeStartupTimeoutSeconds")
    if startup is None and spec.get("nodeStartupTimeout"):  # v1beta1: a duration such as "10m"
        startup = convert.duration_seconds(spec["nodeStartupTimeout"], meta.ref(mhc), "spec.nodeStartupTimeout")
    node_rules = checks.get("unhealthyNodeConditions")
    if node_rules is None and spec.get("unhealthyConditions"):  # v1beta1: timeout as a duration
        node_rules = [
            {
                "type": c["type"],
                "status": c["status"],
                "timeoutSeconds": convert.duration_seconds(
                    c.get("timeout") or 0, meta.ref(mhc), "spec.unhealthyConditions.timeout"
                ),
            }
            for c in spec["unhealthyConditions"]
        ]
    return {
        "cluster": spec.get("clusterName"),
        "selector": spec.get("selector") or None,
        "unhealthy_conditions": node_rules,
        "machine_conditions": checks.get("unhealthyMachineConditions") or None,
        "node_startup_timeout": DEFAULT_NODE_STARTUP_TIMEOUT if startup is None else int(startup),
    }


def remediation_allowed(mhc: dict, results: list[dict]) -> tuple[bool, str]:
    """``spec.remediation.triggerIf``: unhealthyLessThanOrEqualTo (count or percent of the targets, default
    100%) and unhealthyInRange ("[a-b]"); MachineHealthCheck remediates nothing when they do not hold."""
    trigger = ((mhc.get("spec") or {}).get("remediation") or {}).get("triggerIf") or {}
    spec = mhc.get("spec") or {}
    max_unhealthy = trigger.get("unhealthyLessThanOrEqualTo", spec.get("maxUnhealthy"))
    in_range = trigger.get("unhealthyInRange", spec.get("unhealthyRange"))
    total = len(results)
    unhealthy = sum(1 for r in results if not r["healthy"])
    if in_range:
        import re

        m = re.fullmatch(r"\[(\d+)-(\d+)\]", str(in_range).strip())
        if not m:
            raise Invalid(f"unhealthyInRange {in_range!r} is not [a-b]", obj=meta.ref(mhc), field="spec.remediation")
        low, high = int(m.group(1)), int(m.group(2))
        if not low <= unhealthy <= high:
            # upstream RemediationAllowed=False, TooManyUnhealthy
            return False, (
                "Remediation is not allowed, the number of not started or unhealthy machines does not fall "
                f"within the range (total: {total}, unhealthy: {unhealthy}, unhealthyInRange: {in_range})"
            )
        return True, ""
    if max_unhealthy is None:
        return True, ""
    text = str(max_unhealthy)
    limit = int(total * int(text[:-1]) / 100) if text.endswith("%") else int(text)
    if unhealthy > limit:
        return False, (
            "Remediation is not allowed, the number of not started or unhealthy machines exceeds "
            f"unhealthyLessThanOrEqualTo (total: {total}, unhealthy: {unhealthy}, "
            f"unhealthyLessThanOrEqualTo: {max_unhealthy})"
        )
    return True, ""
