# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Pure functions of the MAAS flows: dicts in, dicts out, no I/O.

providerID, image split, addresses, the Node a machine
became, which control-plane addresses the API's DNS record should hold, and
what a MaasMachine step reports (``report``: the reconcile in maas/machine.py
and the delete in maas/machine_delete.py both return it).
"""

from __future__ import annotations

import base64
import ipaddress

from ansible_collections.baremetal.capi.plugins.module_utils.errors import CapiError, Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta, names


def provider_id(zone: str, system_id: str) -> str:
    # CAPMAAS scope/machine.go SetProviderID: three slashes, whatever the type comment says
    return f"{names.MAAS_PROVIDER_ID_PREFIX}{zone}/{system_id}"


def system_id_of(provider: str | None) -> str | None:
    """The system ID: the segment after the last ``/`` (pkg/util/machine.go)."""
    if not provider or "://" not in provider or provider.endswith("/"):
        return None
    return provider.rsplit("/", 1)[-1] or None


def split_image(image: str) -> tuple[str, str]:
    """``osystem/series`` -> (osystem, series); a name without ``/`` is a ``custom`` image (splitImage)."""
    if "/" in image:
        osystem, series = image.split("/", 1)
        return osystem, series
    return names.MAAS_CUSTOM_OSYSTEM, image


def validate(mm: dict) -> None:
    """What CAPMAAS's CRD and webhook enforce, before anything is written."""
    spec = mm.get("spec") or {}
    where = meta.ref(mm)
    if not isinstance(spec.get("image"), str) or not spec["image"]:
        raise Invalid("image is required (osystem/series or a custom image name)", obj=where, field="spec.image")
    for key in ("minCPU", "minMemory"):
        value = spec.get(key)
        if value is None:
            raise Invalid("required", obj=where, field=f"spec.{key}")
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise Invalid(f"must be an integer >= 0, got {value!r}", obj=where, field=f"spec.{key}")
    tags = spec.get("tags")
    if tags is not None and (not isinstance(tags, list) or not all(isinstance(t, str) and t for t in tags)):
        raise Invalid("must be a list of tag names", obj=where, field="spec.tags")


def user_data_b64(secret: dict, where: str) -> str:
    """The Secret's ``value`` base64-encoded (StdEncoding), as CAPMAAS sends ``user_data``."""
    value = (secret.get("data") or {}).get("value")
    if value is None and (secret.get("stringData") or {}).get("value") is not None:
        return base64.b64encode(secret["stringData"]["value"].encode()).decode()
    if not value:
        raise Invalid("the bootstrap data Secret has no key 'value'", obj=where, field="data.value")
    try:
        raw = base64.b64decode(value, validate=True)
    except ValueError:
        raise Invalid("data.value is not base64", obj=where, field="data.value") from None
    return base64.b64encode(raw).decode()


def addresses(m: dict) -> list[dict]:
    """v0.9: the FQDN as ExternalDNS and InternalDNS, each IP as ExternalIP and InternalIP (issue #174)."""
    out = []
    fqdn = m.get("fqdn")
    if fqdn:
        out += [{"type": "ExternalDNS", "address": fqdn}, {"type": "InternalDNS", "address": fqdn}]
    for ip in m.get("ip_addresses") or []:
        out += [{"type": "ExternalIP", "address": ip}, {"type": "InternalIP", "address": ip}]
    return out


def first_ip(mm: dict) -> str | None:
    for addr in (mm.get("status") or {}).get("addresses") or []:
        if addr.get("type") == "ExternalIP" and addr.get("address"):
            return addr["address"]
    return None


def running(mm: dict) -> bool:
    """Powered on and Deploying or Deployed (api/v1beta1/types.go MachineRunningStates)."""
    status = mm.get("status") or {}
    return bool(status.get("machinePowered")) and status.get("machineState") in names.MAAS_STATES_RUNNING


def is_control_plane(obj: dict) -> bool:
    return names.CONTROL_PLANE_LABEL in meta.labels(obj)


