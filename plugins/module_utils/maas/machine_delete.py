# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Deleting a MaasMachine (capmaas.md §2.2 reconcileDelete) and, with it, its Machine (capi-core.md §2.4).

``step``: a control-plane machine first leaves the API's DNS record (the DNS
reconcile runs here, so it does not wait for a cluster step), then the MAAS
machine is released, then the finalizer goes.  ``remove`` is ``state:
absent``: delete the Machine and the MaasMachine and step both until both are
gone; the Machine's Node goes after the MaasMachine, as Cluster API does.
"""

from __future__ import annotations

import copy

from ansible_collections.baremetal.capi.plugins.module_utils.capi import infra_machine, refs
from ansible_collections.baremetal.capi.plugins.module_utils.errors import NotFound, Requeue
from ansible_collections.baremetal.capi.plugins.module_utils.maas import dns, lxd, state
from ansible_collections.baremetal.capi.plugins.module_utils.maas.client import MaasConflict
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta, names
from ansible_collections.baremetal.capi.plugins.module_utils.runner import Step

KIND = "MaasMachine"
_GONE = (names.MAAS_STATE_RELEASING, names.MAAS_STATE_READY, names.MAAS_STATE_DISK_ERASING, names.MAAS_STATE_NEW)


def _cluster_name(mm: dict, machine: dict | None) -> str | None:
    return ((machine or {}).get("spec") or {}).get("clusterName") or meta.labels(mm).get(names.CLUSTER_NAME_LABEL)


def step(mgr, mm: dict, machine: dict | None, *, check: bool = False) -> Step:
    """One step of reconcileDelete; ``done`` when the MaasMachine is gone."""
    store, ns = mgr.store, meta.namespace(mm)
    after = copy.deepcopy(mm)
    sid = state.system_id_of((mm.get("spec") or {}).get("providerID"))
    m = mgr.maas.get_machine(sid)
    cluster_name = _cluster_name(mm, machine)
    if m is not None and cluster_name and (state.is_control_plane(mm) or state.is_control_plane(machine or {})):
        try:
            result = mgr.maas.reconcile_dns(store, cluster_name, ns, check=check)
        except Requeue:
            result = None  # no DNS name (the MaasCluster is gone): nothing to detach from
        if result is not None and dns.attached(mm, result["after"]) and not check:
            mgr._cond(after, names.MAAS_DNS_ATTACHED, False, names.MAAS_DNS_DETACH_PENDING_REASON)
            after["status"]["dnsAttached"] = True
            mgr._save(mm, after, check)
            return Step(
                changed=True,
                message=f"waiting for {m['hostname']} to leave DNS record {result['fqdn']}",
                requeue_after=2,
                data=mgr._report(after, dns=result),
            )
    if check:
        what = f"would release {m['hostname']} ({sid})" if m is not None else "would be deleted"
        return Step(done=True, changed=True, message=what, data=mgr._report(after))
    message = "deleted"
    if m is not None and m.get("status_name") not in _GONE:
        try:
            mgr.maas.release(sid, comment=f"{meta.ref(mm)} deleted")
        except MaasConflict as exc:
            raise Requeue(f"MAAS cannot release {m['hostname']} yet: {exc.content}", after=10) from None
        message = f"released {m['hostname']} ({sid})"
    if mgr.maas.decompose_vm(mm, m):
        message += f"; VM {m['hostname'] if m else lxd.vm_name(mm)} decomposed"
    mgr._cond(after, names.MAAS_MACHINE_DEPLOYED, False, names.MAAS_DELETED_REASON)
    meta.remove_finalizer(after, names.MAAS_MACHINE_FINALIZER)
    try:
        refs.write(store, mm, after)
    except NotFound:
        pass
    return Step(done=True, changed=True, message=message, data=mgr._report(after))


def remove(mgr, name: str, ns: str, *, check: bool = False) -> Step:
    """``state: absent``: the Machine and the MaasMachine deleted, this file's ``step`` until both are gone."""
    mm = refs.get_or_none(mgr.store, KIND, name, ns)
    sid = state.system_id_of(((mm or {}).get("spec") or {}).get("providerID"))
    message = f"would be deleted (MAAS machine {sid or 'none'} released)"
    return infra_machine.remove(mgr, name, ns, step, check=check, check_message=message)
