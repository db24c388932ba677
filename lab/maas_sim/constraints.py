"""Machine filters: AcquireNodeForm (op=allocate) and ReadNodesForm (GET /machines/).

Rules, field names and error strings are those of
src/maasserver/node_constraint_filter_forms.py: an unknown field is
``{"<field>": ["No such constraint."]}``, an unknown zone/pool/tag is a form
error, several constraints AND together, list values are repeated fields.
"""

from __future__ import annotations

import re

from lab.maas_sim import model, render
from lab.maas_sim.forms import Form, ValidationError, float_param
from lab.maas_sim.model import Machine, Store

FILTER_FIELDS = ["arch", "tags", "not_tags", "fabrics", "not_fabrics", "fabric_classes", "not_fabric_classes",
                 "subnets", "not_subnets", "link_speed", "vlans", "not_vlans", "connected_to", "not_connected_to",
                 "zone", "not_in_zone", "pool", "not_in_pool", "storage", "interfaces", "devices", "cpu_count",
                 "mem", "pod", "not_pod", "pod_type", "not_pod_type"]  # fmt: skip
ACQUIRE_FIELDS = FILTER_FIELDS + ["name", "system_id"]
READ_FIELDS = FILTER_FIELDS + ["id", "hostname", "mac_address", "domain", "agent_name", "status"]
IGNORED_FIELDS = {"comment", "bridge_all", "bridge_type", "bridge_stp", "bridge_fd", "dry_run", "verbose", "op",
                  "agent_name"}  # fmt: skip
MULTI = {"tags", "not_tags", "fabrics", "not_fabrics", "fabric_classes", "not_fabric_classes", "subnets",
         "not_subnets", "vlans", "not_vlans", "connected_to", "not_connected_to", "not_in_zone", "not_in_pool",
         "id", "hostname", "mac_address", "domain"}  # fmt: skip
USABLE_ARCHES = {"amd64/generic", "arm64/generic", "i386/generic", "armhf/generic", "ppc64el/generic", "s390x/generic"}
NETWORKING_KEYS = {"id", "fabric", "fabric_class", "ip", "mode", "name", "hostname", "subnet", "space",
                   "subnet_cidr", "type", "vlan", "vid", "tag", "link_speed"}  # fmt: skip
NETWORKING_KEYS |= {"not_" + k for k in NETWORKING_KEYS - {"mode", "type", "link_speed"}}
DEVICE_KEYS = {"vendor_id", "product_id", "vendor_name", "product_name", "commissioning_driver"}
STORAGE_RE = re.compile(r"(?:(?P<label>[a-zA-Z0-9]+)\:)?(?P<size>[0-9.]+)(?:\((?P<tags>[^)]+)\))?")
MAC_RE = re.compile(r"^([0-9a-fA-F]{2}[:-]){5}[0-9a-fA-F]{2}$")

# The lab has one subnet on one VLAN of one fabric; these specifiers name it.
SUBNET_SPECS = {"1", "id:1", "name:127.0.2.0/24", "cidr:127.0.2.0/24", "127.0.2.0/24", "space:undefined",
                "vid:0", "vlan:5001", "fabric:fabric-0", "fabric:0"}  # fmt: skip
VLAN_SPECS = {"5001", "id:5001", "vid:0", "name:untagged", "fabric:fabric-0", "fabric:0", "space:undefined"}


def _split_legacy(values: list[str]) -> list[str]:
    return [t for v in values for t in re.findall(r"[^\s,]+", v)]


