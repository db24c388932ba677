# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""KubeadmControlPlane: Machines for the control plane, as KCP creates, rolls and deletes them.

cluster-api controlplane/kubeadm/internal/controllers/controller.go reconcile, in KCP's order: the pre-terminate
hook of a deleting Machine (etcd leadership moved off it, its member removed, never at the cost of quorum, then the
hook released); remediation; a rolling update of out-of-date Machines (capi.kcp_rollout) with ``maxSurge`` 1 or 0,
one Machine at a time, an old one removed only once the others are healthy; else init, one join at a time, or one
scale-down victim (``delete-machine`` first, then the failure domain with the most Machines, the oldest there).
``reconcile_control_plane`` does one step and says in ``Step.data`` what it created or deleted.

``deployment_version_hold`` is the upgrade order: no MachineDeployment moves to a version newer than every
control-plane Machine runs.
"""

from __future__ import annotations

import copy
import datetime

from ansible_collections.baremetal.capi.plugins.module_utils.capi import (
    failure_domains,
    kcp_etcd,
    kcp_remediation,
    kcp_rollout,
    refs,
)
from ansible_collections.baremetal.capi.plugins.module_utils.capi.topology import (
    KCP_CLEANUP_HOOK,
    clone_template,
    has_node,
    machine_name,
    new_machine,
    ref_to,
)
from ansible_collections.baremetal.capi.plugins.module_utils.errors import Conflict, Invalid, NotFound
from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions, meta, names
from ansible_collections.baremetal.capi.plugins.module_utils.runner import Step
from ansible_collections.baremetal.capi.plugins.module_utils.store import mutate as rmw


def validate_control_plane(kcp: dict) -> None:
    spec = kcp.get("spec") or {}
    where = meta.ref(kcp)
    replicas = spec.get("replicas", 1)
    # the webhook: a KubeadmControlPlane goes by its deletion, never by scaling to zero
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas <= 0:
        raise Invalid(f"replicas cannot be less than or equal to 0, got {replicas!r}", obj=where, field="spec.replicas")
    external = ((spec.get("kubeadmConfigSpec") or {}).get("clusterConfiguration") or {}).get("etcd", {}).get("external")
    if replicas % 2 == 0 and replicas > 0 and not external:
        raise Invalid(f"replicas must be odd with stacked etcd, got {replicas}", obj=where, field="spec.replicas")
    if not spec.get("version"):
        raise Invalid("version is required", obj=where, field="spec.version")
    if not ((spec.get("machineTemplate") or {}).get("spec") or {}).get("infrastructureRef"):
        raise Invalid("infrastructureRef is required", obj=where, field="spec.machineTemplate.spec.infrastructureRef")
    # KCP's webhook: RollingUpdate only, maxSurge 0 or 1, 0 only with at least 3 replicas, expiry >= 7 days.
    rollout = spec.get("rollout") or {}
    strategy = rollout.get("strategy") or {}
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        raise Invalid("only RollingUpdate is supported", obj=where, field="spec.rollout.strategy.type")
    surge = (strategy.get("rollingUpdate") or {}).get("maxSurge", 1)
    if surge not in (0, 1) or isinstance(surge, bool):
        raise Invalid(
            f"maxSurge must be 0 or 1, got {surge!r}", obj=where, field="spec.rollout.strategy.rollingUpdate.maxSurge"
        )
    if surge == 0 and replicas < 3:
        raise Invalid(
            "maxSurge 0 needs at least 3 replicas (one fewer must keep etcd's quorum)",
            obj=where,
            field="spec.rollout.strategy.rollingUpdate.maxSurge",
        )
    days = (rollout.get("before") or {}).get("certificatesExpiryDays")
    if days is not None and (not isinstance(days, int) or isinstance(days, bool) or days < 7):
        raise Invalid(
            f"certificatesExpiryDays must be an integer of at least 7, got {days!r}",
            obj=where,
            field="spec.rollout.before.certificatesExpiryDays",
        )
    if rollout.get("after") is not None and kcp_rollout.parse_time(rollout["after"]) is None:
        raise Invalid(f"not an RFC 3339 time: {rollout['after']!r}", obj=where, field="spec.rollout.after")


def control_plane_machines(store, kcp: dict) -> list[dict]:
    return store.list("Machine", meta.namespace(kcp), {"matchLabels": {names.CONTROL_PLANE_NAME_LABEL: meta.name(kcp)}})


def _failure_domain_for(cluster: dict, machines: list[dict]) -> str | None:
    """The control-plane failure domain with the fewest Machines (capi.failure_domains)."""
    return failure_domains.next_for_scale_up(cluster, machines)


def _kcp_victim(machines: list[dict], cluster: dict | None = None) -> dict:
    marked = [m for m in machines if names.DELETE_MACHINE_ANNOTATION in meta.annotations(m)]
    return failure_domains.machine_for_scale_down(cluster, machines, marked or machines)


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def outdated_machines(store, kcp: dict, machines: list[dict], now: datetime.datetime) -> dict[str, list[str]]:
    """{machine name: why it needs a rollout} for the Machines that are not up to date."""
    ns = meta.namespace(kcp)
    out = {}
    for m in machines:
        spec = m.get("spec") or {}
        infra = refs.get_ref(store, spec.get("infrastructureRef"), ns)
        config = refs.get_ref(store, (spec.get("bootstrap") or {}).get("configRef"), ns)
        reasons = kcp_rollout.not_up_to_date_reasons(kcp, m, infra, config, now)
        if reasons:
            out[meta.name(m)] = reasons
    return out


def rollout_victim(machines: list[dict], outdated: dict, cluster: dict | None = None) -> dict:
    """KCP's candidate sets, the first non-empty one (scale.go): outdated and marked, marked, outdated, all."""
    marked = [m for m in machines if names.DELETE_MACHINE_ANNOTATION in meta.annotations(m)]
    old = [m for m in machines if meta.name(m) in outdated]
    pool = [m for m in marked if meta.name(m) in outdated] or marked or old or machines
    return _kcp_victim(pool, cluster)


