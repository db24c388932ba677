# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The MaasMachine flow: CAPMAAS's MaasMachine controller plus what Cluster API core does (cluster-api-provider-maas
controllers/maasmachine_controller.go reconcileNormal).

``MachineManager.step(name, ns)`` is one reconcile of one MaasMachine:
owner Machine, Cluster infrastructure, finalizer, bootstrap data, allocate
(recording the providerID at once: it is the idempotency key), swap off,
deploy, follow the MAAS state (Failed deployment and Broken release and forget
the machine), power on only a machine MAAS says is ``off``, the DNS attachment
of control-plane machines (the DNS reconcile runs here, every round), the
providerID on the workload Node, then the Machine's core duties
(capi.machine).  Deletion is in maas/machine_delete.py (handed the store
and the machine service, never this manager); the step's report is
maas/state.py ``report``.

This is the controller half: it reads the objects, decides and writes them; every MAAS call goes through
the machine service (``maas/machine_service.py``), as CAPMAAS's reconciler goes through
``pkg/maas/machine``.
"""

from __future__ import annotations

import copy
import time

from ansible_collections.baremetal.capi.plugins.module_utils.capi import cluster as capi_cluster
from ansible_collections.baremetal.capi.plugins.module_utils.capi import infra_machine, refs
from ansible_collections.baremetal.capi.plugins.module_utils.capi import machine as capi_machine
from ansible_collections.baremetal.capi.plugins.module_utils.capi import workload as wl
from ansible_collections.baremetal.capi.plugins.module_utils.errors import (
    CapiError,
    Invalid,
    NoHostAvailable,
    NotFound,
    Requeue,
)
from ansible_collections.baremetal.capi.plugins.module_utils.maas import constraints as maas_constraints
from ansible_collections.baremetal.capi.plugins.module_utils.maas import (
    dns,
    lxd,
    machine_delete,
    network,
    state,
)
from ansible_collections.baremetal.capi.plugins.module_utils.maas.client import MaasConflict, MaasError
from ansible_collections.baremetal.capi.plugins.module_utils.maas.machine_service import MachineService
from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions, meta, names
from ansible_collections.baremetal.capi.plugins.module_utils.runner import Step

KIND = "MaasMachine"


def agent_name(mm: dict) -> str:
    """Written on the MAAS machine at allocation: finds it again if the run stops before the providerID is saved."""
    return f"baremetal.capi/{meta.namespace(mm)}/{meta.name(mm)}/{mm['metadata'].get('uid', '')}"


def failed_machines(mm: dict, now: float) -> dict[str, float]:
    """system_id -> when its deployment failed, for the failures still inside the cooldown."""
    out = {}
    for item in (meta.annotations(mm).get(names.MAAS_FAILED_MACHINES_ANNOTATION) or "").split(","):
        sid, _sep, when = item.partition("@")
        if sid and when.isdigit() and now - int(when) < names.MAAS_FAILED_COOLDOWN:
            out[sid] = float(when)
    return out


def forget(after: dict) -> None:
    """Drop the machine: the next reconcile allocates another (CAPMAAS's deferred release on deploy errors)."""
    spec, status = after.setdefault("spec", {}), after.setdefault("status", {})
    spec.pop("providerID", None)
    spec.pop("systemID", None)
    for key in ("hostname", "machineState", "addresses"):
        status.pop(key, None)
    status["machinePowered"] = False
    status["ready"] = False


def why_not(machines: list[dict], constraints: dict, avoid=()) -> dict[str, str]:
    """machine -> why op=allocate did not give it, for the constraints this collection sends (cpu_count, mem,
    zone, pool, tags, not_tags, system_id): MAAS's own 409 names only the constraints, not the machines.
    The first rule a machine fails, in the order of MAAS's get_available_machines_for_acquisition (Ready and
    unowned) then AcquireNodeForm's filters; a machine that passes them all was refused for a reason these rules
    do not see (another constraint, or taken since)."""
    wanted_ids = constraints.get("system_id")
    wanted_ids = {wanted_ids} if isinstance(wanted_ids, str) else set(wanted_ids or ())
    tags, not_tags = set(constraints.get("tags") or ()), set(constraints.get("not_tags") or ())
    out = {}
    for m in machines:
        sid = m.get("system_id") or "?"
        name = f"{m.get('hostname') or sid} ({sid})" if m.get("hostname") else sid
        status, owner = m.get("status_name"), m.get("owner")
        zone, pool = (m.get("zone") or {}).get("name"), (m.get("pool") or {}).get("name")
        have = set(m.get("tag_names") or ())
        if sid in avoid:
            why = "its deployment failed recently"
        elif wanted_ids and sid not in wanted_ids:
            why = "not among the system IDs asked for"
        elif status != names.MAAS_STATE_READY or owner:
            why = f"status {status}" + (f", owned by {owner}" if owner else "")
        elif constraints.get("zone") and zone != constraints["zone"]:
            why = f"in zone {zone}"
        elif constraints.get("pool") and pool != constraints["pool"]:
            why = f"in pool {pool}"
        elif int(m.get("cpu_count") or 0) < int(float(constraints.get("cpu_count") or 0)):
            why = f"{m.get('cpu_count')} CPUs"
        elif float(m.get("memory") or 0) < float(constraints.get("mem") or 0):
            why = f"{m.get('memory')} MiB of memory"
        elif tags - have:
            why = "without tag(s) " + ", ".join(sorted(tags - have))
        elif have & not_tags:
            why = "tagged " + ", ".join(sorted(have & not_tags))
        else:
            why = "matches these constraints; MAAS refused it for another reason (or it was just taken)"
        out[name] = why
    return out


class MachineManager:
    """Reconciles MaasMachines against a store, MAAS (through ``self.maas``, the machine service made from the
    client) and the workload clusters."""

    KIND = KIND

    def __init__(
        self, store, client, *, workload_kubeconfig=None, disable_swap=True, not_tags=(), subnets=None, clock=None
    ):
        self.store = store
        self.maas = MachineService(client, subnets=subnets)  # every MAAS call
        self.workload_kubeconfig = workload_kubeconfig
        self.disable_swap = disable_swap
        # A machine remediation gave up on is tagged; allocation never picks it again.
        self.not_tags = sorted(set(not_tags or ()) | {names.MAAS_UNHEALTHY_TAG})
        self.clock = clock

    # -- helpers -----------------------------------------------------------------------

    def _cond(self, obj, ctype, status, reason, message=""):
        return conditions.set_condition(obj, ctype, status, reason, message, clock=self.clock)

    def _save(self, before: dict, after: dict, check: bool) -> dict:
        return refs.save(self.store, before, after, check)

    def workload(self, cluster_name: str, ns: str):
        try:
            return wl.client_for(self.store, cluster_name, ns, self.workload_kubeconfig)
        except NotFound:
            raise Requeue(f"waiting for the {wl.kubeconfig_secret_name(cluster_name)} Secret", after=10) from None

    def _wait(self, mm, after, ctype, reason, message, check, after_s=5.0):
        self._cond(after, ctype, False, reason, message)
        self._save(mm, after, check)
        return Step(changed=after != mm, message=message, requeue_after=after_s, data=state.report(after))

    # -- one step ----------------------------------------------------------------------

    def step(self, name: str, ns: str, check: bool = False) -> Step:
        mm = refs.get_or_none(self.store, KIND, name, ns)
        if mm is None:
            raise Invalid(f'MaasMachine "{name}" not found', obj=f"MaasMachine {ns}/{name}")
        state.validate(mm)
        machine = infra_machine.owner_machine(self.store, mm, check=check)
        mm = self.store.get(KIND, name, ns) if not check else mm
        if meta.is_deleting(mm):
            return self._delete(mm, machine, check=check)
        after = copy.deepcopy(mm)
        cluster = infra_machine.owning_cluster(self.store, KIND, machine)
        cluster_name = meta.name(cluster)
        if refs.is_paused(cluster, mm):
            return Step(message="paused", requeue_after=30, data=state.report(mm))
        cstep = capi_cluster.reconcile(self.store, cluster, clock=self.clock, check=check)
        if not cstep.done:
            return self._wait(
                mm,
                after,
                names.MAAS_MACHINE_DEPLOYED,
                names.MAAS_WAITING_FOR_CLUSTER_INFRASTRUCTURE_REASON,
                f"Cluster {cluster_name}: {cstep.message}",
                check,
            )
        meta.add_finalizer(after, names.MAAS_MACHINE_FINALIZER)
        labels = after["metadata"].setdefault("labels", {})
        labels[names.CLUSTER_NAME_LABEL] = cluster_name
        if state.is_control_plane(machine):
            labels.setdefault(names.CONTROL_PLANE_LABEL, "")
        secret_name = infra_machine.bootstrap_data_secret(machine)
        if not secret_name:
            return self._wait(
                mm,
                after,
                names.MAAS_MACHINE_DEPLOYED,
                names.MAAS_WAITING_FOR_BOOTSTRAP_DATA_REASON,
                "waiting for the bootstrap data (Machine spec.bootstrap.dataSecretName)",
                check,
            )
        if not after["spec"].get("providerID"):
            return self._allocate(mm, after, machine, check)
        return self._follow(mm, after, machine, secret_name, check)

    # -- allocate ----------------------------------------------------------------------

    def _allocate(self, mm: dict, after: dict, machine: dict, check: bool) -> Step:
        constraints = maas_constraints.allocate_constraints(after, machine, self.not_tags)
        network.check(after)  # a bad staticIP is refused before a machine is taken
        if lxd.enabled(after):
            vm = self.maas.compose_vm(after, machine, check=check)
            if vm is None:  # check mode, nothing composed yet
                return Step(done=True, changed=True, message=f"would compose VM {lxd.vm_name(after)} on a VM host")
            constraints = {"system_id": vm}  # the composed VM itself
        found, avoid = [], set()
        if mm["metadata"].get("uid"):
            found = self.maas.allocated_to(agent_name(mm))
        try:
            if found:
                m = found[0]  # allocated by an earlier run that stopped before it saved the providerID
            else:
                avoid = set(failed_machines(after, self._now())) - {constraints.get("system_id")}
                if avoid and "system_id" not in constraints:
                    constraints = self.maas.excluding(constraints, avoid)
                m = self.maas.allocate(constraints, agent_name=agent_name(mm), dry_run=check)
        except MaasConflict as exc:
            self._cond(after, names.MAAS_MACHINE_DEPLOYED, False, names.MAAS_MACHINE_DEPLOYING_REASON, exc.content)
            self._save(mm, after, check)
            wanted = ", ".join(f"{k}={v}" for k, v in constraints.items() if v not in (None, "", []))
            text = f"no available MAAS machine matching {wanted}: {exc.content}"
            try:  # which machines MAAS has and why none was given: what a deadline's message needs (read only)
                listed = self.maas.list_machines()
            except (MaasError, Requeue):
                listed = None  # the 409's own words then
            skipped = why_not(listed or [], constraints, avoid)
            if listed is not None:
                text += f"; {len(listed)} MAAS machine(s)"
                if skipped:
                    text += ": " + "; ".join(f"{n} {why}" for n, why in sorted(skipped.items())[:20])
                    if len(skipped) > 20:
                        text += f"; ... {len(skipped) - 20} more"
            raise NoHostAvailable(
                text,
                selector=wanted,
                failure_domain=constraints.get("zone"),
                seen=len(listed or []),
                skipped=skipped,
                after=30,
            ) from None
        zone, system_id = m["zone"]["name"], m["system_id"]
        if check:
            return Step(
                done=True,
                changed=True,
                message=f"would allocate {m['hostname']} ({system_id}, zone {zone})",
                data=state.report(after, would_allocate={"system_id": system_id, "hostname": m["hostname"]}),
            )
        spec = after["spec"]
        spec["providerID"] = state.provider_id(zone, system_id)
        spec["systemID"] = system_id
        self._cond(after, names.MAAS_MACHINE_DEPLOYED, False, names.MAAS_MACHINE_DEPLOY_STARTED_REASON)
        # CAPMAAS patches the providerID right after allocation: the idempotency key
        self._save(mm, after, check)
        return Step(changed=True, message=f"allocated {m['hostname']} ({system_id})", requeue_after=0)

    # -- deploy and follow ---------------------------------------------------------------

    def _now(self) -> float:
        return self.clock().timestamp() if self.clock else time.time()

    def _remember_failed(self, after: dict, system_id: str) -> None:
        """Keep a machine whose deployment failed out of this MaasMachine's next allocations for a while."""
        kept = dict(failed_machines(after, self._now()))
        kept[system_id] = self._now()
        value = ",".join(f"{sid}@{int(t)}" for sid, t in sorted(kept.items()))
        after["metadata"].setdefault("annotations", {})[names.MAAS_FAILED_MACHINES_ANNOTATION] = value

    def _fail(self, mm, after, m, reason, message, release: bool):
        """Failed deployment / Broken / unexpected release: release (if asked) and forget; the item fails."""
        if release:
            try:
                self.maas.release(m["system_id"], comment=f"{meta.ref(mm)}: {message}")
            except MaasConflict:
                pass  # already releasing
        status = after.setdefault("status", {})
        status["failureReason"] = names.MAAS_UPDATE_MACHINE_ERROR
        status["failureMessage"] = f"{m['hostname']} ({m['system_id']}): {message}"
        self._cond(after, names.MAAS_MACHINE_DEPLOYED, False, reason, status["failureMessage"])
        self._cond(after, names.READY, False, reason, status["failureMessage"])
        forget(after)
        self._save(mm, after, False)
        released = " released;" if release else ""
        raise CapiError(
            f"MAAS machine {m['hostname']} ({m['system_id']}): {message};{released} the next run allocates another",
            obj=meta.ref(mm),
        )

    def _deploy(self, mm, after, m, secret_name, check) -> dict:
        ns = meta.namespace(mm)
        secret = self.store.get("Secret", secret_name, ns)
        user_data = state.user_data_b64(secret, f"Secret {ns}/{secret_name}")
        osystem, series = state.split_image(after["spec"]["image"])
        try:
            return self.maas.deploy(
                m,
                user_data_b64=user_data,
                osystem=osystem,
                distro_series=series,
                # CAPMAAS deploys a composed VM without ephemeral_deploy
                ephemeral=bool(after["spec"].get("deployInMemory")) and not lxd.enabled(after),
                static=network.check(after),
                swap_off=self.disable_swap,
            )
        except MaasError as exc:
            # CAPMAAS: a deferred release and the providerID cleared; the next reconcile allocates another
            self._fail(mm, after, m, names.MAAS_MACHINE_DEPLOY_FAILED_REASON, f"deploy failed: {exc}", release=True)
            raise  # not reached

    def _follow(self, mm, after, machine, secret_name, check) -> Step:
        spec, status = after["spec"], after.setdefault("status", {})
        sid = state.system_id_of(spec["providerID"])
        m = self.maas.get_machine(sid)
        if m is None:
            self._cond(after, names.MAAS_MACHINE_DEPLOYED, False, names.MAAS_MACHINE_NOT_FOUND_REASON)
            if not check:
                forget(after)
                self._save(mm, after, check)
            return Step(changed=True, message=f"MAAS machine {sid} is gone; allocating another", requeue_after=0)
        current = m.get("status_name")
        if current in names.MAAS_STATES_FAILED:
            if check:
                return Step(done=True, changed=True, message=f"{m['hostname']} is {current}; would release it")
            # Node.mark_broken already released a Broken machine and took its owner away: releasing it again
            # would send it to Ready, into the pool, unfixed. It stays Broken until an admin marks it fixed.
            broken = current == names.MAAS_STATE_BROKEN
            if not broken:
                self._remember_failed(after, m["system_id"])
            self._fail(mm, after, m, names.MAAS_MACHINE_DEPLOY_FAILED_REASON, f"MAAS state {current!r}",
                       release=not broken)  # fmt: skip
        if current in names.MAAS_STATES_TERMINATED:
            if check:
                return Step(done=True, changed=True, message=f"{m['hostname']} is {current}; would forget it")
            self._fail(mm, after, m, names.MAAS_MACHINE_TERMINATED_REASON, f"unexpectedly {current}", release=False)
        if current == names.MAAS_STATE_ALLOCATED:
            if check:
                return Step(done=True, changed=True, message=f"would deploy {m['hostname']}", data=state.report(after))
            m = self._deploy(mm, after, m, secret_name, check)
            current = m.get("status_name")
        zone = (m.get("zone") or {}).get("name")
        if zone and spec.get("failureDomain") != zone:
            spec["failureDomain"] = zone  # CAPMAAS overwrites it with the machine's actual zone
        status.update(
            hostname=m.get("hostname"),
            machineState=current,
            machinePowered=m.get("power_state") == "on",
            addresses=state.addresses(m),
        )
        status.pop("failureReason", None)
        status.pop("failureMessage", None)
        if current not in names.MAAS_STATES_OPERATIONAL:
            msg = f"{m['hostname']}: MAAS state {current!r} is not one the provider knows; waiting"
            return self._wait(
                mm, after, names.MAAS_MACHINE_DEPLOYED, names.MAAS_MACHINE_STATE_UNDEFINED_REASON, msg, check, 10
            )
        if current == names.MAAS_STATE_DEPLOYED and m.get("power_state") != "on":
            # PR #379: power on only a confirmed "off"; IPMI power_on power-cycles a host in error/unknown
            remediating = any(k.startswith(names.MAAS_POWER_OFF_PREFIX) for k in meta.annotations(mm))
            if remediating:
                # A remediation asked for this power-off; it powers the machine on again itself.
                msg = f"{m['hostname']} is powered off for remediation"
                return self._wait(
                    mm, after, names.MAAS_MACHINE_DEPLOYED, names.MAAS_MACHINE_POWERED_OFF_REASON, msg, check
                )
            if m.get("power_state") == "off" and not check:
                self.maas.power_on(m["system_id"])
            msg = f"{m['hostname']} is Deployed and powered {m.get('power_state')}"
            return self._wait(mm, after, names.MAAS_MACHINE_DEPLOYED, names.MAAS_MACHINE_POWERED_OFF_REASON, msg, check)
        if current != names.MAAS_STATE_DEPLOYED:
            msg = f"{m['hostname']} is {current}"
            return self._wait(
                mm, after, names.MAAS_MACHINE_DEPLOYED, names.MAAS_MACHINE_DEPLOYING_REASON, msg, check, 2
            )
        self._cond(after, names.MAAS_MACHINE_DEPLOYED, True, names.MAAS_MACHINE_DEPLOYED_REASON)
        status["ready"] = True
        status.setdefault("initialization", {})["provisioned"] = True
        return self._attach_and_node(mm, after, machine, m, check)

    # -- DNS attachment and the Node ------------------------------------------------------

    def _attach_and_node(self, mm, after, machine, m, check) -> Step:
        ns, cluster_name = meta.namespace(mm), machine["spec"]["clusterName"]
        original = mm  # what this step read: ``changed`` compares against it, across both saves
        status = after["status"]
        extra = {}
        if state.is_control_plane(machine):
            # the record is computed from stored status: save this machine's first
            stored = self._save(mm, after, check)
            mm, after = stored, copy.deepcopy(stored)
            status = after["status"]
            result = self.maas.reconcile_dns(self.store, cluster_name, ns, check=check)
            extra["dns"] = result
            is_attached = dns.attached(after, result["after"])
            status["dnsAttached"] = is_attached
            if not is_attached:
                msg = f"waiting for {m['hostname']} in DNS record {result['fqdn']}"
                self._cond(after, names.MAAS_DNS_ATTACHED, False, names.MAAS_DNS_ATTACH_PENDING_REASON, msg)
                stored = self._save(mm, after, check)
                return Step(changed=stored != original, message=msg, requeue_after=2, data=state.report(after, **extra))
            self._cond(after, names.MAAS_DNS_ATTACHED, True, names.MAAS_DNS_ATTACHED_REASON)
        self._cond(after, names.READY, True, names.READY_REASON)
        if check:
            return Step(
                done=True, changed=after != original, message=f"{m['hostname']} Deployed", data=state.report(after)
            )
        stored = self._save(mm, after, check)
        client = self.workload(cluster_name, ns)
        nodes = client.list_nodes()
        node = state.node_for_hostname(nodes, status.get("hostname"))
        if node is None:
            return Step(
                changed=stored != original,
                message=f"{m['hostname']} Deployed; waiting for its Node in the workload cluster",
                requeue_after=3,
                data=state.report(after, **extra),
            )
        pid = after["spec"]["providerID"]
        have = (node.get("spec") or {}).get("providerID")
        if have and have != pid:
            raise CapiError(f"Node {meta.name(node)} already has providerID {have}, not {pid}", obj=meta.ref(mm))
        if have != pid:
            client.set_provider_id(meta.name(node), pid)
        mstep = capi_machine.reconcile(
            self.store, self.store.get("Machine", meta.name(machine), ns), workload=client, clock=self.clock
        )
        phase = ((mstep.data.get("machine") or {}).get("status") or {}).get("phase")
        return Step(
            done=mstep.done,
            changed=stored != original or have != pid or mstep.changed,
            message=f"{m['hostname']} Deployed; Node {meta.name(node)}; Machine {mstep.message}",
            requeue_after=3,
            data=state.report(after, node=meta.name(node), machinePhase=phase, **extra),
        )

    # -- many at once ------------------------------------------------------------------

    def run(self, keys, **kw):
        """Reconcile (or delete) every (namespace, name) concurrently until done or the deadline."""
        return infra_machine.run(self, keys, **kw)

    def delete_step(self, name: str, ns: str, check: bool = False) -> Step:
        """``state: absent``: the Machine and the MaasMachine deleted, reconcileDelete until both are gone."""
        message = machine_delete.absent_message(refs.get_or_none(self.store, KIND, name, ns))
        return infra_machine.remove(self, name, ns, self._delete, check=check, check_message=message)

    def _delete(self, mm: dict, machine: dict | None, check: bool = False) -> Step:
        """reconcileDelete (maas/machine_delete.py), handed this manager's store and machine service."""
        return machine_delete.step(mm, machine, store=self.store, maas=self.maas, clock=self.clock, check=check)
