# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The part of an infrastructure machine's reconcile that does not depend on the provider.

CAPM3's Metal3Machine controller and CAPMAAS's MaasMachine controller do the same things before they hand
over to their manager: find the owner Machine (and own the infrastructure machine through it), route a
deleting object to the delete flow, wait for the Cluster, honour the pause, wait for the bootstrap data
Secret; and ``state: absent`` deletes the infrastructure machine first and the Machine after it. That is
this file. What differs (host choice and host spec on Metal3, allocate and deploy on MAAS) stays in each
provider's ``machine.py`` and ``machine_delete.py``.

A provider's manager gives this file its ``KIND``, a ``store``, a ``clock``, ``step(name, ns, check)``,
``workload(cluster_name, ns)`` and the provider's delete step for one object being deleted (its
``machine_delete.step`` bound to the collaborators it needs).
"""

from __future__ import annotations

from ansible_collections.baremetal.capi.plugins.module_utils import runner
from ansible_collections.baremetal.capi.plugins.module_utils.capi import machine as capi_machine
from ansible_collections.baremetal.capi.plugins.module_utils.capi import refs
from ansible_collections.baremetal.capi.plugins.module_utils.errors import Requeue
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta
from ansible_collections.baremetal.capi.plugins.module_utils.runner import Step


def owner_machine(store, infra: dict, *, check: bool = False) -> dict | None:
    """The Machine owning this infrastructure machine; one whose infrastructureRef names it takes ownership first.

    Taking ownership is what the Machine controller does first (cluster-api machine_controller_phases.go
    ensureExternalOwnershipAndWatch).
    """
    ref = refs.owner_of_kind(infra, "Machine")
    if ref:
        return refs.get_or_none(store, "Machine", ref["name"], meta.namespace(infra))
    machine = refs.referrer(store, "Machine", infra)
    if machine is not None:
        refs.take_ownership(store, machine, machine["spec"]["infrastructureRef"], check=check)
    return machine


def owning_cluster(store, kind: str, machine: dict | None) -> dict:
    """The Cluster of the owner Machine, or a Requeue that says which of the two is still missing."""
    if machine is None:
        raise Requeue(f"waiting for a Machine whose infrastructureRef names this {kind}", after=10)
    ns, cluster_name = meta.namespace(machine), machine["spec"]["clusterName"]
    cluster = refs.get_or_none(store, "Cluster", cluster_name, ns)
    if cluster is None:
        raise Requeue(f"waiting for Cluster {ns}/{cluster_name}", after=10)
    return cluster


def bootstrap_ready(machine: dict) -> bool:
    """IsBootstrapReady: a Machine with a bootstrap config waits until its data Secret is named."""
    bootstrap = (machine.get("spec") or {}).get("bootstrap") or {}
    return not (bootstrap.get("configRef") and not bootstrap.get("dataSecretName"))


def bootstrap_data_secret(machine: dict) -> str | None:
    """The Machine's bootstrap data Secret name once its bootstrap provider has written it (IsBootstrapReady)."""
    if not bootstrap_ready(machine):
        return None
    return ((machine.get("spec") or {}).get("bootstrap") or {}).get("dataSecretName")


def workload_or_none(mgr, machine: dict):
    try:
        return mgr.workload(machine["spec"]["clusterName"], meta.namespace(machine))
    except Exception:  # no kubeconfig Secret: capi.machine decides what a missing workload means
        return None


def remove(mgr, name: str, ns: str, delete_step, *, check: bool = False, check_message: str = "") -> Step:
    """``state: absent``: delete the Machine and the infrastructure machine; ``done`` when both are gone.

    ``delete_step(infra, machine)`` is the provider's reconcileDelete for its object; the Machine's own
    delete (its Node after the infrastructure machine, as Cluster API does) runs once that object is gone.
    """
    store, kind = mgr.store, mgr.KIND
    infra = refs.get_or_none(store, kind, name, ns)
    machine = owner_machine(store, infra, check=True) if infra is not None else None
    if machine is None:
        machine = refs.get_or_none(store, "Machine", name, ns)
        spec_ref = ((machine or {}).get("spec") or {}).get("infrastructureRef") or {}
        if spec_ref.get("name") != name or spec_ref.get("kind") != kind:
            machine = None
    if infra is None and machine is None:
        return Step(done=True, changed=False, message="absent")
    if check:
        return Step(done=True, changed=True, message=check_message or "would be deleted")
    if machine is not None and not meta.is_deleting(machine):
        store.delete("Machine", meta.name(machine), ns)
        machine = refs.get_or_none(store, "Machine", meta.name(machine), ns)
    infra = refs.get_or_none(store, kind, name, ns)
    if infra is not None:
        if not meta.is_deleting(infra):
            store.delete(kind, name, ns)
            infra = refs.get_or_none(store, kind, name, ns)
        if infra is not None:
            s = delete_step(infra, machine)
            if refs.get_or_none(store, kind, name, ns) is not None:
                s.changed = True
                return s
    machine = refs.get_or_none(store, "Machine", meta.name(machine), ns) if machine is not None else None
    if machine is not None:
        mstep = capi_machine.reconcile_delete(store, machine, workload=workload_or_none(mgr, machine), clock=mgr.clock)
        if refs.get_or_none(store, "Machine", meta.name(machine), ns) is None:
            return Step(done=True, changed=True, message=mstep.message)
        return Step(changed=True, message=mstep.message, requeue_after=mstep.requeue_after)
    return Step(done=True, changed=True, message="deleted")


def keys_for_cluster(store, kind: str, cluster_name: str, ns: str, label: str) -> list[tuple[str, str]]:
    """Every infrastructure machine of a cluster: named by its Machines, or labelled with the cluster."""
    found = set()
    for machine in store.list("Machine", ns):
        spec_ref = (machine.get("spec") or {}).get("infrastructureRef") or {}
        if machine["spec"].get("clusterName") == cluster_name and spec_ref.get("kind") == kind:
            found.add(spec_ref["name"])
    for infra in store.list(kind, ns, f"{label}={cluster_name}"):
        found.add(meta.name(infra))
    return [(ns, name) for name in sorted(found)]


def run(mgr, keys, *, delete=False, check=False, wait=True, timeout=None, poll=2.0, workers=8, progress=None):
    """Reconcile (or delete) every (namespace, name) concurrently until done or the deadline."""

    def one(key):
        if delete:
            return mgr.delete_step(key[1], key[0], check=check)
        return mgr.step(key[1], key[0], check=check)

    return runner.run(
        list(keys),
        one,
        key=lambda k: f"{k[0]}/{k[1]}",
        workers=workers,
        wait=wait and not check,
        timeout=timeout,
        poll=poll,
        progress=progress,
    )