def rollout_plan(machines: list[dict], outdated: dict, cluster: dict | None = None) -> list[str]:
    """The order in which the out-of-date Machines would be replaced (victim selection, one at a time)."""
    left = [m for m in machines if meta.name(m) in outdated]
    order = []
    while left:
        victim = rollout_victim(left, outdated, cluster)
        order.append(meta.name(victim))
        left = [m for m in left if meta.name(m) != meta.name(victim)]
    return order


def _sync_up_to_date(store, machines: list[dict], outdated: dict, check: bool) -> None:
    """The Machines' UpToDate condition (upstream's message: one ``* reason`` line per reason)."""
    if check:
        return
    for m in machines:
        reasons = outdated.get(meta.name(m))
        after = copy.deepcopy(m)
        if reasons:
            message = "\n".join(f"* {r}" for r in reasons)
            changed = conditions.set_condition(after, names.UP_TO_DATE, False, names.NOT_UP_TO_DATE_REASON, message)
        else:
            changed = conditions.set_condition(after, names.UP_TO_DATE, True, names.UP_TO_DATE_REASON)
        if changed:
            try:
                refs.write(store, m, after)
            except (Conflict, NotFound):
                pass  # another writer moved it: next round


def _sync_status(store, kcp: dict, cluster: dict, machines: list[dict], outdated: dict, check: bool) -> None:
    """KCP v1beta2 status: replicas, readyReplicas, upToDateReplicas, version (the oldest Machine's), selector."""
    if check:
        return
    try:  # the status is KCP's alone: written on the stored object, whatever the caller's copy
        kcp = store.get("KubeadmControlPlane", meta.name(kcp), meta.namespace(kcp))
    except NotFound:
        return
    live = [m for m in machines if not meta.is_deleting(m)]
    up_to_date = sum(1 for m in live if meta.name(m) not in outdated)
    status = copy.deepcopy(kcp.get("status") or {})
    status.update(
        replicas=len(machines),
        readyReplicas=sum(1 for m in machines if conditions.is_true(m, names.READY)),
        upToDateReplicas=up_to_date,
        selector=f"{names.CLUSTER_NAME_LABEL}={meta.name(cluster)},{names.CONTROL_PLANE_LABEL}",
    )
    version = kcp_rollout.oldest_version(machines)
    if version:
        status["version"] = version
    status.setdefault("deprecated", {}).setdefault("v1beta1", {})["updatedReplicas"] = up_to_date
    after = {**kcp, "status": status}
    rolling = [n for n in outdated if any(meta.name(m) == n for m in live)]
    if rolling:
        conditions.set_condition(
            after, "RollingOut", True, "RollingOut", f"Rolling out {len(rolling)} not up-to-date replicas"
        )
    else:
        conditions.set_condition(after, "RollingOut", False, "NotRollingOut")
    if after["status"] != (kcp.get("status") or {}):
        try:
            refs.write(store, kcp, after)
        except (Conflict, NotFound):
            pass


