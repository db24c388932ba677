# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The reboot remediation strategy as a state machine over the store (cluster-api-provider-metal3
controllers/metal3remediation_controller.go reconcileNormal).

One ``Remediator.step`` does at most one write (to the store, the host object, the workload Node or the
power) and records where it is *before* it acts, so a run interrupted at any line continues from the
recorded phase.  The power-off request is an annotation on the host object
(``reboot.metal3.io/metal3-remediation-<uid>``), so asking twice is asking once: a re-run never power
cycles a host a second time for the same retry.

Phases (status.phase): "" -> Running (lastRemediated = now) -> Waiting -> either the Node is Ready again
(the remediation is done; MachineHealthCheck would delete it) or, once lastRemediated + timeoutSeconds has
passed, Running again with retryCount + 1, until retryCount == retryLimit: then the host is marked
unhealthy, the Machine gets OwnerRemediated=False/WaitingForRemediation (the machines flow replaces it) and
the phase is "Deleting machine".  A host meant to be off (spec.online=false) ends in "Failed".

Differences from CAPM3, on purpose: the timeout also applies while the host has not come back on (CAPM3
waits for poweredOn first, so a host that never powers on stays Waiting for ever); the fencing mode
``auto`` asks the workload API server's version (see fencing.py); the remediation is done when the Node is
Ready (CAPM3 leaves that decision to MachineHealthCheck, which deletes the object).

