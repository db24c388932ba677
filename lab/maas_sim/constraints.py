"""Machine filters as MAAS 3.5 has them: AcquireNodeForm (op=allocate), ReadNodesForm (GET /machines/).

Field names, kinds, error strings and matching rules are those of
src/maasserver/node_constraint_filter_forms.py (FilterNodeForm and its two
subclasses): almost every field is multi-valued (a repeated form field);
``*_filters`` keep a machine matching *any* value (``_match_any``), except
``tags`` and ``subnets`` (every value, ``_match_all``) and the numbers
(``cpu_count``, ``cpu_speed``, ``mem``, ``link_speed``: at least the smallest
value, ``_match_gte``); ``not_*`` exclude a machine matching any value. Pod
constraints compare the machine's BMC (name, power_type), so since 3.3 a
bare-metal machine (BMC type ipmi, no name) matches ``not_pod_type=lxd`` and
``not_pod=x``. An unknown field is ``{"<field>": ["No such constraint."]}``.
"""

from __future__ import annotations

import re

from lab.maas_sim import model, render
from lab.maas_sim.forms import Form, ValidationError
from lab.maas_sim.model import Machine, Store
from lab.maas_sim.net import CIDR

# kind: multi (UnconstrainedMultipleChoiceField), float (UnconstrainedTypedMultipleChoiceField,
# coerce=float), choice (ConstrainedMultipleChoiceField, clean_prefix "="), char (CharField: last value)
_FLOAT_MSG = {"cpu_count": "Invalid CPU count: number required.",
              "cpu_speed": "Invalid CPU speed: number required.",
              "mem": "Invalid memory: number of MiB required.",
              "link_speed": "Invalid link speed: number required."}  # fmt: skip
POWER_STATES = ("error", "off", "on", "unknown")  # POWER_STATE_CHOICES
SIMPLE_STATUS = {
    "allocated": {model.ALLOCATED}, "broken": {model.BROKEN}, "commissioning": {model.COMMISSIONING},
    "deployed": {model.DEPLOYED}, "deploying": {model.DEPLOYING}, "new": {model.NEW}, "ready": {model.READY},
    "releasing": {model.DISK_ERASING, model.RELEASING}, "testing": {model.TESTING},
    "rescue_mode": {model.ENTERING_RESCUE_MODE, model.EXITING_RESCUE_MODE, model.RESCUE_MODE},
    "failed": {model.FAILED_COMMISSIONING, model.FAILED_DEPLOYMENT, model.FAILED_RELEASING,
               model.FAILED_DISK_ERASING, model.FAILED_ENTERING_RESCUE_MODE, model.FAILED_EXITING_RESCUE_MODE,
               model.FAILED_TESTING},
}  # fmt: skip
SIMPLE_STATUS["other"] = set(model.STATUS_NAMES) - set().union(*SIMPLE_STATUS.values())

FILTER_FIELDS = {
    "arch": "multi", "not_arch": "multi", "tags": "multi", "not_tags": "multi", "fabrics": "multi",
    "not_fabrics": "multi", "fabric_classes": "multi", "not_fabric_classes": "multi", "subnets": "multi",
    "not_subnets": "multi", "link_speed": "float", "vlans": "multi", "not_vlans": "multi", "zone": "multi",
    "not_in_zone": "multi", "pool": "multi", "not_in_pool": "multi", "storage": "char", "interfaces": "char",
    "devices": "char", "cpu_count": "float", "cpu_speed": "float", "mem": "float", "pod": "multi",
    "not_pod": "multi", "pod_type": "multi", "not_pod_type": "multi", "owner": "multi", "not_owner": "multi",
    "power_state": "choice", "not_power_state": "choice", "system_id": "multi", "deployment_target": "choice",
    "not_deployment_target": "choice",
}  # fmt: skip
# system_id and deployment_target are FilterNodeForm's since 3.5 (its test_describe_constraints_shows_all_constraints
# lists every field): GET machines/ takes them too; not_system_id is no field (only a NODE_EXCLUDES entry)
ACQUIRE_FIELDS = {**FILTER_FIELDS, "name": "multi"}
READ_FIELDS = {**FILTER_FIELDS, "id": "multi", "not_id": "multi", "hostname": "multi", "not_hostname": "multi",
               "mac_address": "multi", "domain": "multi", "not_domain": "multi", "agent_name": "multi",
               "not_agent_name": "multi", "status": "choice", "not_status": "choice", "simple_status": "choice",
               "not_simple_status": "choice"}  # fmt: skip
_STATUS_CHOICES = tuple(sorted(model.STATUS_SHORT.values()))  # NODE_STATUS_SHORT_LABEL_CHOICES
DEPLOYMENT_TARGETS = ("disk", "memory")  # DEPLOYMENT_TARGET_CHOICES
CHOICES = {
    "deployment_target": DEPLOYMENT_TARGETS,
    "not_deployment_target": DEPLOYMENT_TARGETS,
    "power_state": POWER_STATES,
    "not_power_state": POWER_STATES,
    "status": _STATUS_CHOICES,
    "not_status": _STATUS_CHOICES,
    "simple_status": tuple(sorted(SIMPLE_STATUS)),
    "not_simple_status": tuple(sorted(SIMPLE_STATUS)),
}
# Not constraints, never "No such constraint." (IGNORED_FIELDS)
IGNORED_FIELDS = {"comment", "bridge_all", "bridge_type", "bridge_stp", "bridge_fd", "dry_run", "verbose", "op",
                  "agent_name"}  # fmt: skip