def _preflight(machines: list[dict], health, *, node_ready: bool, exclude: str | None = None) -> str | None:
    """Why KCP may not change the control plane now (every Machine with a Node; etcd healthy when reachable)."""
    checked = [m for m in machines if meta.name(m) != exclude]
    no_node = [meta.name(m) for m in checked if not has_node(m)]
    if no_node:
        return f"waiting for {', '.join(no_node)} to have a Node (one operation at a time)"
    if node_ready:
        not_ready = [meta.name(m) for m in checked if not conditions.is_true(m, names.NODE_READY)]
        if not_ready:
            return f"waiting for the Node of {', '.join(not_ready)} to be Ready before removing another machine"
    bad = kcp_etcd.unhealthy_members(health, checked)
    if bad:
        return f"waiting for etcd: {', '.join(bad)}"
    return None


def reconcile_control_plane(
    store, kcp: dict, cluster: dict, *, check: bool = False, etcd_factory=None, clock=None
) -> Step:
    """One KCP step: create, or delete, at most one Machine.

    ``etcd_factory`` (``machines -> EtcdClient``) reaches the cluster's etcd; by default its members at the
    Machines' InternalIPs with a certificate from the ``<cluster>-etcd`` CA.
    """
    if meta.is_deleting(kcp):
        return reconcile_delete(store, kcp, cluster, check=check)
    validate_control_plane(kcp)
    if not check and names.KCP_FINALIZER not in (kcp["metadata"].get("finalizers") or []):
        kcp = rmw.mutate(
            store,
            "KubeadmControlPlane",
            meta.name(kcp),
            meta.namespace(kcp),
            lambda k: meta.add_finalizer(k, names.KCP_FINALIZER),
        )
    spec = kcp["spec"]
    replicas = spec.get("replicas", 1)
    factory = etcd_factory or kcp_etcd.default_factory(store, cluster)
    machines = control_plane_machines(store, kcp)
    live = [m for m in machines if not meta.is_deleting(m)]
    ready = sum(1 for m in live if has_node(m))
    outdated = outdated_machines(store, kcp, live, clock() if clock else _now())
    _sync_up_to_date(store, live, outdated, check)
    _sync_status(store, kcp, cluster, machines, outdated, check)
    if not check:  # the status just written moved its resourceVersion on
        kcp = refs.get_or_none(store, "KubeadmControlPlane", meta.name(kcp), meta.namespace(kcp)) or kcp
    data = {"replicas": replicas, "machines": len(live), "ready": ready, "outdated": sorted(outdated)}

    hook = kcp_etcd.pre_terminate(store, kcp, machines, factory, check=check)
    if hook is not None:
        hook.data = {**data, **(hook.data or {})}
        hook.requeue_after = hook.requeue_after or 5
        return hook
    # KCP's remediation guards (capi/kcp_remediation.py): a Machine is deleted only when upstream would;
    # etcd is asked only when its answer decides.
    remediation = kcp_remediation.reconcile_unhealthy_machines(
        store, kcp, cluster, machines, etcd_members=lambda: kcp_etcd.etcd_health(factory, live), check=check
    )
    if remediation.step is not None:
        remediation.step.data = {**data, **remediation.step.data}
        return remediation.step
    data.update(remediation.data)
    if outdated:
        return _rolling_update(store, kcp, cluster, live, outdated, factory, data, check)
    if len(live) > replicas:
        victim = _kcp_victim(live, cluster)
        # the last control-plane Machine (a KCP scaled to zero when the cluster goes) takes its etcd with it:
        # there is no quorum left to keep, as upstream's hook removes no member of a single Machine
        health = kcp_etcd.etcd_health(factory, live) if len(live) > 1 else None
        return _delete_one(store, victim, health, "scaling down", data, check)
    if len(live) < replicas:
        health = kcp_etcd.etcd_health(factory, live) if live else None
        waiting = _preflight(live, health, node_ready=False) if live else None
        if waiting:
            return Step(done=False, message=waiting, requeue_after=5, data=data)
        created = _create_control_plane_machine(store, kcp, cluster, init=not live, machines=live, check=check)
        return Step(
            changed=True,
            message=f"created {created} ({'init' if not live else 'join'})",
            requeue_after=2,
            data={**data, "created": created},
        )
    done = ready == replicas
    return Step(
        done=done,
        message="control plane up to date" if done else f"{ready}/{replicas} control plane machines have a Node",
        requeue_after=None if done else 5,
        data=data,
    )


