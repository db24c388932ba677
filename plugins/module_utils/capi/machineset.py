# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""MachineSet: Machines for one template revision, as Cluster API's MachineSet controller keeps them.

cluster-api ``internal/controllers/machineset/machineset_controller.go`` (syncReplicas, getMachinesToDeletePrioritized):

* Machines named ``<ms>-<random5>``, their bootstrap config and infrastructure machine cloned from the
  templates and named like the Machine;
* remediation by the owner (``OwnerRemediated=False`` set by a MachineHealthCheck without a template):
  the Machine is deleted and replaced, newest first, within the MachineDeployment's
  ``spec.remediation.maxInFlight``; a MachineSet that is not the deployment's current revision
  remediates nothing (its Machines go with the rollout);
* scale down in ``spec.deletion.order`` (machineset_deletion_order.go);
* status: replicas, readyReplicas, availableReplicas, upToDateReplicas (v1beta2).

Readiness is the Node's: a Machine is ready while its ``NodeReady`` condition is True, and available once
it has been ready for ``minReadySeconds`` (upstream's Machine ``Available`` condition).
"""

from __future__ import annotations

import copy
import datetime
import math

from ansible_collections.baremetal.capi.plugins.module_utils.capi.topology import (
    age_key,
    clone_template,
    has_node,
    machine_name,
    new_machine,
    ref_to,
    remediation_requested,
)
from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions, meta, names
from ansible_collections.baremetal.capi.plugins.module_utils.runner import Step

# Reasons of OwnerRemediated set by the MachineSet (upstream v1beta2 machineset types).
REMEDIATION_MACHINE_DELETING_REASON = "MachineDeleting"
REMEDIATION_DEFERRED_REASON = "RemediationDeferred"
CANNOT_BE_REMEDIATED_REASON = "CannotBeRemediated"


def now(clock=None) -> datetime.datetime:
    t = clock() if clock else datetime.datetime.now(datetime.UTC)
    return t.astimezone(datetime.UTC)


def _parse(value: str | None) -> datetime.datetime | None:
    if not value:
        return None
    return datetime.datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.UTC)


def _parse_any(value) -> datetime.datetime | None:
    """An RFC 3339 time (``2026-01-02T03:04:05Z``, fractions and offsets allowed) or a datetime."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime.datetime):
        return value if value.tzinfo else value.replace(tzinfo=datetime.UTC)
    try:
        parsed = datetime.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else None


def scaled_value(value, total: int, round_up: bool, *, obj: str = "", field: str = "") -> int:
    """An int-or-percent against ``total`` (k8s intstr.GetScaledValueFromIntOrPercent)."""
    if isinstance(value, bool):
        raise Invalid(f"{value!r} is not an integer or a percentage", obj=obj, field=field)
    if isinstance(value, int):
        if value < 0:
            raise Invalid(f"{value} must not be negative", obj=obj, field=field)
        return value
    text = str(value).strip()
    if text.isdigit():  # a number given as a string (Ansible templating)
        return int(text)
    if not text.endswith("%") or not text[:-1].isdigit():
        raise Invalid(f"{value!r} is not an integer or a percentage such as 25%", obj=obj, field=field)
    exact = int(text[:-1]) * total / 100
    return math.ceil(exact) if round_up else math.floor(exact)


def is_ready(machine: dict) -> bool:
    return not meta.is_deleting(machine) and has_node(machine) and conditions.is_true(machine, names.NODE_READY)


def is_available(machine: dict, min_ready_seconds: int, at: datetime.datetime) -> bool:
    """Ready for at least ``minReadySeconds`` (upstream Machine Available condition)."""
    if not is_ready(machine):
        return False
    if not min_ready_seconds:
        return True
    since = _parse((conditions.get(machine, names.NODE_READY) or {}).get("lastTransitionTime"))
    return since is not None and (at - since).total_seconds() >= min_ready_seconds


def min_ready_seconds(obj: dict) -> int:
    """v1beta2 ``spec.template.spec.minReadySeconds`` (v1beta1 ``spec.minReadySeconds`` accepted)."""
    spec = obj.get("spec") or {}
    value = ((spec.get("template") or {}).get("spec") or {}).get("minReadySeconds")
    if value is None:
        value = spec.get("minReadySeconds")
    return int(value or 0)


def set_machines(store, ms: dict) -> list[dict]:
    if not ms["metadata"].get("uid"):
        return []
    return store.list("Machine", meta.namespace(ms), {"matchLabels": {names.SET_NAME_LABEL: meta.name(ms)}})


def counts(machines: list[dict], min_ready: int, at: datetime.datetime, up_to_date: bool) -> dict:
    """v1beta2 replica counters over a MachineSet's Machines."""
    return {
        "replicas": len(machines),
        "readyReplicas": sum(1 for m in machines if is_ready(m)),
        "availableReplicas": sum(1 for m in machines if is_available(m, min_ready, at)),
        "upToDateReplicas": len(machines) if up_to_date else 0,
    }


def _unhealthy(machine: dict) -> bool:
    return (
        not has_node(machine)
        or (conditions.get(machine, names.NODE_HEALTHY) or {}).get("status") == conditions.FALSE
        or (conditions.get(machine, names.HEALTH_CHECK_SUCCEEDED) or {}).get("status") == conditions.FALSE
    )


def deletion_rank(machine: dict, order: str, oldest_first: list[str]) -> tuple:
    """Sort key, first to go first (machineset_deletion_order.go priorities; ties by name)."""
    if meta.is_deleting(machine):
        prio = 100.0
    elif names.DELETE_MACHINE_ANNOTATION in meta.annotations(machine):
        prio = 80.0
    elif _unhealthy(machine):
        prio = 50.0
    elif order == "Oldest":  # below the unhealthy 50, rising with age
        prio = 50 * (len(oldest_first) - oldest_first.index(meta.name(machine))) / (len(oldest_first) + 1)
    elif order == "Newest":
        prio = 50 * (oldest_first.index(meta.name(machine)) + 1) / (len(oldest_first) + 1)
    else:
        prio = 20.0
    return (-prio, meta.name(machine))


def _mark(store, machine: dict, reason: str, message: str, check: bool, clock=None) -> dict:
    after = copy.deepcopy(machine)
    if conditions.set_condition(after, names.OWNER_REMEDIATED, False, reason, message, clock=clock) and not check:
        return store.update_status(after)
    return after


def remediate(
    store,
    ms: dict,
    machines: list[dict],
    *,
    md: dict | None = None,
    md_machines: list[dict] | None = None,
    current: bool = True,
    check: bool = False,
    clock=None,
) -> list[str]:
    """Delete the Machines whose remediation was left to their owner; the names deleted.

    upstream ``reconcileUnhealthyMachines``: the condition is written before the delete so a retry
    finds it; deleting Machines marked ``MachineDeleting`` are in flight against ``maxInFlight``.
    """
    todo = [m for m in machines if remediation_requested(m) and not meta.is_deleting(m)]
    if not todo:
        return []
    if md is not None and not current:
        for m in todo:
            _mark(
                store,
                m,
                CANNOT_BE_REMEDIATED_REASON,
                "Machine won't be remediated because it is pending removal due to rollout",
                check,
                clock,
            )
        return []
    max_in_flight = len(todo)
    raw = ((md or {}).get("spec") or {}).get("remediation", {}).get("maxInFlight") if md else None
    if raw is not None:
        max_in_flight = scaled_value(
            raw,
            int(md["spec"].get("replicas", 1)),
            True,
            obj=meta.ref(md),
            field="spec.remediation.maxInFlight",
        )
    for m in md_machines if md_machines is not None else machines:
        cond = conditions.get(m, names.OWNER_REMEDIATED) or {}
        if meta.is_deleting(m) and cond.get("reason") == REMEDIATION_MACHINE_DELETING_REASON:
            max_in_flight -= 1
    deferred_msg = (
        f"Waiting because there are already too many remediations in progress (spec.remediation.maxInFlight is {raw})"
    )
    # Newest first: a machine failing to come up likely runs no workload yet (upstream sortMachinesToRemediate).
    todo.sort(key=lambda m: (m["metadata"].get("creationTimestamp", ""), meta.name(m)), reverse=True)
    go, wait = todo[: max(0, max_in_flight)], todo[max(0, max_in_flight) :]
    for m in wait:
        _mark(store, m, REMEDIATION_DEFERRED_REASON, deferred_msg, check, clock)
    deleted = []
    for m in go:
        _mark(store, m, REMEDIATION_MACHINE_DELETING_REASON, "Machine is deleting", check, clock)
        if not check:
            store.delete("Machine", meta.name(m), meta.namespace(m))
        deleted.append(meta.name(m))
    return deleted


def reconcile_machine_set(
    store,
    ms: dict,
    cluster: dict,
    *,
    md: dict | None = None,
    md_machines: list[dict] | None = None,
    current: bool = True,
    check: bool = False,
    clock=None,
) -> Step:
    """Create or delete Machines of a MachineSet until it has ``spec.replicas`` of them; write its status."""
    ns, cname = meta.namespace(ms), meta.name(cluster)
    replicas = ms["spec"].get("replicas") or 0
    machines = set_machines(store, ms)
    deleted = remediate(store, ms, machines, md=md, md_machines=md_machines, current=current, check=check, clock=clock)
    live = [m for m in machines if not meta.is_deleting(m) and meta.name(m) not in deleted]
    created = []
    if len(live) > replicas:
        order = (ms["spec"].get("deletion") or {}).get("order") or "Random"
        oldest_first = [meta.name(m) for m in sorted(live, key=age_key)]
        for victim in sorted(live, key=lambda m: deletion_rank(m, order, oldest_first))[: len(live) - replicas]:
            deleted.append(meta.name(victim))
            if not check:
                store.delete("Machine", meta.name(victim), ns)
        live = [m for m in live if meta.name(m) not in deleted]
    for _i in range(replicas - len(live)):
        created.append(create_machine(store, ms, cname, check))
    at = now(clock)
    status = counts(live, min_ready_seconds(ms), at, current)
    if not check and ms["metadata"].get("uid"):
        _write_status(store, ms, status)
    done = not created and not deleted and status["availableReplicas"] == replicas and len(live) == replicas
    return Step(
        done=done,
        changed=bool(created or deleted),
        message=f"{status['availableReplicas']}/{replicas} machines available"
        + (f", created {len(created)}" if created else "")
        + (f", deleting {len(deleted)}" if deleted else ""),
        requeue_after=None if done else 5,
        data={"created": created, "deleted": deleted, "replicas": replicas, **status},
    )


def _write_status(store, ms: dict, status: dict) -> None:
    fresh = store.get("MachineSet", meta.name(ms), meta.namespace(ms))
    new = {**(fresh.get("status") or {}), **status, "observedGeneration": fresh["metadata"].get("generation")}
    if new != (fresh.get("status") or {}):
        fresh["status"] = new
        store.update_status(fresh)


def create_machine(store, ms: dict, cluster_name: str, check: bool) -> str:
    ns, msname = meta.namespace(ms), meta.name(ms)
    template = ms["spec"]["template"]
    tmeta = template.get("metadata") or {}
    tspec = template.get("spec") or {}
    name = machine_name(msname)
    labels = {**(tmeta.get("labels") or {}), names.SET_NAME_LABEL: msname}
    if names.DEPLOYMENT_NAME_LABEL in meta.labels(ms):
        labels[names.DEPLOYMENT_NAME_LABEL] = meta.labels(ms)[names.DEPLOYMENT_NAME_LABEL]
    annotations = tmeta.get("annotations") or {}
    if check:
        return name
    bootstrap = tspec.get("bootstrap") or {}
    bootstrap_ref = None
    if bootstrap.get("configRef"):
        config = clone_template(store, bootstrap["configRef"], ns, name, labels, annotations, ms, cluster_name)
        bootstrap_ref = ref_to(config)
    infra = clone_template(store, tspec["infrastructureRef"], ns, name, labels, annotations, ms, cluster_name)
    machine = new_machine(
        ms,
        name,
        cluster_name,
        tspec.get("version"),
        labels,
        annotations,
        bootstrap_ref,
        ref_to(infra),
        tspec.get("failureDomain"),
    )
    if bootstrap_ref is None:
        machine["spec"]["bootstrap"] = {"dataSecretName": bootstrap["dataSecretName"]}
    if tspec.get("minReadySeconds") is not None:
        machine["spec"]["minReadySeconds"] = tspec["minReadySeconds"]
    store.create(machine)
    return name