USABLE_ARCHES = {"amd64/generic", "arm64/generic", "i386/generic", "armhf/generic", "ppc64el/generic", "s390x/generic"}
NETWORKING_KEYS = {"id", "not_id", "fabric", "not_fabric", "fabric_class", "not_fabric_class", "ip", "not_ip", "mode",
                   "name", "not_name", "hostname", "not_hostname", "subnet", "not_subnet", "space", "not_space",
                   "subnet_cidr", "not_subnet_cidr", "type", "vlan", "not_vlan", "vid", "not_vid", "tag", "not_tag",
                   "link_speed"}  # fmt: skip
DEVICE_KEYS = {"vendor_id", "product_id", "vendor_name", "product_name", "commissioning_driver"}
STORAGE_RE = re.compile(r"(?:(?P<label>[a-zA-Z0-9]+)\:)?(?P<size>[0-9.]+)(?:\((?P<tags>[^)]+)\))?")
MAC_RE = re.compile(r"^([0-9a-fA-F]{2}[:-]){5}[0-9a-fA-F]{2}$")

# The lab has one subnet on one VLAN of one fabric; these specifiers name it.
SUBNET_SPECS = {"1", "id:1", f"name:{CIDR}", f"cidr:{CIDR}", CIDR, "space:undefined",
                "vid:0", "vlan:5001", "fabric:fabric-0", "fabric:0"}  # fmt: skip
VLAN_SPECS = {"5001", "id:5001", "vid:0", "name:untagged", "fabric:fabric-0", "fabric:0", "space:undefined"}


def _split_legacy(values: list[str]) -> list[str]:
    return [t for v in values for t in re.findall(r"[^\s,]+", v)]


def _invalid_choice(value: str) -> str:
    return f"Select a valid choice. {value} is not one of the available choices."


def clean(store: Store, data: Form, allowed: dict[str, str]) -> dict:
    """Validate ``data`` as the MAAS form would; return the cleaned values (empty when unset)."""
    errors: dict[str, list[str]] = {}
    for key in data.keys():
        if key not in allowed and key not in IGNORED_FIELDS:
            errors[key] = ["No such constraint."]

    def err(key, msg):
        errors.setdefault(key, []).append(msg)

    c: dict = {}
    for key, kind in allowed.items():
        values = data.getlist(key)
        if kind == "char":
            c[key] = data.get(key) or None
        elif kind == "float":
            try:
                c[key] = [float(v) for v in values]
            except ValueError:
                err(key, _FLOAT_MSG[key])
                c[key] = []
        elif kind == "choice":
            c[key] = [v[1:] if v.startswith("=") else v for v in values]
            bad = [v for v in c[key] if v not in CHOICES[key]]
            if bad:
                err(key, _invalid_choice(bad[0]))
        else:
            c[key] = values

    if c["arch"]:
        wildcards = {a.split("/")[0] for a in USABLE_ARCHES} | {"arm"}
        arches = []
        for arch in c["arch"]:
            if arch in USABLE_ARCHES:
                arches.append(arch)
            elif arch in wildcards:
                primary = "armhf" if arch == "arm" else arch
                arches.extend(sorted(a for a in USABLE_ARCHES if a.split("/")[0] == primary))
            else:
                err("arch", "Architecture not recognised.")
                break
        c["arch"] = arches
    if c["tags"]:
        names = set(_split_legacy(c["tags"]))
        unknown = names - set(store.tags)
        if unknown:
            err("tags", "No such tag(s): {}.".format(", ".join(f"'{t}'" for t in sorted(unknown))))
        c["tags"] = names
    c["not_tags"] = set(c["not_tags"])
    # detect_nonexistent_names returns a list, so 3.5 always words these in the plural
    for key, known, what in (("zone", set(store.zones), "zone"), ("not_in_zone", set(store.zones), "zone"),
                             ("pool", {p["name"] for p in store.pools.values()}, "pool"),
                             ("not_in_pool", {p["name"] for p in store.pools.values()}, "pool")):  # fmt: skip
        missing = sorted(set(c[key]) - known)
        if missing:
            err(key, "No such {}(s): {}.".format(what, ", ".join(missing)))
    owners = sorted(set(c["owner"]) - set(store.users))
    if owners:
        err("owner", f"No such owner: '{owners[0]}'.")
    for key, specs, plural in (("subnets", SUBNET_SPECS, "subnets"), ("not_subnets", SUBNET_SPECS, "subnets"),
                               ("vlans", VLAN_SPECS, "VLANs"), ("not_vlans", VLAN_SPECS, "VLANs")):  # fmt: skip
        if c[key] and not set(c[key]) & specs:
            err(key, f"No matching {plural} found.")
    for mac in c.get("mac_address") or []:
        if not MAC_RE.match(mac):
            err("mac_address", "Invalid parameter: invalid MAC address format")
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
    if errors:
        raise ValidationError(errors)
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
    # one set of facts for all the machine's interfaces (a value matches when any interface has it)
    facts = {"id": {str(m.interface_id)} | {str(n["id"]) for n in m.nics},
             "name": {m.interface_name} | {n["name"] for n in m.nics}, "hostname": {m.hostname},
             "fabric": {"fabric-0", "0"}, "vid": {"0"}, "vlan": {"5001", "untagged"},
             "subnet": {"1", CIDR} | {v for n in m.nics for v in (str(n["subnet"]["id"]), n["subnet"]["cidr"])},
             "subnet_cidr": {CIDR} | {n["subnet"]["cidr"] for n in m.nics}, "space": {"undefined"},
             "type": {"physical"}, "ip": set(render.addresses(m)), "tag": set(), "fabric_class": set(),
             "mode": {"auto"} | {n["mode"] for n in m.nics}}  # fmt: skip
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


