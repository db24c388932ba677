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


def argument_spec(**extra) -> dict:
    """The options of metal3_remediation and maas_remediation, plus the provider's own."""
    spec = dict(
        machines=dict(type="list", elements="str", required=True),
        namespace=dict(type="str"),
        state=dict(type="str", choices=["present", "absent"], default="present"),
        strategy=dict(
            type="dict",
            options=dict(
                type=dict(type="str", default="Reboot"),
                retryLimit=dict(type="int"),
                timeoutSeconds=dict(type="int"),
            ),
        ),
        force=dict(type="bool", default=False),
        fencing=dict(type="str", choices=["auto", "taint", "delete"], default="auto"),
        workload_kubeconfig=dict(type="str", no_log=True),
        wait=dict(type="bool", default=True),
        wait_timeout=dict(type="int", default=1800),
        wait_sleep=dict(type="float", default=2),
        workers=dict(type="int", default=8),
    )
    spec.update(extra)
    return spec


def run_module(module, target, template: str | None = None) -> None:
    """Remediate the module's machines through ``target`` and exit the module with the report."""
    p = module.params
    rem = reboot.Remediator(
        module.store,
        target,
        fencing_mode=p["fencing"],
        workload_kubeconfig=p["workload_kubeconfig"],
        poll=p["wait_sleep"],
    )
    results = remediate(
        rem,
        p["machines"],
        p["namespace"] or module.namespace,
        state=p["state"],
        strategy={k: v for k, v in (p["strategy"] or {}).items() if v is not None},
        template=template,
        force=p["force"],
        check=module.check_mode,
        wait=p["wait"],
        timeout=p["wait_timeout"],
        poll=p["wait_sleep"],
        workers=p["workers"],
    )
    module.exit_results(results, "remediations", "remediation", p["wait"])