def reconcile_delete(store, kcp: dict, cluster: dict, *, check: bool = False) -> Step:
    """KCP's reconcileDelete: once no worker Machine of the cluster is left, every control-plane Machine is
    deleted at once with its kcp-cleanup hook released (the whole etcd goes: no member to move leadership to,
    no quorum to keep); the finalizer is removed once none is left."""
    ns, kname = meta.namespace(kcp), meta.name(kcp)
    machines = control_plane_machines(store, kcp)
    if not machines:
        if check:
            return Step(done=True, changed=True, message="would remove its finalizer (deletion completed)")
        rmw.mutate(
            store,
            "KubeadmControlPlane",
            kname,
            ns,
            lambda k: meta.remove_finalizer(k, names.KCP_FINALIZER),
            missing_ok=True,
        )
        return Step(done=True, changed=True, message="deletion completed")
    mine = {meta.name(m) for m in machines}
    cluster_machines = store.list("Machine", ns, {"matchLabels": {names.CLUSTER_NAME_LABEL: meta.name(cluster)}})
    workers = sorted(meta.name(m) for m in cluster_machines if meta.name(m) not in mine)
    if workers:
        reason = names.KCP_DELETING_WAITING_FOR_WORKERS_REASON
        blocked = "KubeadmControlPlane deletion blocked because following objects still exist:"
        _set_deleting(store, kcp, reason, f"{blocked}\n* Machines: {', '.join(workers)}", check)
        return Step(done=False, message=f"waiting for worker Machines to be deleted first: {', '.join(workers)}",
                    requeue_after=5)  # fmt: skip
    changed = False
    for m in machines:
        if check:
            changed |= not meta.is_deleting(m)
            continue
        if names.KCP_CLEANUP_HOOK in meta.annotations(m):
            rmw.mutate(store, "Machine", meta.name(m), ns, _release_hook, missing_ok=True)
            changed = True
        if not meta.is_deleting(m):
            store.delete("Machine", meta.name(m), ns)
            changed = True
    message = f"Deleting {len(machines)} Machine{'s' if len(machines) > 1 else ''}"
    _set_deleting(store, kcp, names.KCP_DELETING_WAITING_FOR_MACHINE_DELETION_REASON, message, check)
    verb = "would delete" if check else "deleting"
    return Step(done=False, changed=changed, message=f"{verb} {', '.join(sorted(mine))}", requeue_after=5)


def release_orphaned_hooks(store, cluster: dict, *, check: bool = False) -> bool:
    """The kcp-cleanup hooks of deleting control-plane Machines whose KubeadmControlPlane is gone.

    A KubeadmControlPlane written before it carried its finalizer goes at once when deleted, and the store's
    garbage collection deletes its Machines: nothing would ever release their hooks, so this does what the
    KubeadmControlPlane's deletion would have done.
    """
    ns = meta.namespace(cluster)
    selector = f"{names.CLUSTER_NAME_LABEL}={meta.name(cluster)},{names.CONTROL_PLANE_LABEL}"
    held = [
        m
        for m in store.list("Machine", ns, selector)
        if meta.is_deleting(m) and names.KCP_CLEANUP_HOOK in meta.annotations(m)
    ]
    if not check:
        for m in held:
            rmw.mutate(store, "Machine", meta.name(m), ns, _release_hook, missing_ok=True)
    return bool(held)


def _release_hook(machine: dict) -> bool:
    return machine["metadata"].get("annotations", {}).pop(names.KCP_CLEANUP_HOOK, None) is not None


def _set_deleting(store, kcp: dict, reason: str, message: str, check: bool) -> None:
    if check:
        return
    after = copy.deepcopy(kcp)
    conditions.set_condition(after, names.DELETING, True, reason, message)
    if after.get("status") != kcp.get("status"):
        try:
            refs.write(store, kcp, after)
        except (Conflict, NotFound):
            pass


def _delete_one(store, victim: dict, health, why: str, data: dict, check: bool) -> Step:
    """Delete one Machine, unless removing its etcd member would lose quorum (then nothing is deleted)."""
    refused = kcp_etcd.removal_refused(health, victim)
    if refused:
        return Step(done=False, message=refused, requeue_after=10, data={**data, "refused": meta.name(victim)})
    if not check:
        store.delete("Machine", meta.name(victim), meta.namespace(victim))
    verb = "would delete" if check else "deleting"
    return Step(
        changed=True,
        message=f"{why}: {verb} {meta.name(victim)}",
        requeue_after=2,
        data={**data, "deleted": meta.name(victim)},
    )


