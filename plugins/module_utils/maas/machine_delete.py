# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Deleting a MaasMachine (cluster-api-provider-maas controllers/maasmachine_controller.go reconcileDelete) and, with
it, its
Machine (cluster-api internal/controllers/machine/machine_controller.go reconcileDelete).

``step``: a control-plane machine first leaves the API's DNS record (the DNS
reconcile runs here, so it does not wait for a cluster step), then the MAAS
machine is released, then the finalizer goes.  ``state: absent`` (delete the
Machine and the MaasMachine and step both until both are gone; the Machine's
Node goes after the MaasMachine, as Cluster API does) is the provider-neutral
``capi.infra_machine.remove`` with this ``step``; ``absent_message`` is what
it says in check mode.

It takes its collaborators as arguments - the store, the MAAS machine service
(maas/machine_service.py), the clock - not the MachineManager; the step's
report is ``maas/state.py`` ``report``, as in the reconcile.
"""

from __future__ import annotations

import copy

from ansible_collections.baremetal.capi.plugins.module_utils.capi import refs
from ansible_collections.baremetal.capi.plugins.module_utils.errors import NotFound, Requeue
from ansible_collections.baremetal.capi.plugins.module_utils.maas import dns, lxd, state
from ansible_collections.baremetal.capi.plugins.module_utils.maas.client import MaasConflict
from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions, meta, names
from ansible_collections.baremetal.capi.plugins.module_utils.runner import Step

_GONE = (names.MAAS_STATE_RELEASING, names.MAAS_STATE_READY, names.MAAS_STATE_DISK_ERASING, names.MAAS_STATE_NEW)


def _cluster_name(mm: dict, machine: dict | None) -> str | None:
    return ((machine or {}).get("spec") or {}).get("clusterName") or meta.labels(mm).get(names.CLUSTER_NAME_LABEL)


def step(mm: dict, machine: dict | None, *, store, maas, clock=None, check: bool = False) -> Step:
    """One step of reconcileDelete; ``done`` when the MaasMachine is gone.  ``maas`` is the MachineService."""
    ns = meta.namespace(mm)
    after = copy.deepcopy(mm)
    sid = state.system_id_of((mm.get("spec") or {}).get("providerID"))
    m = maas.get_machine(sid)
    cluster_name = _cluster_name(mm, machine)
    if m is not None and cluster_name and (state.is_control_plane(mm) or state.is_control_plane(machine or {})):
        try:
            result = maas.reconcile_dns(store, cluster_name, ns, check=check)
        except Requeue:
            result = None  # no DNS name (the MaasCluster is gone): nothing to detach from
        if result is not None and dns.attached(mm, result["after"]) and not check:
            conditions.set_condition(
                after, names.MAAS_DNS_ATTACHED, False, names.MAAS_DNS_DETACH_PENDING_REASON, clock=clock
            )
            after["status"]["dnsAttached"] = True
            refs.save(store, mm, after, check)
            return Step(
                changed=True,
                message=f"waiting for {m['hostname']} to leave DNS record {result['fqdn']}",
                requeue_after=2,
                data=state.report(after, dns=result),
            )
    if check:
        what = f"would release {m['hostname']} ({sid})" if m is not None else "would be deleted"
        return Step(done=True, changed=True, message=what, data=state.report(after))
    message = "deleted"
    if m is not None and m.get("status_name") not in _GONE:
        try:
            maas.release(sid, comment=f"{meta.ref(mm)} deleted")
        except MaasConflict as exc:
            raise Requeue(f"MAAS cannot release {m['hostname']} yet: {exc.content}", after=10) from None
        message = f"released {m['hostname']} ({sid})"
    if maas.decompose_vm(mm, m):
        message += f"; VM {m['hostname'] if m else lxd.vm_name(mm)} decomposed"
    conditions.set_condition(after, names.MAAS_MACHINE_DEPLOYED, False, names.MAAS_DELETED_REASON, clock=clock)
    meta.remove_finalizer(after, names.MAAS_MACHINE_FINALIZER)
    try:
        refs.write(store, mm, after)
    except NotFound:
        pass
    return Step(done=True, changed=True, message=message, data=state.report(after))


def absent_message(mm: dict | None) -> str:
    """What ``state: absent`` says in check mode: the MAAS machine it would release."""
    sid = state.system_id_of(((mm or {}).get("spec") or {}).get("providerID"))
    return f"would be deleted (MAAS machine {sid or 'none'} released)"