def clean(store: Store, data: Form, allowed: list[str]) -> dict:
    """Validate ``data`` as the MAAS form would; return the cleaned values (None when unset)."""
    errors: dict[str, list[str]] = {}
    for key in data.keys():
        if key not in allowed and key not in IGNORED_FIELDS:
            errors[key] = ["No such constraint."]
    c: dict = {}
    for key in allowed:
        c[key] = [v for v in data.getlist(key) if v != ""] if key in MULTI else (data.get(key) or None)

    def err(key, msg):
        errors.setdefault(key, []).append(msg)

    if c["arch"]:
        arch = c["arch"]
        wildcards = {a.split("/")[0] for a in USABLE_ARCHES} | {"arm"}
        if arch in USABLE_ARCHES:
            c["arch"] = [arch]
        elif arch in wildcards:
            primary = "armhf" if arch == "arm" else arch
            c["arch"] = sorted(a for a in USABLE_ARCHES if a.split("/")[0] == primary)
        else:
            err("arch", "Architecture not recognised.")
    if c["tags"]:
        names = set(_split_legacy(c["tags"]))
        unknown = names - set(store.tags)
        if unknown:
            err("tags", "No such tag(s): {}.".format(", ".join(f"'{t}'" for t in sorted(unknown))))
        c["tags"] = names
    if c["not_tags"]:
        c["not_tags"] = set(_split_legacy(c["not_tags"]))
    if c["zone"] and c["zone"] not in store.zones:
        err("zone", f"No such zone: '{c['zone']}'.")
    if c["not_in_zone"]:
        missing = sorted(set(c["not_in_zone"]) - set(store.zones))
        if missing:
            err("not_in_zone", "No such zone(s): {}.".format(", ".join(missing)))
    pool_names = {p["name"] for p in store.pools.values()}
    if c["pool"] and c["pool"] not in pool_names:
        err("pool", f"No such pool: '{c['pool']}'.")
    if c["not_in_pool"]:
        missing = sorted(set(c["not_in_pool"]) - pool_names)
        if missing:
            err("not_in_pool", "No such pool(s): {}.".format(", ".join(missing)))
    for key, specs, plural in (("subnets", SUBNET_SPECS, "subnets"), ("not_subnets", SUBNET_SPECS, "subnets"),
                               ("vlans", VLAN_SPECS, "VLANs"), ("not_vlans", VLAN_SPECS, "VLANs")):  # fmt: skip
        if c[key] and not set(c[key]) & specs:
            err(key, f"No matching {plural} found.")
    for key in ("connected_to", "not_connected_to", "mac_address"):
        for mac in c.get(key) or []:
            if not MAC_RE.match(mac):
                err(key, f"'{mac}' is not a valid MAC address.")
    for key, msg in (("cpu_count", "Invalid CPU count: number required."),
                     ("mem", "Invalid memory: number of MiB required."),
                     ("link_speed", "Invalid link speed: number required.")):  # fmt: skip
        try:
            c[key] = float_param(data, key, msg)
        except ValidationError as exc:
            errors.update(exc.errors)
    if c["storage"]:
        groups = STORAGE_RE.findall(c["storage"])
        rendered = [(f"{n}:" if n else "") + s + (f"({t})" if t else "") for n, s, t in groups]
        if not groups or ",".join(rendered) != c["storage"]:
            err("storage", f'Malformed storage constraint, "{c["storage"]}".')
        c["storage_groups"] = groups
    if c["interfaces"]:
        try:
            c["interfaces"] = _parse_labeled_map(c["interfaces"])
        except ValueError as exc:
            err("interfaces", str(exc))
    if c["devices"]:
        for item in c["devices"].split(","):
            if item.split("=", 1)[0] not in DEVICE_KEYS:
                err("devices", "Unknown devices constraint: '{}".format(item.split("=", 1)[0]))
    if "status" in c and c["status"] and c["status"] not in model.STATUS_SHORT.values():
        err("status", f"Select a valid choice. {c['status']} is not one of the available choices.")
    if errors:
        raise ValidationError(errors)
    c["_given"] = set(data.keys())
    c["_agent"] = data.get("agent_name", "")
    return c


def _parse_labeled_map(text: str) -> dict:
    """provisioningserver.utils.constraints.LabeledConstraintMap: ``label:k=v,k=v;label2:...``."""
    result = {}
    for group in text.split(";"):
        if ":" not in group:
            raise ValueError("Malformed constraint map: missing label.")
        label, body = group.split(":", 1)
        entries: dict[str, list[str]] = {}
        for item in body.split(","):
            if "=" not in item:
                raise ValueError(f"Malformed constraint: {item}")
            key, value = item.split("=", 1)
            if key not in NETWORKING_KEYS:
                raise ValueError(f"Unknown interfaces constraint: '{key}")
            entries.setdefault(key, []).append(value)
        result[label] = entries
    return result


