# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""KubeadmControlPlane's remediation guards: when KCP deletes an unhealthy control-plane Machine, and when not.

Upstream: controlplane/kubeadm/internal/controllers/remediation.go (reconcileUnhealthyMachines).  A Machine
is to be remediated by KCP when its ``OwnerRemediated`` condition is False (MachineHealthCheck, or this
collection's reboot remediation once it gives up, asks the owner to replace it) and its
``HealthCheckSucceeded`` is not True.  One step, in upstream's order:

1. healthy again (``HealthCheckSucceeded`` True): the pending ``OwnerRemediated`` is dropped;
2. the KCP's ``remediation-in-progress`` annotation moves to the replacement Machine (created after it) as
   ``remediation-for``, which carries the retry count on;
3. the most broken Machine is picked (remediate-machine annotation, no Node, etcd, then the other
   control-plane components, then the oldest);
4. nothing while another remediation is in progress (one at a time);
5. retry limits from the Machine's ``remediation-for``: within ``minHealthyPeriodSeconds`` (default 1h) of
   the last remediation it is a retry; a retry waits ``retryPeriodSeconds`` and stops at ``maxRetry``;
6. once the control plane is initialized: more than one Machine, no healthy Machine still provisioning,
   none deleting, and after the removal at least one full set of control-plane components and an etcd
   cluster that keeps quorum;
7. then the Machine is deleted (its etcd member goes through KCP's pre-terminate hook) and the KCP is
   annotated ``remediation-in-progress``.

Whenever a rule holds the Machine back, ``OwnerRemediated`` says why with upstream's reason and message and
nothing is deleted.  Before initialization none of rule 6 applies: a first control plane that never came up
is replaced, and the replacement gets init data (the Cluster is not initialized, so CABPK renders init).

etcd: ``etcd_members`` is what etcd answers when it can be asked: a list of ``{name, id, isLearner,
healthy}`` (``healthy`` optional), an etcd health object with ``members`` and ``healthy`` ids (see
``members_from_health``), or a callable returning either, called only when the quorum check is reached (a
callable that returns None or raises - etcd asked and not answering, as a cluster without quorum does - refuses
the remediation).  Without it the members are the control-plane Machines with a Node, as the store knows them.
A member's health is, in this order: what etcd said, the Machine's ``EtcdMemberHealthy`` condition, its
``NodeReady`` condition.  Unknown health counts as unhealthy, as upstream assumes the worst.  ``clock`` returns an aware
datetime (tests inject it).
"""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass, field

from ansible_collections.baremetal.capi.plugins.module_utils.errors import CapiError, Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions, convert, meta, names
from ansible_collections.baremetal.capi.plugins.module_utils.runner import Step
from ansible_collections.baremetal.capi.plugins.module_utils.store import mutate as rmw

MSG_REPLICAS = "KubeadmControlPlane can't remediate if current replicas are less or equal to 1"
MSG_PROVISIONING = (
    "KubeadmControlPlane waiting for control plane Machine provisioning to complete before triggering remediation"
)
MSG_DELETING = (
    "KubeadmControlPlane waiting for control plane Machine deletion to complete before triggering remediation"
)
MSG_UNSAFE = (
    "KubeadmControlPlane can't remediate this Machine because this could result in loosing Kubernetes control "
    "plane components or in etcd quorum loss"
)
_COMPONENTS = (
    names.KCP_MACHINE_API_SERVER_POD_HEALTHY,
    names.KCP_MACHINE_CONTROLLER_MANAGER_POD_HEALTHY,
    names.KCP_MACHINE_SCHEDULER_POD_HEALTHY,
)


@dataclass
class Outcome:
    """``step``: set when remediation deleted a Machine (KCP does nothing else this step); ``data``: why not."""

    step: Step | None = None
    data: dict = field(default_factory=dict)


def _now(clock) -> datetime.datetime:
    t = clock() if clock else datetime.datetime.now(datetime.UTC)
    return t.astimezone(datetime.UTC).replace(microsecond=0)


def _fmt(t: datetime.datetime) -> str:
    return t.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse(value: str | None) -> datetime.datetime | None:
    if not value:
        return None
    try:
        return datetime.datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(datetime.UTC)
    except ValueError:
        return None


def strategy(kcp: dict) -> dict:
    """(maxRetry or None, retryPeriod s, minHealthyPeriod s) from v1beta2 ``spec.remediation``; v1beta1's
    ``spec.remediationStrategy`` (durations) is read too."""
    spec = kcp.get("spec") or {}
    new = spec.get("remediation") or {}
    old = spec.get("remediationStrategy") or {}
    max_retry = new.get("maxRetry", old.get("maxRetry"))
    where = meta.ref(kcp)
    retry = new.get("retryPeriodSeconds")
    if retry is None:
        period = old.get("retryPeriod")
        retry = convert.duration_seconds(period, where, "spec.remediationStrategy.retryPeriod") if period else 0
    healthy = new.get("minHealthyPeriodSeconds")
    if healthy is None:
        period = old.get("minHealthyPeriod")
        healthy = names.KCP_DEFAULT_MIN_HEALTHY_PERIOD_SECONDS
        if period:
            healthy = convert.duration_seconds(period, where, "spec.remediationStrategy.minHealthyPeriod")
    for key, value in (("maxRetry", max_retry), ("retryPeriodSeconds", retry), ("minHealthyPeriodSeconds", healthy)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
            raise Invalid(
                f"{value!r} is not a non-negative integer", obj=meta.ref(kcp), field=f"spec.remediation.{key}"
            )
    return {"maxRetry": max_retry, "retryPeriodSeconds": int(retry), "minHealthyPeriodSeconds": int(healthy)}


# -- who ---------------------------------------------------------------------------------------------------------


def _status(machine: dict, ctype: str) -> str | None:
    cond = conditions.get(machine, ctype)
    return None if cond is None else cond.get("status")


def is_unhealthy(machine: dict) -> bool:
    """MachineHealthCheck said so (HealthCheckSucceeded False), or an owner remediation is pending."""
    if _status(machine, names.HEALTH_CHECK_SUCCEEDED) == conditions.FALSE:
        return True
    return to_be_remediated(machine)


def to_be_remediated(machine: dict) -> bool:
    """IsUnhealthyAndOwnerRemediated, where a missing HealthCheckSucceeded does not count as healthy."""
    return (
        _status(machine, names.OWNER_REMEDIATED) == conditions.FALSE
        and _status(machine, names.HEALTH_CHECK_SUCCEEDED) != conditions.TRUE
    )


def _node(machine: dict) -> str | None:
    return ((machine.get("status") or {}).get("nodeRef") or {}).get("name")


def _healthy_or_node_ready(machine: dict, ctypes) -> bool:
    """The KCP conditions when the Machine has them, else whether its Node is Ready."""
    seen = [_status(machine, c) for c in ctypes if conditions.get(machine, c) is not None]
    if seen:
        return all(s == conditions.TRUE for s in seen)
    return _status(machine, names.NODE_READY) == conditions.TRUE


def _rank(machine: dict, etcd_managed: bool) -> tuple:
    """Lower goes first (getMachineToBeRemediated): the annotation, no Node, etcd issues, component issues, age."""
    etcd = (names.KCP_MACHINE_ETCD_MEMBER_HEALTHY, names.KCP_MACHINE_ETCD_POD_HEALTHY) if etcd_managed else ()
    return (
        names.REMEDIATE_MACHINE_ANNOTATION not in meta.annotations(machine),
        _node(machine) is not None,
        *(_status(machine, c) == conditions.TRUE for c in etcd + _COMPONENTS),
        machine["metadata"].get("creationTimestamp", ""),
        meta.name(machine),
    )


def pick(candidates: list[dict], etcd_managed: bool = True) -> dict | None:
    return min(candidates, key=lambda m: _rank(m, etcd_managed)) if candidates else None


# -- may it --------------------------------------------------------------------------------------------------


def etcd_managed(kcp: dict) -> bool:
    cc = ((kcp.get("spec") or {}).get("kubeadmConfigSpec") or {}).get("clusterConfiguration") or {}
    return not (cc.get("etcd") or {}).get("external")


def initialized(kcp: dict, cluster: dict) -> bool:
    for obj in (kcp, cluster):
        if ((obj.get("status") or {}).get("initialization") or {}).get("controlPlaneInitialized"):
            return True
    return False


def members_from_store(machines: list[dict]) -> list[dict]:
    """The etcd members the store can see: one per control-plane Machine with a Node (stacked etcd)."""
    return [{"name": _node(m), "isLearner": False} for m in machines if _node(m) and not meta.is_deleting(m)]


def members_from_health(health) -> list[dict] | None:
    """etcd's answer as this module takes it, from an object with ``members`` (``id``, ``name``, ``is_learner``)
    and ``healthy`` (the ids that answered healthy), such as KCP's etcd health; None stays None (unreachable)."""
    if health is None:
        return None
    healthy = set(getattr(health, "healthy", ()) or ())
    return [
        {"name": m.name, "id": m.id, "isLearner": bool(m.is_learner), "healthy": m.id in healthy}
        for m in health.members
    ]


def target_etcd_healthy(machines: list[dict], members: list[dict], removing: str) -> tuple[bool, dict]:
    """targetEtcdClusterHealthy: the voting members left keep a quorum of healthy ones; no learner left."""
    by_node = {_node(m): m for m in machines if _node(m)}
    healthy, unhealthy, voting, learners = [], [], 0, 0
    for member in members:
        name = member.get("name") or ""
        if not name:  # a member still starting
            learners += 1
            unhealthy.append("1 member starting")
            continue
        if name == removing:
            continue
        if member.get("isLearner"):
            learners += 1
        else:
            voting += 1
        machine = by_node.get(name)
        if member.get("healthy") is not None:
            ok = bool(member["healthy"])
        elif machine is None:
            ok = not member.get("alarms")
        else:
            ok = _healthy_or_node_ready(machine, (names.KCP_MACHINE_ETCD_MEMBER_HEALTHY,))
        (healthy if ok else unhealthy).append(f"{name} ({meta.name(machine) if machine else 'no machine'})")
    quorum = voting // 2 + 1
    safe = voting - len(unhealthy) >= quorum and learners == 0
    return safe, {"healthy": healthy, "unhealthy": unhealthy, "voting": voting, "quorum": quorum}


def can_safely_remediate(kcp: dict, machines: list[dict], victim: dict, etcd_members) -> tuple[bool, dict]:
    """canSafelyRemediateMachine: one full set of control-plane components and etcd quorum after removal."""
    rest = [m for m in machines if meta.name(m) != meta.name(victim)]
    components = _COMPONENTS + ((names.KCP_MACHINE_ETCD_POD_HEALTHY,) if etcd_managed(kcp) else ())
    if not any(_healthy_or_node_ready(m, components) for m in rest):
        return False, {"why": "no other Machine has healthy control plane components"}
    if not etcd_managed(kcp):
        return True, {}
    member = _node(victim)
    if not member:  # upstream: no member to check; remediation is the user's intent
        return True, {"why": "the Machine hosts no known etcd member"}
    if callable(etcd_members):  # asked only now, when the answer decides
        try:
            etcd_members = etcd_members()
        except CapiError as exc:
            etcd_members, why = None, exc.message
        else:
            why = "no member answers"
        if etcd_members is None:
            # Asked and no answer (a cluster that lost quorum answers nothing): upstream reads member health from
            # the Machines' EtcdMemberHealthy conditions, which go Unknown when etcd cannot be reached, and counts
            # Unknown as unhealthy - never the store's last-known NodeReady, which a dead cluster cannot update.
            return False, {"why": f"cannot check etcd cluster health before remediation: {why}", "members_from": "etcd"}
    if etcd_members is not None and hasattr(etcd_members, "members"):
        etcd_members = members_from_health(etcd_members)
    source = "etcd" if etcd_members is not None else "store"
    members = list(etcd_members) if etcd_members is not None else members_from_store(machines)
    if not members:
        return False, {"why": "cannot check etcd cluster health before remediation, etcd member list is empty"}
    safe, detail = target_etcd_healthy(machines, members, member)
    detail["members_from"] = source
    return safe, detail


# -- retry limits ------------------------------------------------------------------------------------------------


def _annotation_data(value: str | None, where: str) -> dict | None:
    if not value:
        return None
    try:
        data = json.loads(value)
    except ValueError:
        raise Invalid(f"not the JSON KCP writes: {value!r}", obj=where, field="metadata.annotations") from None
    return data if isinstance(data, dict) else None


def check_retry_limits(kcp: dict, victim: dict, now: datetime.datetime) -> tuple[dict, str | None, str | None]:
    """checkRetryLimits: (remediation data for this try, refusal reason, refusal message)."""
    data = {"machine": meta.name(victim), "timestamp": _fmt(now), "retryCount": 0}
    last = _annotation_data(meta.annotations(victim).get(names.REMEDIATION_FOR_ANNOTATION), meta.ref(victim))
    if last is None:
        return data, None, None
    st = strategy(kcp)
    min_healthy = datetime.timedelta(seconds=st["minHealthyPeriodSeconds"])
    retry_period = datetime.timedelta(seconds=st["retryPeriodSeconds"])
    # a missing timestamp counts as long ago: both periods expired
    last_time = _parse(last.get("timestamp")) or now - 2 * max(min_healthy, retry_period)
    if last_time + min_healthy <= now:
        return data, None, None  # healthy long enough: a new retry sequence
    data["retryCount"] = int(last.get("retryCount") or 0)
    if last_time + retry_period > now:
        seconds = st["retryPeriodSeconds"]
        return (
            data,
            names.KCP_REMEDIATION_DEFERRED_REASON,
            f"KubeadmControlPlane can't remediate this machine because the operation already failed in the latest "
            f"{seconds}s (RetryPeriodSeconds)",
        )
    if st["maxRetry"] is not None and data["retryCount"] >= st["maxRetry"]:
        return (
            data,
            names.KCP_CANNOT_BE_REMEDIATED_REASON,
            f"KubeadmControlPlane can't remediate this machine because the operation already failed "
            f"{st['maxRetry']} times (MaxRetry)",
        )
    data["retryCount"] += 1
    return data, None, None


# -- writes ------------------------------------------------------------------------------------------------------


def _write_machine(store, machine: dict, mutate, status: bool) -> None:
    """``mutate(machine) -> bool`` on the stored Machine (its status with ``status``); a Machine gone is left."""
    rmw.mutate(store, "Machine", meta.name(machine), meta.namespace(machine), mutate, status=status, missing_ok=True)


def _write_kcp(store, kcp: dict, annotations: dict, last: dict | None) -> dict:
    """Set (value) or drop (None) KCP annotations, then status.lastRemediation; returns the stored KCP."""
    ns, name = meta.namespace(kcp), meta.name(kcp)

    def annotate(fresh: dict) -> bool:
        ann = fresh["metadata"].setdefault("annotations", {})
        before = dict(ann)
        for key, value in annotations.items():
            if value is None:
                ann.pop(key, None)
            else:
                ann[key] = value
        return ann != before

    def record(fresh: dict) -> bool:
        if (fresh.get("status") or {}).get("lastRemediation") == last:
            return False
        fresh.setdefault("status", {})["lastRemediation"] = last
        return True

    fresh = rmw.mutate(store, "KubeadmControlPlane", name, ns, annotate)
    if last is not None:
        fresh = rmw.mutate(store, "KubeadmControlPlane", name, ns, record, status=True)
    return fresh


def _last_remediation(data: dict) -> dict:
    return {"machine": data["machine"], "time": data["timestamp"], "retryCount": int(data.get("retryCount") or 0)}


def _refuse(store, machine: dict, reason: str, message: str, check: bool, clock) -> dict:
    if not check:
        _write_machine(
            store,
            machine,
            lambda m: conditions.set_condition(m, names.OWNER_REMEDIATED, False, reason, message, clock=clock),
            status=True,
        )
    return {"remediation": {"machine": meta.name(machine), "remediating": False, "reason": reason, "message": message}}


# -- the step ------------------------------------------------------------------------------------------------------


def _cleanup(store, machines: list[dict], check: bool) -> None:
    """Healthy again: the pending OwnerRemediated goes (upstream's first loop)."""
    for m in machines:
        if meta.is_deleting(m) or check:
            continue
        if _status(m, names.HEALTH_CHECK_SUCCEEDED) == conditions.TRUE and (
            _status(m, names.OWNER_REMEDIATED) == conditions.FALSE
        ):
            _write_machine(store, m, lambda x: conditions.delete(x, names.OWNER_REMEDIATED), status=True)


def _carry_over(store, kcp: dict, machines: list[dict], check: bool) -> tuple[dict, bool]:
    """The in-progress annotation goes to the replacement as remediation-for; (kcp, still in progress)."""
    value = meta.annotations(kcp).get(names.REMEDIATION_IN_PROGRESS_ANNOTATION)
    data = _annotation_data(value, meta.ref(kcp))
    if data is None:
        return kcp, False
    since = _parse(data.get("timestamp"))
    newer = [
        m
        for m in machines
        if meta.name(m) != data.get("machine")
        and since is not None
        and (_parse(m["metadata"].get("creationTimestamp")) or since) > since
        and not meta.is_deleting(m)
    ]
    if not newer:
        return kcp, True
    if check:
        return kcp, False
    replacement = max(newer, key=lambda m: (m["metadata"].get("creationTimestamp", ""), meta.name(m)))
    if names.REMEDIATION_FOR_ANNOTATION not in meta.annotations(replacement):
        _write_machine(
            store,
            replacement,
            lambda m: (
                m["metadata"].setdefault("annotations", {}).setdefault(names.REMEDIATION_FOR_ANNOTATION, value) == value
            ),
            status=False,
        )
    return _write_kcp(store, kcp, {names.REMEDIATION_IN_PROGRESS_ANNOTATION: None}, None), False


def reconcile_unhealthy_machines(
    store, kcp: dict, cluster: dict, machines: list[dict], *, etcd_members=None, check=False, clock=None
) -> Outcome:
    """One remediation step over the control plane's Machines (live and deleting)."""
    now = _now(clock)
    _cleanup(store, machines, check)
    kcp, in_progress = _carry_over(store, kcp, machines, check)
    candidates = [m for m in machines if to_be_remediated(m)]
    victim = pick(candidates, etcd_managed(kcp))
    if victim is None or meta.is_deleting(victim):
        return Outcome()
    if in_progress:
        return Outcome(data={"remediation": {"machine": meta.name(victim), "remediating": False,
                                             "message": "another remediation is already in progress"}})  # fmt: skip
    data, reason, message = check_retry_limits(kcp, victim, now)
    if reason:
        return Outcome(data=_refuse(store, victim, reason, message, check, clock))
    detail: dict = {}
    if initialized(kcp, cluster):
        live = [m for m in machines if not meta.is_deleting(m)]
        if len(machines) <= 1:
            return Outcome(
                data=_refuse(store, victim, names.KCP_CANNOT_BE_REMEDIATED_REASON, MSG_REPLICAS, check, clock)
            )
        if any(not is_unhealthy(m) and not _node(m) for m in live):
            return Outcome(
                data=_refuse(store, victim, names.KCP_REMEDIATION_DEFERRED_REASON, MSG_PROVISIONING, check, clock)
            )
        if len(live) < len(machines):
            return Outcome(
                data=_refuse(store, victim, names.KCP_REMEDIATION_DEFERRED_REASON, MSG_DELETING, check, clock)
            )
        safe, detail = can_safely_remediate(kcp, live, victim, etcd_members)
        if not safe:
            out = _refuse(store, victim, names.KCP_CANNOT_BE_REMEDIATED_REASON, MSG_UNSAFE, check, clock)
            out["remediation"]["etcd"] = detail
            return Outcome(data=out)
    name = meta.name(victim)
    message = f"deleting {name} for remediation (retry {data['retryCount']})"
    result = {"deleted": name, "remediation": {"machine": name, "remediating": True, "retryCount": data["retryCount"]}}
    if detail:
        result["remediation"]["etcd"] = detail
    if check:
        return Outcome(step=Step(changed=True, message="would be " + message, data=result))
    store.delete("Machine", name, meta.namespace(victim))
    _write_machine(
        store,
        victim,
        lambda m: conditions.set_condition(
            m, names.OWNER_REMEDIATED, False, names.KCP_REMEDIATION_MACHINE_DELETING_REASON, "Machine is deleting",
            clock=clock,
        ),
        status=True,
    )  # fmt: skip
    _write_kcp(store, kcp, {names.REMEDIATION_IN_PROGRESS_ANNOTATION: json.dumps(data)}, _last_remediation(data))
    return Outcome(step=Step(changed=True, message=message, requeue_after=2, data=result))