The adapter (``target``) is targets.Metal3Target or targets.MaasTarget; ``clock`` returns an aware
datetime (tests inject one).
"""

from __future__ import annotations

import copy
import datetime

from ansible_collections.baremetal.capi.plugins.module_utils.capi import refs
from ansible_collections.baremetal.capi.plugins.module_utils.capi import workload as wl
from ansible_collections.baremetal.capi.plugins.module_utils.errors import (
    CapiError,
    Forbidden,
    Invalid,
    NotFound,
    Requeue,
)
from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions, meta, names
from ansible_collections.baremetal.capi.plugins.module_utils.remediation import common, fencing
from ansible_collections.baremetal.capi.plugins.module_utils.runner import Step

OUTCOME_REMEDIATED = "remediated"


class Remediator:
    def __init__(
        self, store, target, *, fencing_mode="auto", workload=None, workload_kubeconfig=None, clock=None, poll=5.0
    ):
        if fencing_mode not in common.FENCING:
            raise Invalid(f"fencing must be one of {', '.join(common.FENCING)}", field="fencing")
        self.store = store
        self.target = target
        self.kind = target.remediation_kind
        self.fencing = fencing_mode
        self.workload = workload
        self.workload_kubeconfig = workload_kubeconfig
        self.clock = clock
        self.poll = float(poll)

    # -- reading -----------------------------------------------------------------------------

    def _now(self) -> datetime.datetime:
        return common.now(self.clock)

    def owner_machine(self, rem: dict) -> dict:
        ref = refs.owner_of_kind(rem, "Machine") or {"name": meta.name(rem)}  # MHC names it like the Machine
        machine = refs.get_or_none(self.store, "Machine", ref["name"], meta.namespace(rem))
        if machine is None:
            raise Requeue(f"{meta.ref(rem)}: waiting for its Machine {ref['name']}", after=10)
        return machine

    def client(self, machine: dict):
        if self.workload is not None:
            return self.workload
        try:
            return wl.client_for(
                self.store, machine["spec"]["clusterName"], meta.namespace(machine), self.workload_kubeconfig
            )
        except NotFound:
            raise Requeue(
                f"waiting for the {wl.kubeconfig_secret_name(machine['spec']['clusterName'])} Secret", after=10
            ) from None

    @staticmethod
    def node_name(machine: dict) -> str | None:
        return ((machine.get("status") or {}).get("nodeRef") or {}).get("name")

    def _node(self, machine: dict) -> dict | None:
        name = self.node_name(machine)
        return self.client(machine).get_node(name) if name else None

    # -- writing (each is one persisted step) --------------------------------------------------

    def _set_status(self, rem: dict, **fields) -> dict:
        body = copy.deepcopy(rem)
        body.setdefault("status", {}).update(fields)
        return self.store.update_status(body)

    def _set_meta(self, rem: dict, change) -> dict:
        body = copy.deepcopy(rem)
        if not change(body):
            return rem
        body.pop("status", None)
        return self.store.update(body)

    def _report(self, rem, target=None, **extra) -> dict:
        status = rem.get("status") or {}
        out = {
            "remediation": meta.name(rem),
            "phase": status.get("phase") or "",
            "retryCount": status.get("retryCount") or 0,
            "lastRemediated": status.get("lastRemediated"),
        }
        if target is not None:
            out.update(self.target.describe(target))
        out.update(extra)
        return out

    # -- one step --------------------------------------------------------------------------------

    def step(self, name: str, ns: str, check: bool = False) -> Step:
        try:
            rem = self.store.get(self.kind, name, ns)
        except NotFound:
            # gone: deleted (its last finalizer let go) or never made; ``run.remediate`` creates them
            return Step(done=True, message=f"{self.kind} {ns}/{name} does not exist", data={"outcome": "gone"})
        common.validate_remediation(rem)
        phase = (rem.get("status") or {}).get("phase") or ""
        if phase in common.TERMINAL and not meta.is_deleting(rem):
            return Step(done=True, message=f"phase {phase}", data=self._report(rem, outcome=phase))
        if ((rem.get("spec") or {}).get("strategy") or {}).get("type", common.REBOOT) != common.REBOOT:
            return Step(done=True, message="not a Reboot strategy: ignored", data=self._report(rem))
        if meta.is_deleting(rem):
            try:
                machine = self.owner_machine(rem)
                target = self.target.resolve(rem, machine)
            except Requeue as exc:
                # the Machine or its host went first (the machines flow replaced it): nothing left to undo
                return self._write(
                    check,
                    rem,
                    None,
                    f"let go ({exc.message})",
                    lambda: self._set_meta(rem, lambda r: meta.remove_finalizer(r, self.target.finalizer)),
                )
            return self._delete(rem, machine, target, check)
        machine = self.owner_machine(rem)
        target = self.target.resolve(rem, machine)
        if self.target.offline(target):
            if check:
                return Step(
                    done=True, changed=True, message="would fail: the host is offline", data=self._report(rem, target)
                )
            rem = self._set_status(rem, phase=common.PHASE_FAILED)
            return Step(
                done=True,
                changed=True,
                message=f"{target['name']} is offline: {common.PHASE_FAILED}",
                data=self._report(rem, target, outcome=common.PHASE_FAILED),
            )
        if phase == "":
            return self._write(
                check,
                rem,
                target,
                "start: Running",
                lambda: self._set_status(
                    rem, phase=common.PHASE_RUNNING, retryCount=0, lastRemediated=common.fmt(self._now())
                ),
            )
        if phase == common.PHASE_RUNNING:
            return self._running(rem, machine, target, check)
        return self._waiting(rem, machine, target, check)

    def _write(self, check: bool, rem: dict, target, what: str, act) -> Step:
        """A step that changes something: in check mode only say so."""
        if check:
            return Step(done=True, changed=True, message=f"would {what}", data=self._report(rem, target))
        result = act()
        if isinstance(result, dict) and result.get("kind") == self.kind and not meta.is_deleting(rem):
            rem = result
        else:
            try:
                rem = self.store.get(self.kind, meta.name(rem), meta.namespace(rem))
            except NotFound:  # its last finalizer went while it was being deleted: it is gone
                return Step(done=True, changed=True, message=f"{what}: deleted", data=self._report(rem, target))
        return Step(changed=True, message=what, requeue_after=0, data=self._report(rem, target))

    def _wait(self, rem, target, message: str, after: float | None = None) -> Step:
        return Step(
            message=message, requeue_after=self.poll if after is None else after, data=self._report(rem, target)
        )

    # -- Running: power off, fence, -> Waiting -------------------------------------------------------

    def _running(self, rem: dict, machine: dict, target: dict, check: bool) -> Step:
        fin = self.target.finalizer
        if fin not in meta.finalizers(rem):
            return self._write(
                check,
                rem,
                target,
                "add the finalizer",
                lambda: self._set_meta(rem, lambda r: meta.add_finalizer(r, fin)),
            )
        if not self.target.requested(rem, target):
            return self._write(
                check,
                rem,
                target,
                f"request power off of {target['name']}",
                lambda: self.target.request_off(rem, target),
            )
        if check:
            return Step(done=True, message=f"waiting for {target['name']} to power off", data=self._report(rem, target))
        moved = self.target.drive(target)
        if self.target.powered(target) is not False:
            return self._wait(rem, target, f"waiting for {target['name']} to power off{': ' + moved if moved else ''}")
        node = self._node(machine)
        if node is not None:
            client = self.client(machine)
            how = fencing.mode(self.fencing, client)
            if how == "taint":
                if fencing.add_taint(client, node):
                    return Step(
                        changed=True,
                        message=f"Node {meta.name(node)}: out-of-service taint added",
                        requeue_after=0,
                        data=self._report(rem, target),
                    )
                left = fencing.pods_terminating(client, meta.name(node))
                if left:
                    return self._wait(rem, target, f"waiting for {', '.join(left[:5])} to go")
            else:
                saved = fencing.backups(node)
                ann = meta.annotations(rem)
                if any(ann.get(k) != v for k, v in saved.items()):
                    return self._write(
                        check,
                        rem,
                        target,
                        f"back up Node {meta.name(node)}'s labels and annotations",
                        lambda: self._set_meta(rem, lambda r: _annotate(r, saved)),
                    )
                client.delete_node(meta.name(node))
                return Step(
                    changed=True,
                    message=f"Node {meta.name(node)} deleted",
                    requeue_after=1,
                    data=self._report(rem, target),
                )
        return self._write(
            check,
            rem,
            target,
            "powered off and fenced: Waiting",
            lambda: self._set_status(rem, phase=common.PHASE_WAITING),
        )

    # -- Waiting: power on, restore, wait for the Node or the timeout -----------------------------

    def _waiting(self, rem: dict, machine: dict, target: dict, check: bool) -> Step:
        if self.target.requested(rem, target):
            return self._write(
                check, rem, target, f"request power on of {target['name']}", lambda: self.target.request_on(rem, target)
            )
        if not check:
            self.target.drive(target)
        powered = self.target.powered(target)
        node = None
        if powered:
            node = self._node(machine)
            if self.target.finalizer in meta.finalizers(rem) and node is not None:
                return self._restore(rem, machine, target, node, check)
            if (
                node is not None
                and self.target.finalizer not in meta.finalizers(rem)
                and wl.node_ready(node) == conditions.TRUE
            ):
                return Step(
                    done=True,
                    message=f"Node {meta.name(node)} is Ready again",
                    data=self._report(rem, target, outcome=OUTCOME_REMEDIATED),
                )
        started = common.parse_time((rem.get("status") or {}).get("lastRemediated")) or self._now()
        deadline = started + datetime.timedelta(seconds=common.timeout_seconds(rem))
        now = self._now()
        if now < deadline:
            left = (deadline - now).total_seconds()
            why = "the Node to be Ready" if powered else f"{target['name']} to power on"
            return self._wait(
                rem,
                target,
                f"waiting for {why} ({left:.0f}s of the timeout left)",
                after=min(self.poll, max(left, 0.0)),
            )
        count = (rem.get("status") or {}).get("retryCount") or 0
        if count < common.retry_limit(rem):
            return self._write(
                check,
                rem,
                target,
                f"timed out: retry {count + 1} of {common.retry_limit(rem)}",
                lambda: self._set_status(
                    rem, phase=common.PHASE_RUNNING, retryCount=count + 1, lastRemediated=common.fmt(now)
                ),
            )
        return self._give_up(rem, machine, target, check)

    def _restore(self, rem: dict, machine: dict, target: dict, node: dict, check: bool) -> Step:
        """The Node is back: lift the taint or restore the backups (existing keys win), then let go."""
        if check:
            return Step(
                done=True, changed=True, message=f"would restore Node {meta.name(node)}", data=self._report(rem, target)
            )
        client = self.client(machine)
        try:
            fencing.remove_taint(client, node)
            patch = fencing.restore_patch(node, meta.annotations(rem))
            if patch:
                client.patch_node(meta.name(node), patch)
        except CapiError as exc:
            # CAPM3: without access to the Node (Forbidden), just drop the finalizer
            if not isinstance(exc, Forbidden):
                raise

        def let_go(r):
            ann = r["metadata"].get("annotations") or {}
            for key in (names.NODE_LABELS_BACKUP, names.NODE_ANNOTATIONS_BACKUP):
                ann.pop(key, None)
            meta.remove_finalizer(r, self.target.finalizer)
            return True

        rem = self._set_meta(rem, let_go)
        return Step(
            changed=True, message=f"Node {meta.name(node)} restored", requeue_after=0, data=self._report(rem, target)
        )

    def _give_up(self, rem: dict, machine: dict, target: dict, check: bool) -> Step:
        """At the retry limit: host unhealthy, Machine OwnerRemediated=False, phase Deleting machine."""
        if check:
            return Step(
                done=True,
                changed=True,
                message=f"would give up: {common.PHASE_DELETING}",
                data=self._report(rem, target),
            )
        self.target.mark_unhealthy(target)
        after = copy.deepcopy(machine)
        if conditions.set_condition(
            after,
            names.OWNER_REMEDIATED,
            False,
            common.WAITING_FOR_REMEDIATION_REASON,
            f"{self.kind} {meta.name(rem)}: retry limit reached",
            clock=self.clock,
        ):
            self.store.update_status(after)
        rem = self._set_status(rem, phase=common.PHASE_DELETING)
        return Step(
            done=True,
            changed=True,
            message=f"retry limit reached: {common.PHASE_DELETING}",
            data=self._report(rem, target, outcome=common.PHASE_DELETING),
        )

    # -- deletion ----------------------------------------------------------------------------------

    def _delete(self, rem: dict, machine: dict, target: dict, check: bool) -> Step:
        """Being deleted: take the power-off request back, undo fencing if the Node is there, let go."""
        if self.target.finalizer not in meta.finalizers(rem):
            return Step(done=True, message="deleted", data=self._report(rem, target))
        if self.target.requested(rem, target):
            return self._write(
                check, rem, target, f"request power on of {target['name']}", lambda: self.target.request_on(rem, target)
            )
        node = None
        try:
            node = self._node(machine)
        except Requeue:
            node = None  # the workload cluster is gone: nothing to restore
        if node is not None:
            return self._restore(rem, machine, target, node, check)
        return self._write(
            check,
            rem,
            target,
            "let go (no Node to restore)",
            lambda: self._set_meta(rem, lambda r: meta.remove_finalizer(r, self.target.finalizer)),
        )


def _annotate(obj: dict, values: dict) -> bool:
    obj["metadata"].setdefault("annotations", {}).update(values)
    return True


# -- creating one ------------------------------------------------------------------------------------


def build(kind: str, machine: dict, *, strategy: dict | None = None, template: dict | None = None) -> dict:
    """The remediation MachineHealthCheck would create: named like the Machine, owned by it.

    From a Metal3RemediationTemplate (its webhook defaults applied), else from ``strategy`` (CRD defaults).
    """
    if template is not None:
        template = common.default_template(template)
        common.validate_template(template)
        spec = copy.deepcopy(template["spec"]["template"]["spec"])
    else:
        spec = {"strategy": dict(strategy or {"type": common.REBOOT})}
    rem = meta.new(kind, meta.name(machine), meta.namespace(machine), spec=spec)
    labels = {names.CLUSTER_NAME_LABEL: machine["spec"]["clusterName"]}
    rem["metadata"]["labels"] = labels
    if machine["metadata"].get("uid"):
        meta.set_owner(rem, machine)
    rem = common.default_remediation(rem)
    common.validate_remediation(rem)
    return rem


def ensure(store, kind: str, machine: dict, *, strategy=None, template=None, check: bool = False) -> tuple[dict, bool]:
    """The Machine's remediation, created if it does not exist.  (object, created)."""
    existing = refs.get_or_none(store, kind, meta.name(machine), meta.namespace(machine))
    if existing is not None:
        return existing, False
    rem = build(kind, machine, strategy=strategy, template=template)
    if check:
        return rem, True
    try:
        return store.create(rem), True
    except Exception as exc:  # AlreadyExists from a racing run: take theirs
        from ansible_collections.baremetal.capi.plugins.module_utils.errors import AlreadyExists

        if isinstance(exc, AlreadyExists):
            return store.get(kind, meta.name(machine), meta.namespace(machine)), False
        raise