def in_subnets(ip: str, subnets) -> bool:
    addr = ipaddress.ip_address(ip)
    return any(addr in ipaddress.ip_network(s, strict=False) for s in subnets)


def interface_ip(interfaces: list[dict], name: str, system_id: str) -> str:
    """GetMachineIPForInterface: the first address among the links of the interface called ``name``.

    ``interfaces`` is MAAS's ``GET nodes/{system_id}/interfaces/`` answer.  The messages are upstream's.
    """
    for iface in interfaces or []:
        if not isinstance(iface, dict) or iface.get("name") != name:
            continue
        for link in iface.get("links") or []:
            if (link or {}).get("ip_address"):
                return link["ip_address"]
        raise CapiError(f'no IP found on interface "{name}" for machine "{system_id}"')
    raise CapiError(f'interface "{name}" not found for machine "{system_id}"')


def select_machine_ip(mm: dict, interface_name: str | None, resolver=None) -> str | None:
    """selectMachineIPForDNS: the address a running control-plane machine publishes in the API record.

    Without ``interface_name`` its first ExternalIP (legacy); with one, the first address on that MAAS
    interface, ``resolver(system_id)`` giving the machine's interfaces.  Errors name the MaasMachine, as
    upstream's ``unable to select API server IP for machine %q``.
    """
    if not interface_name:
        return first_ip(mm)
    try:
        system_id = (mm.get("spec") or {}).get("systemID")
        if not system_id:
            raise CapiError(f'systemID not set for machine "{meta.name(mm)}"')
        if resolver is None:
            raise CapiError("machine IP resolver is required")
        return interface_ip(resolver(system_id), interface_name, system_id)
    except CapiError as exc:
        raise CapiError(f'unable to select API server IP for machine "{meta.name(mm)}": {exc.message}') from None


def desired_dns_ips(
    cp_machines: list[dict], current: list[str], preferred_subnets=(), published: dict | None = None
) -> tuple[list[str], str]:
    """(the IPs the API record should hold, why).

    The first address of each running control-plane machine not being deleted
    (or, from ``published``, the address select_machine_ip chose for it by
    MaasMachine name), filtered by the preferred subnets when any address is
    in them, sorted and de-duplicated.  An empty result while control-plane
    machines that are not being deleted still exist keeps the current record:
    CAPMAAS main wrote the empty set and cut the workers off the API (PCP-6608).
    """
    published = published or {}
    chosen = (published.get(meta.name(m)) or first_ip(m) for m in cp_machines if running(m) and not meta.is_deleting(m))
    ips = sorted({ip for ip in chosen if ip})
    if preferred_subnets:
        preferred = [ip for ip in ips if in_subnets(ip, preferred_subnets)]
        ips = preferred or ips
    if not ips and any(not meta.is_deleting(m) for m in cp_machines) and current:
        return sorted(set(current)), "no control-plane machine is running; the record is kept"
    return ips, ""


def node_for_hostname(nodes: list[dict], hostname: str | None) -> dict | None:
    """CAPMAAS SetNodeProviderID: the lower-cased hostname, its short name, then any ``<hostname>.`` prefix."""
    if not hostname:
        return None
    host = hostname.lower()
    by_name = {meta.name(n): n for n in nodes}
    for candidate in (host, host.split(".", 1)[0]):
        if candidate in by_name:
            return by_name[candidate]
    for name in sorted(by_name):
        if name.startswith(host + "."):
            return by_name[name]
    return None


def report(mm: dict, **extra) -> dict:
    """A MaasMachine step's result data: providerID, system ID, hostname, MAAS state, power (and ``extra``)."""
    spec, status = mm.get("spec") or {}, mm.get("status") or {}
    return {
        "providerID": spec.get("providerID"),
        "systemID": spec.get("systemID"),
        "hostname": status.get("hostname"),
        "machineState": status.get("machineState"),
        "machinePowered": status.get("machinePowered"),
        **extra,
    }
