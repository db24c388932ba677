# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""MachineDeployment -> MachineSet (template hash) -> Machines, as Cluster API keeps them.

``reconcile_deployment`` does one step and says in ``Step.data`` what it created or deleted.
"""

from __future__ import annotations

import copy
import hashlib
import json

from ansible_collections.baremetal.capi.plugins.module_utils.capi.topology import (
    DELETION_ORDERS,
    MACHINE_TEMPLATE_HASH_LABEL,
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


def _template_hash(md: dict) -> str:
    tspec = copy.deepcopy(((md.get("spec") or {}).get("template") or {}).get("spec") or {})
    for in_place in ("minReadySeconds", "readinessGates", "deletion", "taints"):
        tspec.pop(in_place, None)
    return hashlib.sha256(json.dumps(tspec, sort_keys=True).encode()).hexdigest()[:10]


def validate_deployment(md: dict) -> None:
    spec = md.get("spec") or {}
    where = meta.ref(md)
    replicas = spec.get("replicas", 1)
    if not isinstance(replicas, int) or replicas < 0:
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


def _deletion_rank(machine: dict, order: str, oldest_first: list[str]) -> tuple:
    """Higher goes first (MachineSet deletion priorities)."""
    if meta.is_deleting(machine):
        prio = 100
    elif names.DELETE_MACHINE_ANNOTATION in meta.annotations(machine):
        prio = 80
    elif (
        not has_node(machine)
        or remediation_requested(machine)
        or ((conditions.get(machine, names.HEALTH_CHECK_SUCCEEDED) or {}).get("status") == conditions.FALSE)
    ):
        prio = 50
    elif order == "Oldest":
        prio = 50 * (len(oldest_first) - oldest_first.index(meta.name(machine))) / max(1, len(oldest_first))
    elif order == "Newest":
        prio = 50 * (oldest_first.index(meta.name(machine)) + 1) / max(1, len(oldest_first))
    else:
        prio = 20
    return (-prio, meta.name(machine))


def reconcile_deployment(store, md: dict, cluster: dict, *, check: bool = False) -> Step:
    """One MachineDeployment step: its MachineSet for the current template, scaled to ``replicas``."""
    validate_deployment(md)
    ns, mdname, cname = meta.namespace(md), meta.name(md), meta.name(cluster)
    replicas = md["spec"].get("replicas", 1)
    thash = _template_hash(md)
    sets = store.list("MachineSet", ns, {"matchLabels": {names.DEPLOYMENT_NAME_LABEL: mdname}})
    current = [s for s in sets if (meta.labels(s).get(MACHINE_TEMPLATE_HASH_LABEL) or "").startswith(thash)]
    old = [s for s in sets if s not in current]
    changed = False
    if not current:
        tmeta = (md["spec"].get("template") or {}).get("metadata") or {}
        ms_name = machine_name(mdname)
        ms_labels = {
            **(tmeta.get("labels") or {}),
            names.DEPLOYMENT_NAME_LABEL: mdname,
            names.CLUSTER_NAME_LABEL: cname,
            MACHINE_TEMPLATE_HASH_LABEL: f"{thash}-{ms_name[-5:]}",
        }
        ms = meta.new(
            "MachineSet",
            ms_name,
            ns,
            labels=ms_labels,
            spec={
                "clusterName": cname,
                "replicas": 0,
                "deletion": copy.deepcopy(md["spec"].get("deletion") or {"order": "Random"}),
                "template": copy.deepcopy(md["spec"]["template"]),
            },
        )
        meta.set_owner(ms, md, controller=True)
        current = [ms if check else store.create(ms)]
        changed = True
    ms = current[0]
    # Old MachineSets go to zero once the current one has all its Machines with Nodes (rolling, one at a time).
    machines = {meta.name(s): _set_machines(store, s) for s in [ms, *old]}
    cur_ready = sum(1 for m in machines[meta.name(ms)] if has_node(m) and not meta.is_deleting(m))
    want = replicas
    if old:
        surge = ((md["spec"].get("rollout") or {}).get("strategy") or {}).get("rollingUpdate", {}).get("maxSurge", 1)
        total_old = sum(len([m for m in machines[meta.name(s)] if not meta.is_deleting(m)]) for s in old)
        want = min(replicas, max(0, replicas + int(surge) - total_old)) or min(replicas, 1)
        if cur_ready >= min(want, replicas) and total_old:
            victim_set = sorted(old, key=lambda s: s["metadata"].get("creationTimestamp", ""))[0]
            changed |= _scale_set(store, victim_set, max(0, (victim_set["spec"].get("replicas") or 0) - 1), check)
        for s in old:
            if s["metadata"].get("uid") and not check:
                reconcile_machine_set(store, store.get("MachineSet", meta.name(s), ns), cluster)
            if not _set_machines(store, s) and not check:
                store.delete("MachineSet", meta.name(s), ns)
                changed = True
    if (ms["spec"].get("replicas") or 0) != want:
        changed |= _scale_set(store, ms, want, check)
        ms["spec"]["replicas"] = want
    step = reconcile_machine_set(store, ms, cluster, check=check)
    done = step.done and not old and want == replicas
    return Step(
        done=done,
        changed=changed or step.changed,
        message=step.message,
        requeue_after=None if done else (step.requeue_after or 5),
        data={"machineSet": meta.name(ms), **step.data},
    )


def _set_machines(store, ms: dict) -> list[dict]:
    if not ms["metadata"].get("uid"):
        return []
    return store.list("Machine", meta.namespace(ms), {"matchLabels": {names.SET_NAME_LABEL: meta.name(ms)}})


def _scale_set(store, ms: dict, replicas: int, check: bool) -> bool:
    if (ms["spec"].get("replicas") or 0) == replicas:
        return False
    if not check and ms["metadata"].get("uid"):
        fresh = store.get("MachineSet", meta.name(ms), meta.namespace(ms))
        fresh["spec"]["replicas"] = replicas
        store.update(fresh)
    return True


def reconcile_machine_set(store, ms: dict, cluster: dict, *, check: bool = False) -> Step:
    """Create or delete Machines of a MachineSet until it has ``replicas`` of them."""
    ns, cname = meta.namespace(ms), meta.name(cluster)
    replicas = ms["spec"].get("replicas") or 0
    machines = _set_machines(store, ms)
    live = [m for m in machines if not meta.is_deleting(m)]
    created, deleted = [], []
    for m in live:
        if remediation_requested(m):
            deleted.append(meta.name(m))
            if not check:
                store.delete("Machine", meta.name(m), ns)
    live = [m for m in live if meta.name(m) not in deleted]
    if len(live) > replicas:
        order = (ms["spec"].get("deletion") or {}).get("order") or "Random"
        oldest_first = [meta.name(m) for m in sorted(live, key=age_key)]
        for victim in sorted(live, key=lambda m: _deletion_rank(m, order, oldest_first))[: len(live) - replicas]:
            deleted.append(meta.name(victim))
            if not check:
                store.delete("Machine", meta.name(victim), ns)
    for _i in range(replicas - len(live)):
        created.append(_create_set_machine(store, ms, cname, check))
    ready = sum(1 for m in live if has_node(m))
    done = not created and not deleted and ready == replicas and len(live) == replicas
    return Step(
        done=done,
        changed=bool(created or deleted),
        message=f"{ready}/{replicas} machines have a Node"
        + (f", created {len(created)}" if created else "")
        + (f", deleting {len(deleted)}" if deleted else ""),
        requeue_after=None if done else 5,
        data={"created": created, "deleted": deleted, "replicas": replicas, "ready": ready},
    )


def _create_set_machine(store, ms: dict, cluster_name: str, check: bool) -> str:
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
    store.create(machine)
    return name
