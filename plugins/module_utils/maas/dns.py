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

With ``spec.apiServerInterfaceName`` (CAPMAAS spectrocloud-public 1ff63c3, issue #385) a running control
plane publishes the first address on that MAAS interface instead of its first ExternalIP, read from
``GET nodes/{system_id}/interfaces/``; the name goes to ``status.network.publishedInterfaceName``.
"""

from __future__ import annotations

import threading

from ansible_collections.baremetal.capi.plugins.module_utils.capi import refs
from ansible_collections.baremetal.capi.plugins.module_utils.errors import CapiError, Invalid, NotFound, Requeue
from ansible_collections.baremetal.capi.plugins.module_utils.maas import state
from ansible_collections.baremetal.capi.plugins.module_utils.maas.client import dns_ips
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta, names
from ansible_collections.baremetal.capi.plugins.module_utils.store import mutate

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


def interface_name(maas_cluster: dict | None) -> str:
    """``spec.apiServerInterfaceName``; empty: the legacy first ExternalIP."""
    return ((maas_cluster or {}).get("spec") or {}).get("apiServerInterfaceName") or ""


def published_ips(client, cps: list[dict], iface: str, maas_cluster: dict) -> dict[str, str]:
    """MaasMachine name -> the address it publishes on ``iface``, for the running control planes not being
    deleted (the others are detached by their ExternalIP, as upstream does).  {} in legacy mode."""
    if not iface:
        return {}
    out = {}
    for mm in cps:
        if not state.running(mm) or meta.is_deleting(mm):
            continue
        try:
            out[meta.name(mm)] = state.select_machine_ip(mm, iface, client.list_interfaces)
        except CapiError as exc:
            raise CapiError(exc.message, obj=meta.ref(maas_cluster), field="spec.apiServerInterfaceName") from None
    return out


def set_published_interface(status: dict, iface: str) -> bool:
    """``status.network.publishedInterfaceName`` = ``iface`` (absent when empty, as upstream's omitempty)."""
    network = status.setdefault("network", {})
    if (network.get("publishedInterfaceName") or "") == iface:
        return False
    if iface:
        network["publishedInterfaceName"] = iface
    else:
        network.pop("publishedInterfaceName", None)
    return True


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

    ``{"fqdn", "before", "after", "changed", "created", "message", "published_interface"}``; Requeue while
    the MaasCluster has no DNS name yet.  Given ``maas_cluster``, the caller writes it (and its
    ``publishedInterfaceName``); otherwise the stored MaasCluster's status gets the interface name here.
    """
    caller_writes = maas_cluster is not None
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
        iface = interface_name(maas_cluster)
        published = published_ips(client, cps, iface, maas_cluster)
        after, why = state.desired_dns_ips(cps, before, preferred_subnets(store, ns, subnets), published)
        changed = sorted(before) != after
        if changed and not check:
            resource = client.set_dns_ips(resource["id"], after)
    published_changed = []
    if not caller_writes and not check:

        def publish(mc: dict) -> bool:
            published_changed[:] = [set_published_interface(mc.setdefault("status", {}), iface)]
            return published_changed[0]

        mutate.mutate(store, "MaasCluster", meta.name(maas_cluster), meta.namespace(maas_cluster) or ns, publish,
                      status=True, missing_ok=True)  # fmt: skip
    return {
        "published_interface": iface,
        "fqdn": fqdn,
        "before": before,
        "after": after,
        "changed": changed or created or any(published_changed),
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
