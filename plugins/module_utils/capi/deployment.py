# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""MachineDeployment -> MachineSet per template revision -> Machines, as Cluster API rolls them.

cluster-api ``internal/controllers/machinedeployment`` (rolling.go,
ondelete.go, sync.go, mdutil):

* a MachineSet per revision of the template (a hash of the rollout fields; the in-place fields
  ``minReadySeconds``, ``readinessGates``, ``deletion``, ``taints`` and the template metadata do not make
  one), and a new one when ``spec.rollout.after`` has passed since the current one was made;
* ``RollingUpdate`` (webhook default: maxSurge 1, maxUnavailable 0), ints or percentages of ``replicas``,
  surge rounded up and unavailable rounded down (both resolving to 0 makes maxUnavailable 1): the new
  MachineSet grows while the sum of all MachineSets' replicas stays within ``replicas + maxSurge``; old
  ones shrink, oldest first, while at least ``replicas - maxUnavailable`` Machines stay available;
* ``OnDelete``: old MachineSets shrink only as their Machines are deleted by someone else, and the new
  one takes up the difference;
* ``spec.paused``: replicas are kept (scaled on the newest MachineSet) but no rollout happens; a paused
  Cluster or the paused annotation stops everything;
* status: replicas, readyReplicas, availableReplicas, upToDateReplicas (v1beta2), phase.

