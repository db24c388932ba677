# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The API endpoint's DNS resource: CAPMAAS's ReconcileDNS and reconcileDNSAttachments.

The record is ``status.network.dnsName`` of the MaasCluster, created with TTL
10 and no addresses, then kept equal to the first address of each running
control-plane MaasMachine (state.desired_dns_ips): never emptied while
control-plane machines that are not being deleted exist, which CAPMAAS main
did.  The machine flow calls ``reconcile_dns`` for its cluster on every round,
so a control-plane machine waiting for its attachment never waits for a step
that nobody runs.
"""

from __future__ import annotations

import threading

from ansible_collections.baremetal.capi.plugins.module_utils.capi import refs
from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid, NotFound, Requeue
from ansible_collections.baremetal.capi.plugins.module_utils.maas import state
from ansible_collections.baremetal.capi.plugins.module_utils.maas.client import dns_ips
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta, names

KIND = "MaasMachine"
_LOCKS: dict[tuple, threading.Lock] = {}
_LOCKS_LOCK = threading.Lock()


def _lock(key: tuple) -> threading.Lock:
    with _LOCKS_LOCK:
        return _LOCKS.setdefault(key, threading.Lock())


def dns_name(maas_cluster: dict | None) -> str | None:
    return (((maas_cluster or {}).get("status") or {}).get("network") or {}).get("dnsName")


def cluster_machines(store, cluster_name: str, ns: str) -> list[dict]:
    return store.list(KIND, ns, f"{names.CLUSTER_NAME_LABEL}={cluster_name}")


def control_plane_machines(store, cluster_name: str, ns: str) -> list[dict]:
    """The cluster's control-plane MaasMachines (label on the MaasMachine, or on its Machine)."""
    out = []
    machines = None
    for mm in cluster_machines(store, cluster_name, ns):
        if state.is_control_plane(mm):
            out.append(mm)
            continue
        owner = refs.owner_of_kind(mm, "Machine")
        if owner is None:
            continue
        if machines is None:
            machines = {
                meta.name(m): m for m in store.list("Machine", ns, f"{names.CLUSTER_NAME_LABEL}={cluster_name}")
            }
        if state.is_control_plane(machines.get(owner["name"]) or {}):
            out.append(mm)
    return out


def preferred_subnets(store, ns: str, given=None) -> list[str]:
    """The option, else ConfigMap ``maas-preferred-subnet`` key ``preferredSubnets`` (comma-separated CIDRs)."""
    if given:
        return list(given)
    cm = refs.get_or_none(store, "ConfigMap", names.MAAS_PREFERRED_SUBNET_CONFIGMAP, ns)
    value = ((cm or {}).get("data") or {}).get(names.MAAS_PREFERRED_SUBNET_KEY) or ""
    return [s.strip() for s in value.split(",") if s.strip()]


def ensure_resource(client, fqdn: str, *, check: bool = False) -> tuple[dict | None, bool]:
    """The DNS resource named ``fqdn``, created (TTL 10, no addresses) when missing.  (resource, created)."""
    found = client.find_dns(fqdn)
    if found is not None:
        return found, False
    if check:
        return None, True
    return client.create_dns(fqdn, names.MAAS_DNS_TTL, []), True


def reconcile_dns(
    store, client, cluster_name: str, ns: str, *, subnets=None, check: bool = False, maas_cluster: dict | None = None
) -> dict:
    """Make the API record hold the running control-plane addresses.  Returns what it found and did.

    ``{"fqdn", "before", "after", "changed", "created", "message"}``; Requeue while
    the MaasCluster has no DNS name yet.
    """
    if maas_cluster is None:
        cluster = refs.get_or_none(store, "Cluster", cluster_name, ns)
        if cluster is None:
            raise NotFound(f'Cluster "{cluster_name}" not found', obj=f"Cluster {ns}/{cluster_name}")
        maas_cluster = refs.get_ref(store, (cluster.get("spec") or {}).get("infrastructureRef"), ns)
    fqdn = dns_name(maas_cluster)
    if not fqdn:
        raise Requeue(f"MaasCluster of Cluster {ns}/{cluster_name} has no DNS name yet", after=5)
    for subnet in subnets or ():
        try:
            import ipaddress

            ipaddress.ip_network(subnet, strict=False)
        except ValueError:
            raise Invalid(f"{subnet!r} is not a CIDR", field="preferred_subnets") from None
    with _lock((client.url, fqdn)):
        resource, created = ensure_resource(client, fqdn, check=check)
        before = dns_ips(resource)
        cps = control_plane_machines(store, cluster_name, ns)
        after, why = state.desired_dns_ips(cps, before, preferred_subnets(store, ns, subnets))
        changed = sorted(before) != after
        if changed and not check:
            resource = client.set_dns_ips(resource["id"], after)
    return {
        "fqdn": fqdn,
        "before": before,
        "after": after,
        "changed": changed or created,
        "created": created,
        "message": why,
        "id": (resource or {}).get("id"),
    }


def attached(mm: dict, record_ips: list[str]) -> bool:
    """MachineIsRegisteredWithAPIServerDNS: any of the machine's addresses is in the record."""
    mine = {a.get("address") for a in (mm.get("status") or {}).get("addresses") or []}
    return bool(mine & set(record_ips))


def delete_resource(client, fqdn: str | None, *, check: bool = False) -> bool:
    """Delete the record (upstream never does).  True if there was one."""
    if not fqdn:
        return False
    try:
        found = client.find_dns(fqdn)
    except NotFound:
        return False
    if found is None:
        return False
    if not check:
        client.delete_dns(found["id"])
    return True