def _rolling_update(store, kcp, cluster, live, outdated, factory, data, check) -> Step:
    """KCP's rollingUpdate: grow to replicas+maxSurge with an up-to-date Machine, else remove one outdated."""
    replicas = kcp["spec"].get("replicas", 1)
    surge = kcp_rollout.max_surge(kcp)
    plan = rollout_plan(live, outdated, cluster)
    data = {**data, "plan": plan, "maxSurge": surge}
    if check:
        order = ", ".join(plan)
        how = "a new machine first, then the old one removed" if surge else "the old one removed first"
        return Step(
            changed=True,
            message=f"would replace {len(plan)} machine(s) one at a time, in this order: {order} "
            f"({how}, maxSurge {surge})",
            data=data,
        )
    health = kcp_etcd.etcd_health(factory, live)
    if len(live) < replicas + surge:
        waiting = _preflight(live, health, node_ready=False)
        if waiting:
            return Step(done=False, message=f"rolling out: {waiting}", requeue_after=5, data=data)
        created = _create_control_plane_machine(store, kcp, cluster, init=False, machines=live, check=check)
        return Step(
            changed=True,
            message=f"rolling out: created {created} ({len(plan)} to replace: {', '.join(plan)})",
            requeue_after=2,
            data={**data, "created": created},
        )
    victim = rollout_victim(live, outdated, cluster)
    waiting = _preflight(live, health, node_ready=True, exclude=meta.name(victim))
    if waiting:
        return Step(done=False, message=f"rolling out: {waiting}", requeue_after=5, data=data)
    return _delete_one(store, victim, health, "rolling out", data, check)


def _create_control_plane_machine(store, kcp, cluster, *, init: bool, machines, check: bool) -> str:
    ns, kname, cname = meta.namespace(kcp), meta.name(kcp), meta.name(cluster)
    spec = kcp["spec"]
    mt = spec.get("machineTemplate") or {}
    name = machine_name(kname)
    labels = {
        **((mt.get("metadata") or {}).get("labels") or {}),
        names.CONTROL_PLANE_LABEL: "",
        names.CONTROL_PLANE_NAME_LABEL: kname,
    }
    # KCP's pre-terminate hook: its etcd member goes before its infrastructure does (kcp_etcd.pre_terminate).
    annotations = {**((mt.get("metadata") or {}).get("annotations") or {}), KCP_CLEANUP_HOOK: ""}
    if check:
        return name
    infra = clone_template(store, mt["spec"]["infrastructureRef"], ns, name, labels, {}, kcp, cname)
    config_spec = copy.deepcopy(spec.get("kubeadmConfigSpec") or {})
    if init:
        config_spec.pop("joinConfiguration", None)
    else:
        config_spec.pop("initConfiguration", None)
        config_spec.setdefault("joinConfiguration", {}).setdefault("controlPlane", {})
    config = meta.new("KubeadmConfig", name, ns, spec=config_spec, labels={**labels, names.CLUSTER_NAME_LABEL: cname})
    meta.set_owner(config, kcp)
    config = store.create(config)
    machine = new_machine(
        kcp,
        name,
        cname,
        spec.get("version"),
        labels,
        annotations,
        ref_to(config),
        ref_to(infra),
        _failure_domain_for(cluster, machines),
    )
    store.create(machine)
    return name


def deployment_version_hold(store, cluster: dict, md: dict) -> str | None:
    """Why a MachineDeployment may not take its step yet: its version is newer than the control plane runs.

    Never a kubelet newer than the API server (Kubernetes' version skew policy; Cluster API's topology
    controller upgrades MachineDeployments only once the control plane is at the version and not rolling).
    The control plane's version is the oldest ``spec.version`` of its Machines, deleting ones included (their
    API server still answers): while any is below the MachineDeployment's version, the deployment waits.
    """
    want = kcp_rollout.normalize_version(
        (((md.get("spec") or {}).get("template") or {}).get("spec") or {}).get("version")
    )
    cp_ref = (cluster.get("spec") or {}).get("controlPlaneRef")
    kcp = refs.get_ref(store, cp_ref, meta.namespace(cluster)) if cp_ref else None
    if not want or kcp is None:
        return None
    machines = control_plane_machines(store, kcp)
    current = kcp_rollout.oldest_version(machines)
    if current is None or kcp_rollout.version_tuple(want) <= kcp_rollout.version_tuple(current):
        return None
    behind = sorted(
        meta.name(m)
        for m in machines
        if kcp_rollout.version_tuple(kcp_rollout.normalize_version((m.get("spec") or {}).get("version")))
        < kcp_rollout.version_tuple(want)
    )
    return (
        f"waiting for the control plane to be at {want} before the workers move to it "
        f"(control plane at {current}: {', '.join(behind)})"
    )