``reconcile_deployment`` does one step and says in ``Step.data`` what it created or deleted.
"""

from __future__ import annotations

import copy
import hashlib
import json

from ansible_collections.baremetal.capi.plugins.module_utils.capi import machineset, refs
from ansible_collections.baremetal.capi.plugins.module_utils.capi.topology import (
    DELETION_ORDERS,
    MACHINE_TEMPLATE_HASH_LABEL,
    machine_name,
)
from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta, names
from ansible_collections.baremetal.capi.plugins.module_utils.runner import Step

ROLLING_UPDATE = "RollingUpdate"
ON_DELETE = "OnDelete"
STRATEGIES = (ROLLING_UPDATE, ON_DELETE)
DEFAULT_MAX_SURGE = 1  # the MachineDeployment webhook's defaults
DEFAULT_MAX_UNAVAILABLE = 0

# Re-exported for the callers that knew them here.
reconcile_machine_set = machineset.reconcile_machine_set


def _template_hash(md: dict) -> str:
    tspec = copy.deepcopy(((md.get("spec") or {}).get("template") or {}).get("spec") or {})
    # mdutil MachineTemplateDeepCopyRolloutFields: these change in place, without a new MachineSet.
    for in_place in ("minReadySeconds", "readinessGates", "deletion", "taints"):
        tspec.pop(in_place, None)
    return hashlib.sha256(json.dumps(tspec, sort_keys=True).encode()).hexdigest()[:10]


def strategy(md: dict) -> tuple[str, object, object]:
    """(type, maxSurge, maxUnavailable) as written, webhook defaults filled in."""
    spec = md.get("spec") or {}
    strat = (spec.get("rollout") or {}).get("strategy") or spec.get("strategy") or {}
    rolling = strat.get("rollingUpdate") or {}
    return (
        strat.get("type") or ROLLING_UPDATE,
        rolling.get("maxSurge", DEFAULT_MAX_SURGE),
        rolling.get("maxUnavailable", DEFAULT_MAX_UNAVAILABLE),
    )


def resolve_fenceposts(max_surge, max_unavailable, replicas: int, *, obj: str = "") -> tuple[int, int]:
    """mdutil ResolveFenceposts: surge rounds up, unavailable down; never both 0."""
    where = "spec.rollout.strategy.rollingUpdate"
    surge = machineset.scaled_value(max_surge, replicas, True, obj=obj, field=f"{where}.maxSurge")
    unavailable = machineset.scaled_value(max_unavailable, replicas, False, obj=obj, field=f"{where}.maxUnavailable")
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def validate_deployment(md: dict) -> None:
    spec = md.get("spec") or {}
    where = meta.ref(md)
    replicas = spec.get("replicas", 1)
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
        raise Invalid("replicas must be a non-negative integer", obj=where, field="spec.replicas")
    tspec = (spec.get("template") or {}).get("spec") or {}
    if not tspec.get("infrastructureRef"):
        raise Invalid("infrastructureRef is required", obj=where, field="spec.template.spec.infrastructureRef")
    if not (tspec.get("bootstrap") or {}).get("configRef") and not (tspec.get("bootstrap") or {}).get("dataSecretName"):
        raise Invalid(
            "bootstrap.configRef or dataSecretName is required", obj=where, field="spec.template.spec.bootstrap"
        )
    order = ((spec.get("deletion") or {}).get("order")) or "Random"
    if order not in DELETION_ORDERS:
        raise Invalid(
            f"deletion order must be one of {', '.join(DELETION_ORDERS)}", obj=where, field="spec.deletion.order"
        )
    kind, surge, unavailable = strategy(md)
    if kind not in STRATEGIES:
        raise Invalid(
            f"strategy type must be one of {', '.join(STRATEGIES)}", obj=where, field="spec.rollout.strategy.type"
        )
    resolve_fenceposts(surge, unavailable, replicas, obj=where)
    if surge in (0, "0", "0%") and unavailable in (0, "0", "0%") and kind == ROLLING_UPDATE:
        raise Invalid(
            "maxSurge and maxUnavailable must not both be 0",
            obj=where,
            field="spec.rollout.strategy.rollingUpdate",
        )
    mrs = (tspec.get("minReadySeconds"), spec.get("minReadySeconds"))
    for value, field in zip(mrs, ("spec.template.spec.minReadySeconds", "spec.minReadySeconds"), strict=True):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
            raise Invalid("minReadySeconds must be a non-negative integer", obj=where, field=field)
    after = (spec.get("rollout") or {}).get("after")
    if after is not None and machineset._parse_any(after) is None:
        raise Invalid(f"{after!r} is not an RFC 3339 time", obj=where, field="spec.rollout.after")
    raw = (spec.get("remediation") or {}).get("maxInFlight")
    if raw is not None:
        machineset.scaled_value(raw, replicas, True, obj=where, field="spec.remediation.maxInFlight")


def is_current(ms: dict, thash: str, rollout_after, at) -> bool:
    if not (meta.labels(ms).get(MACHINE_TEMPLATE_HASH_LABEL) or "").startswith(thash + "-"):
        return False
    # upstream: a MachineSet created before a passed rollout.after is not the new one.
    if rollout_after is not None and rollout_after <= at:
        created = machineset._parse(ms["metadata"].get("creationTimestamp"))
        if created is not None and created < rollout_after:
            return False
    return True


def _new_machine_set(md: dict, cluster: dict, thash: str, replicas: int) -> dict:
    mdname = meta.name(md)
    tmeta = (md["spec"].get("template") or {}).get("metadata") or {}
    ms_name = machine_name(mdname)
    labels = {
        **(tmeta.get("labels") or {}),
        names.DEPLOYMENT_NAME_LABEL: mdname,
        names.CLUSTER_NAME_LABEL: meta.name(cluster),
        MACHINE_TEMPLATE_HASH_LABEL: f"{thash}-{ms_name[-5:]}",
    }
    ms = meta.new(
        "MachineSet",
        ms_name,
        meta.namespace(md),
        labels=labels,
        spec={
            "clusterName": meta.name(cluster),
            "replicas": replicas,
            "deletion": copy.deepcopy(md["spec"].get("deletion") or {"order": "Random"}),
            "template": copy.deepcopy(md["spec"]["template"]),
        },
    )
    meta.set_owner(ms, md, controller=True)
    return ms


def _sync_in_place(store, md: dict, ms: dict, check: bool) -> dict:
    """Copy the in-place fields (template metadata, minReadySeconds, deletion...) onto the current MachineSet."""
    want = copy.deepcopy(ms)
    want["spec"]["template"] = copy.deepcopy(md["spec"]["template"])
    want["spec"]["deletion"] = copy.deepcopy(md["spec"].get("deletion") or {"order": "Random"})
    if want == ms or check or not ms["metadata"].get("uid"):
        return want
    return store.update(want)


def _spec_replicas(ms: dict) -> int:
    return int((ms.get("spec") or {}).get("replicas") or 0)


def _scale(store, ms: dict, replicas: int, check: bool) -> bool:
    if _spec_replicas(ms) == replicas:
        return False
    ms["spec"]["replicas"] = replicas
    if not check and ms["metadata"].get("uid"):
        fresh = store.get("MachineSet", meta.name(ms), meta.namespace(ms))
        fresh["spec"]["replicas"] = replicas
        ms.update(store.update(fresh))
    return True


def _rolling(store, md, new, old, available, replicas, surge, unavailable, check) -> bool:
    """rolling.go: grow the new set within replicas+maxSurge, then shrink old ones within minAvailable."""
    changed = False
    total = sum(_spec_replicas(s) for s in [new, *old])
    if _spec_replicas(new) > replicas:
        changed |= _scale(store, new, replicas, check)
    elif _spec_replicas(new) < replicas:
        room = replicas + surge - total
        if room > 0:
            changed |= _scale(store, new, _spec_replicas(new) + min(room, replicas - _spec_replicas(new)), check)
    old_total = sum(_spec_replicas(s) for s in old)
    if not old_total:
        return changed
    total = sum(_spec_replicas(s) for s in [new, *old])
    min_available = replicas - unavailable
    new_unavailable = _spec_replicas(new) - available[meta.name(new)]
    budget = total - min_available - new_unavailable
    if budget <= 0:
        return changed
    # cleanupUnhealthyReplicas: old replicas that are not available go first, oldest set first.
    for s in old:
        if budget <= 0:
            break
        bad = _spec_replicas(s) - available[meta.name(s)]
        if bad > 0:
            cut = min(bad, budget)
            changed |= _scale(store, s, _spec_replicas(s) - cut, check)
            budget -= cut
    # scaleDownOldMachineSetsForRollingUpdate: only what keeps minAvailable available.
    all_available = sum(min(available[meta.name(s)], _spec_replicas(s)) for s in [new, *old])
    changed |= _scale_down_old(store, old, min(budget, all_available - min_available), check)
    return changed


def _scale_down_old(store, old, budget, check) -> bool:
    """Take up to ``budget`` replicas off the old MachineSets, oldest first."""
    changed = False
    for s in old:
        if budget <= 0:
            break
        cut = min(_spec_replicas(s), budget)
        if cut:
            changed |= _scale(store, s, _spec_replicas(s) - cut, check)
            budget -= cut
    return changed


def _on_delete(store, md, new, old, live, replicas, check) -> bool:
    """ondelete.go: an old set follows the Machines someone deleted; the new one fills up to replicas."""
    changed = False
    excess = sum(_spec_replicas(s) for s in [new, *old]) - replicas
    for s in old:
        have = live[meta.name(s)]
        if _spec_replicas(s) > have:
            excess -= _spec_replicas(s) - have
            changed |= _scale(store, s, have, check)
    changed |= _scale_down_old(store, old, excess, check)
    room = replicas - sum(_spec_replicas(s) for s in [new, *old])
    if room > 0 or _spec_replicas(new) > replicas:
        changed |= _scale(store, new, min(replicas, _spec_replicas(new) + room), check)
    return changed


def _paused_scale(store, sets, replicas, check) -> bool:
    """sync.go scale without a rollout: the newest active set (or the newest) takes the difference."""
    if not sets:
        return False
    diff = replicas - sum(_spec_replicas(s) for s in sets)
    changed = False
    newest_first = sorted(sets, key=lambda s: s["metadata"].get("creationTimestamp", ""), reverse=True)
    if diff > 0:
        target = next((s for s in newest_first if _spec_replicas(s)), newest_first[0])
        changed |= _scale(store, target, _spec_replicas(target) + diff, check)
    for s in reversed(newest_first):
        if diff >= 0:
            break
        cut = min(_spec_replicas(s), -diff)
        changed |= _scale(store, s, _spec_replicas(s) - cut, check)
        diff += cut
    return changed


def reconcile_deployment(store, md: dict, cluster: dict, *, check: bool = False, clock=None) -> Step:
    """One MachineDeployment step: its MachineSet for the current template, the rollout, the status."""
    validate_deployment(md)
    ns, mdname = meta.namespace(md), meta.name(md)
    spec = md["spec"]
    if refs.is_paused(cluster, md):
        return Step(done=False, message="paused", requeue_after=30)
    replicas = spec.get("replicas", 1)
    at = machineset.now(clock)
    thash = _template_hash(md)
    rollout_after = machineset._parse_any((spec.get("rollout") or {}).get("after"))
    sets = store.list("MachineSet", ns, {"matchLabels": {names.DEPLOYMENT_NAME_LABEL: mdname}})
    sets.sort(key=lambda s: (s["metadata"].get("creationTimestamp", ""), meta.name(s)))
    current = [s for s in sets if is_current(s, thash, rollout_after, at)]
    new = current[-1] if current else None
    old = [s for s in sets if s is not new]
    kind, max_surge, max_unavailable = strategy(md)
    surge, unavailable = resolve_fenceposts(max_surge, max_unavailable, replicas, obj=meta.ref(md))
    if kind == ON_DELETE:
        surge = 0  # mdutil MaxSurge: only a rolling update surges
    changed = False
    paused = bool(spec.get("paused"))
    if new is None and not paused:
        # NewMSNewReplicas: the first MachineSet starts at replicas; a rollout's within the surge.
        start = replicas if not old else 0
        if old and kind == ROLLING_UPDATE:
            start = max(0, min(replicas, replicas + surge - sum(_spec_replicas(s) for s in old)))
        new = _new_machine_set(md, cluster, thash, start)
        new = new if check else store.create(new)
        changed = True
    elif new is not None:
        new = _sync_in_place(store, md, new, check)
    machines = {meta.name(s): machineset.set_machines(store, s) for s in ([new] if new else []) + old}
    md_machines = [m for ms in machines.values() for m in ms]
    min_ready = machineset.min_ready_seconds(md)
    live = {k: [m for m in v if not meta.is_deleting(m)] for k, v in machines.items()}
    available = {k: sum(1 for m in v if machineset.is_available(m, min_ready, at)) for k, v in live.items()}
    if paused:
        changed |= _paused_scale(store, ([new] if new else []) + old, replicas, check)
    elif kind == ON_DELETE:
        changed |= _on_delete(store, md, new, old, {k: len(v) for k, v in live.items()}, replicas, check)
    else:
        changed |= _rolling(store, md, new, old, available, replicas, surge, unavailable, check)
    created, deleted, status = [], [], {"replicas": 0, "readyReplicas": 0, "availableReplicas": 0}
    status["upToDateReplicas"] = 0
    for s in ([new] if new else []) + old:
        step = machineset.reconcile_machine_set(
            store, s, cluster, md=md, md_machines=md_machines, current=s is new, check=check, clock=clock
        )
        created += step.data["created"]
        deleted += step.data["deleted"]
        changed |= step.changed
        for key in status:
            status[key] += step.data[key]
    for s in old:
        if s["metadata"].get("uid") and not _spec_replicas(s) and not machineset.set_machines(store, s):
            if not check:
                store.delete("MachineSet", meta.name(s), ns)
            changed = True
    remaining = [s for s in old if refs.get_or_none(store, "MachineSet", meta.name(s), ns) is not None]
    if kind == ON_DELETE:
        # OnDelete rolls nothing by itself: the pool is settled once it has its replicas, all available, whatever
        # revision they run (old Machines go when someone deletes them; a run would otherwise wait out its
        # timeout for a rollout nobody asked the controller to make).
        live_now = [
            m for s in [new, *remaining] if s is not None for m in machineset.set_machines(store, s)
            if not meta.is_deleting(m)
        ]  # fmt: skip
        done = (
            not paused
            and new is not None
            and sum(_spec_replicas(s) for s in [new, *remaining]) == replicas
            and len(live_now) == replicas
            and status["availableReplicas"] == replicas
        )
    else:
        new_live = len([m for m in machineset.set_machines(store, new) if not meta.is_deleting(m)]) if new else 0
        done = (
            not paused
            and new is not None
            and not remaining
            and _spec_replicas(new) == replicas
            and new_live == replicas
            and status["availableReplicas"] == replicas
        )
    if not check and md["metadata"].get("uid"):
        _write_status(store, md, status, replicas)
    message = (
        f"{status['availableReplicas']}/{replicas} available, {status['upToDateReplicas']} up to date"
        + (f", {len(old)} old MachineSet(s)" if old else "")
        + (", rollout paused" if paused else "")
    )
    return Step(
        done=done,
        changed=changed,
        message=message,
        requeue_after=None if done else 5,
        data={"machineSet": meta.name(new) if new else None, "created": created, "deleted": deleted, **status},
    )


def _write_status(store, md: dict, status: dict, replicas: int) -> None:
    fresh = refs.get_or_none(store, "MachineDeployment", meta.name(md), meta.namespace(md))
    if fresh is None:
        return
    if status["replicas"] < replicas:
        phase = "ScalingUp"
    elif status["replicas"] > replicas:
        phase = "ScalingDown"
    else:
        phase = "Running"
    new = {
        **(fresh.get("status") or {}),
        **status,
        "phase": phase,
        "observedGeneration": fresh["metadata"].get("generation"),
        "selector": f"{names.CLUSTER_NAME_LABEL}={fresh['spec'].get('clusterName')},"
        f"{names.DEPLOYMENT_NAME_LABEL}={meta.name(fresh)}",
    }
    if new != (fresh.get("status") or {}):
        fresh["status"] = new
        store.update_status(fresh)