def _any(values, have) -> bool:
    return bool(set(values) & ({have} if isinstance(have, str) or have is None else set(have)))


def machine_facts(store: Store, m: Machine) -> dict:
    """What each filter compares, per machine (the ORM paths of NODE_FILTERS)."""
    pod = store.pods.get(m.pod) if m.pod is not None else None
    return {
        "arch": m.architecture, "zone": m.zone, "pool": m.pool, "owner": m.owner, "power_state": m.power_state,
        # bmc__name / bmc__power_type: a bare-metal BMC has no name and its own power type
        "pod": pod["name"] if pod else "", "pod_type": pod["type"] if pod else m.power_type,
        "fabrics": {"fabric-0"}, "fabric_classes": set(), "vlans": VLAN_SPECS, "subnets": SUBNET_SPECS,
        "system_id": m.system_id, "id": m.system_id, "hostname": m.hostname,
        "domain": store.domains[m.domain]["name"], "agent_name": m.agent_name,
        "status": model.STATUS_SHORT[m.status],
        "simple_status": next(k for k, v in SIMPLE_STATUS.items() if m.status in v),
        # DEPLOYMENT_TARGET: memory for an ephemeral deployment, disk otherwise (a machine never deployed too)
        "deployment_target": "memory" if m.ephemeral_deploy else "disk",
    }  # fmt: skip


_EXCLUDES = {"not_arch": "arch", "not_tags": None, "not_fabrics": "fabrics", "not_fabric_classes": "fabric_classes",
             "not_vlans": "vlans", "not_subnets": "subnets", "not_in_zone": "zone", "not_in_pool": "pool",
             "not_pod": "pod", "not_pod_type": "pod_type", "not_owner": "owner", "not_power_state": "power_state",
             "not_id": "id", "not_hostname": "hostname", "not_domain": "domain", "not_agent_name": "agent_name",
             "not_status": "status", "not_simple_status": "simple_status",
             "not_deployment_target": "deployment_target"}  # fmt: skip
_ANY = ("arch", "fabrics", "fabric_classes", "vlans", "zone", "pool", "pod", "pod_type", "owner", "power_state",
        "system_id", "id", "hostname", "domain", "agent_name", "status", "simple_status",
        "deployment_target")  # fmt: skip


def matches(store: Store, m: Machine, c: dict) -> bool:
    f = machine_facts(store, m)
    for key in _ANY:
        if c.get(key) and not _any(c[key], f[key]):
            return False
    for key, fact in _EXCLUDES.items():
        if key in c and c[key] and fact is not None and _any(c[key], f[fact]):
            return False
    if c["tags"] and not set(c["tags"]) <= set(m.tags):
        return False
    if c["not_tags"] and set(c["not_tags"]) & set(m.tags):
        return False
    for key, have in (("cpu_count", m.cpu_count), ("cpu_speed", m.cpu_speed), ("mem", m.memory),
                      ("link_speed", 1000)):  # fmt: skip
        if c[key] and have < min(c[key]):
            return False
    # subnets/vlans: clean() refused a specifier that names no subnet/VLAN; every machine sits on the lab's one
    if c["devices"]:
        return False  # no PCI/USB devices here
    if c["storage"]:
        for i, (_, size, tags) in enumerate(c["storage_groups"]):
            want_tags = set(tags.split(",")) if tags else set()
            disk_tags = {"ssd"} if "ssd" in m.tags else set()
            if i > 0 or float(size) * 1000**3 > m.disk_bytes or not want_tags <= disk_tags:
                return False
    if c["interfaces"] and not all(_iface_matches(store, m, w) for w in c["interfaces"].values()):
        return False
    # name: hostname, or hostname.domain (_match_compose_value, one filter per value: all must hold)
    for name in c.get("name") or []:
        host, _, dom = name.partition(".")
        if m.hostname != host or (dom and f["domain"] != dom):
            return False
    if c.get("mac_address") and m.mac.lower() not in {x.lower().replace("-", ":") for x in c["mac_address"]}:
        return False
    return True


def describe(c: dict, allowed: dict) -> str:
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
