# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What the metal3_remediation and maas_remediation modules do, for many Machines at once.

For each Machine: create its remediation when it has none (from a template or a strategy, as
MachineHealthCheck would, and only when the Machine is unhealthy unless forced), then reconcile it
one step, or until a terminal phase / the Node is Ready again with ``wait``; once the Node is Ready again
the remediation is deleted, as MachineHealthCheck deletes it when the Machine is healthy.  ``state=absent`` deletes
the remediation, which first takes the power-off request back and undoes the fencing.
"""

from __future__ import annotations

from ansible_collections.baremetal.capi.plugins.module_utils import runner
from ansible_collections.baremetal.capi.plugins.module_utils.capi import refs
from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta
from ansible_collections.baremetal.capi.plugins.module_utils.remediation import health, reboot
from ansible_collections.baremetal.capi.plugins.module_utils.runner import Step


def _needs_remediation(rem: reboot.Remediator, machine: dict) -> tuple[bool, str]:
    """Unhealthy now (Node NotReady/Unknown or gone, or the remediate-machine annotation)?"""
    out = health.check(
        rem.store,
        meta.namespace(machine),
        names_=[meta.name(machine)],
        workload=rem.workload,
        workload_kubeconfig=rem.workload_kubeconfig,
        unhealthy_timeout=0,
        node_startup_timeout=0,
    )
    if not out:
        return False, "not a Machine of a cluster (no cluster.x-k8s.io/cluster-name label)"
    res = out[0]
    if res["skipped"]:
        return False, f"skipped: {res['skipped']}{': ' + res['message'] if res['message'] else ''}"
    return (not res["healthy"]), (res["message"] or "the Machine is healthy")


def remediate(
    rem: reboot.Remediator,
    machines: list[str],
    ns: str,
    *,
    state: str = "present",
    strategy: dict | None = None,
    template: str | None = None,
    force: bool = False,
    check: bool = False,
    wait: bool = True,
    timeout: float = 1800,
    poll: float = 2,
    workers: int = 8,
) -> list[runner.Result]:
    store, kind = rem.store, rem.kind
    tmpl = None
    if template and state == "present":
        tmpl = refs.get_or_none(store, f"{kind}Template", template, ns)
        if tmpl is None:
            raise Invalid(f"{kind}Template {ns}/{template} not found", field="template")
    strategy = strategy or {"type": reboot.common.REBOOT}
    created: dict[str, str] = {}

    def step(name: str) -> Step:
        existing = refs.get_or_none(store, kind, name, ns)
        if state == "absent":
            if existing is None:
                return Step(done=True, message="absent", changed=name in created)
            if not meta.is_deleting(existing):
                if check:
                    return Step(done=True, changed=True, message="would delete")
                store.delete(kind, name, ns)
                created[name] = "deleted"
                if refs.get_or_none(store, kind, name, ns) is None:
                    return Step(done=True, changed=True, message="deleted")
            out = rem.step(name, ns, check=check)
            out.changed = out.changed or name in created
            return out
        if existing is None:
            machine = refs.get_or_none(store, "Machine", name, ns)
            if machine is None:
                raise Invalid(f"Machine {ns}/{name} not found", field="machines")
            if not force:
                unhealthy, why = _needs_remediation(rem, machine)
                if not unhealthy:
                    return Step(done=True, message=f"not remediated: {why}", data={"outcome": "healthy"})
            obj, _new = reboot.ensure(store, kind, machine, strategy=strategy, template=tmpl, check=check)
            if check:
                return Step(done=True, changed=True, message=f"would create {kind} {name}", data={"remediation": name})
            created[name] = obj["metadata"]["uid"]
        out = rem.step(name, ns, check=check)
        if name in created:
            out.changed = True
        if out.done and out.data.get("outcome") == reboot.OUTCOME_REMEDIATED and not check:
            # MachineHealthCheck deletes the remediation once the Machine is healthy again, so that a later
            # failure starts a fresh one (retries and timeout from zero)
            store.delete(kind, name, ns)
            out.changed = True
            out.message += f"; {kind} deleted (the Machine is healthy)"
        return out

    return runner.run(machines, step, wait=wait and not check, timeout=timeout, poll=poll, workers=workers)


def remediate_machines(
    store,
    target,
    machines: list[str],
    ns: str,
    *,
    fencing: str = "auto",
    workload_kubeconfig: str | None = None,
    poll: float = 2,
    **options,
) -> list[runner.Result]:
    """Remediate ``machines`` through ``target`` (remediation/targets.py); ``options`` as :func:`remediate`."""
    rem = reboot.Remediator(store, target, fencing_mode=fencing, workload_kubeconfig=workload_kubeconfig, poll=poll)
    return remediate(rem, machines, ns, poll=poll, **options)
