# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The MachineHealthCheck controller: judge its targets, then remediate or short-circuit (cluster-api
internal/controllers/machinehealthcheck/machinehealthcheck_controller.go reconcile).

One ``reconcile`` of a MachineHealthCheck (upstream ``internal/controllers/machinehealthcheck``):

1. its targets (``health.check``: the rule in ``spec.checks``) get ``HealthCheckSucceeded`` True, or False
   with the rule's reason (UnhealthyNode, NodeStartupTimeout, NodeDeleted, HasRemediateAnnotation,
   UnhealthyMachine) and ``Health check failed: ...``;
2. ``spec.remediation.triggerIf`` (``unhealthyLessThanOrEqualTo`` / ``unhealthyInRange``) decides: when it does
   not hold, nothing is remediated and the MachineHealthCheck says why (``RemediationAllowed`` False,
   ``TooManyUnhealthy``); ``status.remediationsAllowed`` is what is left of the budget;
3. otherwise each unhealthy Machine is handed on: with ``spec.remediation.templateRef`` its remediation is
   cloned from the template, named like the Machine and owned by it (a Metal3Remediation / MaasRemediation
   the reboot flow then runs), and the Machine gets ``ExternallyRemediated`` False; without one the Machine
   gets ``OwnerRemediated`` False / ``WaitingForRemediation`` and its owner acts: a MachineSet deletes and
   replaces it (within the MachineDeployment's maxInFlight, capi/machineset.py), a KubeadmControlPlane
   decides through its own remediation guards;
4. a target healthy again loses its ``OwnerRemediated`` condition (a later failure starts afresh).
"""

from __future__ import annotations

import copy

from ansible_collections.baremetal.capi.plugins.module_utils.capi import refs
from ansible_collections.baremetal.capi.plugins.module_utils.errors import CapiError, Invalid, StoreUnavailable
from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions, meta, names
from ansible_collections.baremetal.capi.plugins.module_utils.remediation import common, health

REMEDIATION_ALLOWED = "RemediationAllowed"
REMEDIATION_ALLOWED_REASON = "RemediationAllowed"
TOO_MANY_UNHEALTHY_REASON = "TooManyUnhealthy"
HEALTH_CHECK_SUCCEEDED_REASON = "HealthCheckSucceeded"
WAITING_FOR_REMEDIATION_REASON = "WaitingForRemediation"
EXTERNALLY_REMEDIATED = "ExternallyRemediated"
REMEDIATION_TEMPLATE_NOT_FOUND_REASON = "RemediationTemplateNotFound"

# The remediation kinds the collection runs (the reboot flow), by their template kind.
REMEDIATION_KINDS = {"Metal3RemediationTemplate": "Metal3Remediation", "MaasRemediationTemplate": "MaasRemediation"}


def template_ref(mhc: dict) -> dict | None:
    spec = mhc.get("spec") or {}
    ref = (spec.get("remediation") or {}).get("templateRef") or spec.get("remediationTemplate")
    return ref or None


def _limit(mhc: dict, total: int) -> int | None:
    spec = mhc.get("spec") or {}
    trigger = (spec.get("remediation") or {}).get("triggerIf") or {}
    raw = trigger.get("unhealthyLessThanOrEqualTo", spec.get("maxUnhealthy"))
    if raw is None:
        return None
    text = str(raw)
    return int(total * int(text[:-1]) / 100) if text.endswith("%") else int(text)


def _set(store, machine: dict, ctype: str, status, reason: str, message: str, check: bool, clock=None) -> bool:
    after = copy.deepcopy(machine)
    if not conditions.set_condition(after, ctype, status, reason, message, clock=clock):
        return False
    if not check:
        machine.update(store.update_status(after))
    return True


def _request(store, mhc: dict, machine: dict, ref: dict, check: bool) -> tuple[bool, str]:
    """The external remediation request for ``machine`` from the template (created once)."""
    from ansible_collections.baremetal.capi.plugins.module_utils.remediation import reboot

    kind = REMEDIATION_KINDS.get(ref.get("kind") or "")
    if kind is None:
        raise Invalid(
            f"remediation template kind {ref.get('kind')!r} is not one the collection runs "
            f"({', '.join(REMEDIATION_KINDS)})",
            obj=meta.ref(mhc),
            field="spec.remediation.templateRef.kind",
        )
    template = refs.get_or_none(store, ref["kind"], ref.get("name") or "", meta.namespace(mhc))
    if template is None:
        return False, f"{ref['kind']} {meta.namespace(mhc)}/{ref.get('name')} not found"
    _obj, created = reboot.ensure(store, kind, machine, template=template, check=check)
    return created, ""


def reconcile(
    store,
    mhc: dict,
    *,
    workload=None,
    workload_kubeconfig=None,
    nodes: dict | None = None,
    clock=None,
    check: bool = False,
) -> dict:
    """One MachineHealthCheck reconcile; what it found and did (see the module docstring)."""
    ns = meta.namespace(mhc)
    now = common.now(clock)
    kwargs = health.from_health_check(mhc)
    if not kwargs.get("cluster"):
        raise Invalid("clusterName is required", obj=meta.ref(mhc), field="spec.clusterName")
    results = health.check(
        store, ns, workload=workload, workload_kubeconfig=workload_kubeconfig, nodes=nodes, now=now, **kwargs
    )
    targets = [r for r in results if r["skipped"] not in ("skip-remediation", "paused")]
    judged = [r for r in targets if not r["skipped"]]
    unhealthy = [r for r in judged if not r["healthy"]]
    changed = False
    machines = {meta.name(m): m for m in store.list("Machine", ns) if meta.name(m) in {r["machine"] for r in judged}}
    for r in judged:
        m = machines[r["machine"]]
        if r["healthy"]:
            changed |= _set(
                store, m, names.HEALTH_CHECK_SUCCEEDED, True, HEALTH_CHECK_SUCCEEDED_REASON, "", check, clock
            )
        else:
            changed |= _set(
                store,
                m,
                names.HEALTH_CHECK_SUCCEEDED,
                False,
                r["reason"],
                f"Health check failed: {r['message']}",
                check,
                clock,
            )
    allowed, why = health.remediation_allowed(mhc, targets)
    limit = _limit(mhc, len(targets))
    out = {
        "cluster": kwargs["cluster"],
        "machines": results,
        "unhealthy": unhealthy if allowed else [],
        "remediation_allowed": allowed,
        "owner_remediated": [],
        "externally_remediated": [],
        "released": [],
    }
    if not allowed:
        out["remediation_blocked"] = why
    ref = template_ref(mhc)
    if ref:
        out["remediation_template"] = ref.get("name")
    if allowed:
        for r in unhealthy:
            m = machines[r["machine"]]
            if meta.is_deleting(m):
                continue
            if ref:
                created, missing = _request(store, mhc, m, ref, check)
                if missing:
                    changed |= _set(
                        store, m, EXTERNALLY_REMEDIATED, False, REMEDIATION_TEMPLATE_NOT_FOUND_REASON, missing, check
                    )
                    out.setdefault("errors", []).append(f"{r['machine']}: {missing}")
                    continue
                changed |= created
                changed |= _set(
                    store,
                    m,
                    EXTERNALLY_REMEDIATED,
                    False,
                    WAITING_FOR_REMEDIATION_REASON,
                    "Waiting for remediation",
                    check,
                    clock,
                )
                out["externally_remediated"].append(r["machine"])
            else:
                cond = conditions.get(m, names.OWNER_REMEDIATED)
                # the owner's own reasons (MachineDeleting, RemediationDeferred) are not overwritten
                if cond is None or cond.get("status") != conditions.FALSE:
                    changed |= _set(
                        store,
                        m,
                        names.OWNER_REMEDIATED,
                        False,
                        WAITING_FOR_REMEDIATION_REASON,
                        "Waiting for remediation",
                        check,
                        clock,
                    )
                out["owner_remediated"].append(r["machine"])
    for r in judged:
        m = machines[r["machine"]]
        if r["healthy"] and not meta.is_deleting(m) and conditions.get(m, names.OWNER_REMEDIATED) is not None:
            after = copy.deepcopy(m)
            conditions.delete(after, names.OWNER_REMEDIATED)
            if not check:
                store.update_status(after)
            changed = True
            out["released"].append(r["machine"])
    status = {
        "expectedMachines": len(targets),
        "currentHealthy": sum(1 for r in judged if r["healthy"]),
        "remediationsAllowed": max(0, (len(targets) if limit is None else limit) - len(unhealthy)) if allowed else 0,
        "targets": sorted(r["machine"] for r in targets),
    }
    changed |= _write_status(store, mhc, status, allowed, why, check, clock)
    out["changed"] = changed
    out["status"] = status
    return out


def _write_status(store, mhc: dict, status: dict, allowed: bool, why: str, check: bool, clock=None) -> bool:
    if not mhc["metadata"].get("uid"):
        return False
    fresh = store.get("MachineHealthCheck", meta.name(mhc), meta.namespace(mhc))
    after = copy.deepcopy(fresh)
    after.setdefault("status", {}).update(status, observedGeneration=fresh["metadata"].get("generation"))
    conditions.set_condition(
        after,
        REMEDIATION_ALLOWED,
        allowed,
        REMEDIATION_ALLOWED_REASON if allowed else TOO_MANY_UNHEALTHY_REASON,
        "" if allowed else why,
        clock=clock,
    )
    if after == fresh:
        return False
    if not check:
        store.update_status(after)
    return True


def reconcile_cluster(store, cluster: dict, *, workload=None, nodes=None, clock=None, check: bool = False) -> bool:
    """Every MachineHealthCheck of ``cluster`` (the converge loop's cluster item runs them); True if anything changed.

    Only what needs no host driver happens here: conditions, owner remediation, remediation requests.
    """
    changed = False
    try:
        checks = store.list("MachineHealthCheck", meta.namespace(cluster))
    except StoreUnavailable:
        return False  # a management cluster without the MachineHealthCheck CRD holds none
    for mhc in checks:
        if (mhc.get("spec") or {}).get("clusterName") != meta.name(cluster) or meta.is_deleting(mhc):
            continue
        if refs.is_paused(cluster, mhc):
            continue
        try:
            changed |= reconcile(store, mhc, workload=workload, nodes=nodes, clock=clock, check=check)["changed"]
        except Invalid:
            raise
        except CapiError:
            continue  # the workload API is not answering: nothing is judged this step (as upstream)
    return changed