def _iface_matches(store: Store, m: Machine, wanted: dict) -> bool:
    facts = {"id": {str(m.interface_id)}, "name": {"eth0"}, "hostname": {m.hostname}, "fabric": {"fabric-0", "0"},
             "vid": {"0"}, "vlan": {"5001", "untagged"}, "subnet": {"1", "127.0.2.0/24"},
             "subnet_cidr": {"127.0.2.0/24"}, "space": {"undefined"}, "type": {"physical"},
             "ip": set(render.addresses(m)), "tag": set(), "fabric_class": set(), "mode": set()}  # fmt: skip
    for key, values in wanted.items():
        if key == "link_speed":
            if any(1000 < float(v) for v in values):
                return False
            continue
        negate = key.startswith("not_")
        have = facts.get(key[4:] if negate else key, set())
        hit = any(v in have for v in values)
        if hit == negate:
            return False
    return True


def matches(store: Store, m: Machine, c: dict) -> bool:
    if c["arch"] and m.architecture not in c["arch"]:
        return False
    if c["tags"] and not set(c["tags"]) <= set(m.tags):
        return False
    if c["not_tags"] and set(c["not_tags"]) & set(m.tags):
        return False
    if c["zone"] and m.zone != c["zone"]:
        return False
    if c["not_in_zone"] and m.zone in c["not_in_zone"]:
        return False
    if c["pool"] and m.pool != c["pool"]:
        return False
    if c["not_in_pool"] and m.pool in c["not_in_pool"]:
        return False
    if c["cpu_count"] and m.cpu_count < c["cpu_count"]:
        return False
    if c["mem"] and m.memory < c["mem"]:
        return False
    if c["link_speed"] and c["link_speed"] > 1000:
        return False
    # Every machine here sits on fabric-0 / VLAN 5001 / subnet 1, has no LLDP neighbours,
    # no PCI/USB devices, no pod, and no fabric class.
    if c["not_subnets"] or c["not_vlans"]:
        return False
    if c["fabrics"] and not set(c["fabrics"]) & {"fabric-0"}:
        return False
    if c["not_fabrics"] and set(c["not_fabrics"]) & {"fabric-0"}:
        return False
    if c["fabric_classes"] or c["connected_to"] or c["devices"]:
        return False
    # FilterNodeForm.filter_by_pod_or_pod_type keeps only machines in some pod once any
    # pod constraint is given, so a bare-metal machine never matches one.
    if c["pod"] or c["not_pod"] or c["pod_type"] or c["not_pod_type"]:
        return False
    if c["storage"]:
        for i, (_, size, tags) in enumerate(c["storage_groups"]):
            want_tags = set(tags.split(",")) if tags else set()
            disk_tags = {"ssd"} if "ssd" in m.tags else set()
            if i > 0 or float(size) * 1000**3 > m.disk_bytes or not want_tags <= disk_tags:
                return False
    if c["interfaces"] and not all(_iface_matches(store, m, w) for w in c["interfaces"].values()):
        return False
    if c.get("name"):
        name = c["name"]
        if "." in name:
            host, dom = name.split(".", 1)
            if m.hostname != host or store.domains[m.domain]["name"] != dom:
                return False
        elif m.hostname != name:
            return False
    if c.get("system_id") and m.system_id != c["system_id"]:
        return False
    if c.get("id") and m.system_id not in c["id"]:
        return False
    if c.get("hostname") and m.hostname not in c["hostname"]:
        return False
    if c.get("mac_address") and m.mac.lower() not in {x.lower().replace("-", ":") for x in c["mac_address"]}:
        return False
    if c.get("domain") and store.domains[m.domain]["name"] not in c["domain"]:
        return False
    if "agent_name" in c and "agent_name" in c["_given"] and m.agent_name != c["_agent"]:
        return False
    if c.get("status") and model.STATUS_SHORT[m.status] != c["status"]:
        return False
    return True


def describe(c: dict, allowed: list[str]) -> str:
    """FilterNodeForm.describe_constraints: ``name=value`` pairs in field-name order."""
    out = []
    for key in sorted(allowed):
        value = c.get(key)
        if value is None or value == [] or value == set() or value == "":
            continue
        if key == "interfaces" and isinstance(value, dict):
            value = ";".join(f"{label}:" + ",".join(f"{k}={v}" for k, vs in m.items() for v in vs)
                             for label, m in value.items())  # fmt: skip
        elif isinstance(value, (set, frozenset)):
            value = ",".join(sorted(value))
        elif isinstance(value, list):
            value = ",".join(str(v) for v in value)
        out.append(f"{key}={value}")
    return " ".join(out)
