# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A MaasMachine's machine composed on an LXD VM host (``spec.lxd.enabled``), as CAPMAAS does it.

CAPMAAS (``createVMViaMAAS`` / ``lxd.SelectLXDHostWithMaasClient``): the VM is named from the annotation
``maas.spectrocloud.com/vm-name`` or ``vm-<machine>-<uid[:5]>``; a VM host is chosen among ``/vm-hosts/`` by
zone, resource pool and free cores / memory / disk (disk = max(minDiskSize, lxd.vmConfig.diskSize)), the
one with the most free memory first; ``op=compose`` with hostname, cores, memory, storage, zone id, pool id;
a VM of that hostname that already exists is reused. MAAS commissions the VM; while it does, the flow
requeues. The Ready VM is then allocated by its system_id and deployed (never in memory). On delete the
machine is released and, its power type being ``lxd``, deleted: MAAS decomposes it and the host gets the
resources back.
"""

from __future__ import annotations

from ansible_collections.baremetal.capi.plugins.module_utils.errors import CapiError, Invalid, Requeue
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta, names

COMPOSE_REQUEUE = 5.0  # CAPMAAS requeues 30 s after ErrVMComposing; the lab commissions in well under that


def enabled(mm: dict) -> bool:
    return bool(((mm.get("spec") or {}).get("lxd") or {}).get("enabled"))


def vm_name(mm: dict) -> str:
    given = meta.annotations(mm).get(names.MAAS_VM_NAME_ANNOTATION)
    if given:
        return given
    uid = (mm["metadata"].get("uid") or "").replace("-", "")
    if not uid:
        raise Invalid("a MaasMachine composed on a VM host needs metadata.uid (its VM's name)", obj=meta.ref(mm))
    return f"vm-{meta.name(mm)}-{uid[:5]}".lower()[:63]


def disk_gb(spec: dict) -> int:
    vm = (spec.get("lxd") or {}).get("vmConfig") or {}
    return max(int(spec.get("minDiskSize") or 0), int(vm.get("diskSize") or names.MAAS_LXD_DEFAULT_DISK_GB))


def choose_host(hosts: list[dict], spec: dict, zone: str | None) -> dict | None:
    cores, memory = int(spec.get("minCPU") or 1), int(spec.get("minMemory") or 2048)
    disk = disk_gb(spec) * 1000**3
    pool = spec.get("resourcePool")
    fits = [
        h for h in hosts
        if (zone is None or h["zone"]["name"] == zone) and (not pool or h["pool"]["name"] == pool)
        and h["available"]["cores"] >= cores and h["available"]["memory"] >= memory
        and h["available"]["local_storage"] >= disk
    ]  # fmt: skip
    fits.sort(key=lambda h: (-h["available"]["memory"], h["id"]))
    return fits[0] if fits else None


def ensure_vm(client, mm: dict, machine: dict | None, *, check: bool) -> str | None:
    """The system_id of the Ready VM for ``mm``; composes it first (Requeue while MAAS commissions it).

    In check mode: None when the VM would be composed.
    """
    spec = mm.get("spec") or {}
    name = vm_name(mm)
    zone = spec.get("failureDomain") or ((machine or {}).get("spec") or {}).get("failureDomain")
    found = client.list_machines(hostname=name)
    if found:
        vm = found[0]
        status = vm.get("status_name")
        if status == names.MAAS_STATE_READY:
            return vm["system_id"]
        if status == names.MAAS_STATE_FAILED_COMMISSIONING:
            raise CapiError(f"VM {name} ({vm['system_id']}) failed commissioning on its VM host", obj=meta.ref(mm))
        raise Requeue(f"VM {name} ({vm['system_id']}) is {status}; waiting for it to be Ready", after=COMPOSE_REQUEUE)
    hosts = client.list_vm_hosts()
    host = choose_host(hosts, spec, zone)
    if host is None:
        raise Requeue(
            f"no LXD VM host{f' in zone {zone}' if zone else ''} has {spec.get('minCPU') or 1} cores, "
            f"{spec.get('minMemory') or 2048} MiB and {disk_gb(spec)} GB free for VM {name}",
            after=30,
        )
    if check:
        return None
    client.compose(host["id"], hostname=name, cores=str(int(spec.get("minCPU") or 1)),
                   memory=str(int(spec.get("minMemory") or 2048)), storage=f"root:{disk_gb(spec)}",
                   zone=str(host["zone"]["id"]), pool=str(host["pool"]["id"]))  # fmt: skip
    raise Requeue(f"composing VM {name} on VM host {host['name']}", after=COMPOSE_REQUEUE)


def decompose(client, mm: dict, m: dict | None) -> bool:
    """Delete a composed VM's machine (MAAS decomposes it); True when one was deleted."""
    if m is None and enabled(mm):
        found = client.list_machines(hostname=vm_name(mm))  # composed, never allocated
        m = found[0] if found else None
    if m is None or m.get("power_type") != names.MAAS_POWER_TYPE_LXD:
        return False
    return client.delete_machine(m["system_id"])
