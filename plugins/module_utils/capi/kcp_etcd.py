# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What KubeadmControlPlane does with a workload cluster's etcd: health before a change, members on delete.

- ``etcd_health``: the members, which of them answer with a leader, and which Machine each belongs to
  (None when no member answers: etcd is not reachable from here).
- ``removal_refused``: why deleting a Machine now would cost etcd its quorum, or None - asked before KCP marks
  a victim for deletion, so that a refused removal deletes nothing.
- ``pre_terminate``: KCP's ``reconcilePreTerminateHook`` - for the deleting Machine with the oldest
  deletionTimestamp, once the Machine controller waits on the hook (``Deleting`` reason
  ``WaitingForPreTerminateHook``) and no other pre-terminate hook is left: leadership moves to the newest
  Machine not being deleted, the member is removed (refused when that loses quorum), then the hook goes.
  With a single Machine, or external etcd, only the hook goes (upstream).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ansible_collections.baremetal.capi.plugins.module_utils.capi import etcd
from ansible_collections.baremetal.capi.plugins.module_utils.capi import workload as wl
from ansible_collections.baremetal.capi.plugins.module_utils.errors import CapiError, NotFound
from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions, meta, names
from ansible_collections.baremetal.capi.plugins.module_utils.runner import Step


@dataclass
class Health:
    client: etcd.EtcdClient
    members: list[etcd.Member]
    statuses: dict[str, dict]
    healthy: set[str]
    by_machine: dict[str, etcd.Member] = field(default_factory=dict)

    def leader(self) -> str | None:
        return self.client.leader_id(self.statuses)

    def member_of(self, machine: dict) -> etcd.Member | None:
        return self.by_machine.get(meta.name(machine))


def stacked(kcp: dict) -> bool:
    cc = ((kcp.get("spec") or {}).get("kubeadmConfigSpec") or {}).get("clusterConfiguration") or {}
    return not (cc.get("etcd") or {}).get("external")


def default_factory(store, cluster: dict):
    """``machines -> EtcdClient`` for the cluster: members at the Machines' InternalIPs, the etcd CA's cert."""

    def make(machines: list[dict]) -> etcd.EtcdClient:
        nodes = None
        if any(((m.get("status") or {}).get("nodeRef") or {}).get("name") for m in machines):
            try:  # the kubelets' addresses: where stacked members listen, whatever the inventory said
                client = wl.client_for(store, meta.name(cluster), meta.namespace(cluster))
                nodes = {meta.name(n): n for n in client.list_nodes()}
            except CapiError:
                nodes = None
        try:
            return etcd.client_for(store, meta.name(cluster), meta.namespace(cluster), machines, nodes)
        except NotFound:
            raise etcd.EtcdUnavailable(f"Secret {meta.name(cluster)}-etcd does not exist yet") from None

    return make


def etcd_health(factory, machines: list[dict]) -> Health | None:
    """The members and their health, or None when no member answers."""
    try:
        client = factory(machines)
        members = client.members()
    except etcd.EtcdUnavailable:
        return None
    statuses = client.statuses(members)
    health = Health(client, members, statuses, client.healthy_ids(members, statuses))
    for m in machines:
        member = etcd.member_for(members, m)
        if member is not None:
            health.by_machine[meta.name(m)] = member
    return health


def unhealthy_members(health: Health | None, machines: list[dict]) -> list[str]:
    """The Machines (with a Node) whose member is missing, unhealthy or still a learner; [] if etcd is unreachable."""
    if health is None:
        return []
    out = []
    for m in machines:
        if not ((m.get("status") or {}).get("nodeRef") or {}).get("name"):
            continue
        member = health.member_of(m)
        if member is None:
            out.append(f"{meta.name(m)} (no etcd member)")
        elif member.is_learner:
            out.append(f"{meta.name(m)} (etcd member {member.name or member.id} is a learner)")
        elif member.id not in health.healthy:
            out.append(f"{meta.name(m)} (etcd member {member.name or member.id} is not healthy)")
    return out


def removal_refused(health: Health | None, victim: dict) -> str | None:
    if health is None:
        return None
    member = health.member_of(victim)
    if member is None:
        return None
    ok, why = etcd.removal_keeps_quorum(health.members, health.healthy, member.id)
    return None if ok else f"not deleting {meta.name(victim)}: {why}"


def _hook_waiting_reason(machine: dict) -> bool:
    cond = conditions.get(machine, names.DELETING) or {}
    return (
        cond.get("status") == conditions.TRUE
        and cond.get("reason") == names.DELETING_WAITING_FOR_PRE_TERMINATE_HOOK_REASON
    )


def pre_terminate(store, kcp: dict, machines: list[dict], factory, *, check: bool = False) -> Step | None:
    """One step of the hook; None when no Machine is being deleted."""
    deleting = [m for m in machines if meta.is_deleting(m)]
    if not deleting:
        return None
    waiting = Step(done=False, message="", requeue_after=5)
    without = [m for m in deleting if names.KCP_CLEANUP_HOOK not in meta.annotations(m)]
    if without:
        waiting.message = f"waiting for {', '.join(meta.name(m) for m in without)} to be deleted"
        return waiting
    victim = min(deleting, key=lambda m: (m["metadata"]["deletionTimestamp"], meta.name(m)))
    vname = meta.name(victim)
    others = sorted(
        k
        for k in meta.annotations(victim)
        if k.startswith(names.PRE_TERMINATE_HOOK_PREFIX) and k != names.KCP_CLEANUP_HOOK
    )
    if others:
        waiting.message = f"{vname}: waiting for the other pre-terminate hook(s) {', '.join(others)}"
        return waiting
    if not _hook_waiting_reason(victim):
        waiting.message = f"waiting for {vname} to be drained and to wait on the kcp-cleanup hook"
        return waiting
    done_what = "hook released"
    if len(machines) > 1 and stacked(kcp):
        health = etcd_health(factory, machines)
        if health is None:
            waiting.message = (
                f"{vname}: etcd does not answer on any control-plane address (port {etcd.CLIENT_PORT}): "
                "its member cannot be removed yet"
            )
            return waiting
        member = health.member_of(victim)
        if member is not None:
            refused = removal_refused(health, victim)
            if refused:
                return Step(done=False, message=refused, requeue_after=10, data={"refused": vname})
            if check:
                return Step(changed=True, message=f"{vname}: would remove etcd member {member.name or member.id}")
            live = [m for m in machines if not meta.is_deleting(m)]
            candidate = max(
                live, key=lambda m: (m["metadata"].get("creationTimestamp", ""), meta.name(m)), default=None
            )
            cmember = health.member_of(candidate) if candidate is not None else None
            try:
                if health.leader() == member.id and cmember is not None:
                    health.client.move_leader(cmember.id)
                health.client.remove_member(member.id)
            except etcd.QuorumRefused as exc:
                return Step(done=False, message=f"not deleting {vname}: {exc.message}", requeue_after=10)
            except CapiError as exc:
                waiting.message = f"{vname}: removing its etcd member: {exc.message}"
                return waiting
            done_what = f"etcd member {member.name or member.id} removed, hook released"
    if check:
        return Step(changed=True, message=f"{vname}: would release the kcp-cleanup hook")
    fresh = store.get("Machine", vname, meta.namespace(victim))
    if (fresh["metadata"].get("annotations") or {}).pop(names.KCP_CLEANUP_HOOK, None) is not None:
        store.update(fresh)
    return Step(done=False, changed=True, message=f"{vname}: {done_what}", requeue_after=2, data={"released": vname})
