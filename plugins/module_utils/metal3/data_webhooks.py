"""Validation and defaults of Metal3DataTemplate, Metal3Data and Metal3DataClaim.

What the API server does for these kinds, since no API server runs in front of
the sqlite store: the CRD schema (enums, ranges, patterns, list-map keys,
``+kubebuilder:default`` values) and CAPM3's webhooks
(C:internal/webhooks/v1beta2/metal3datatemplate_webhook.go and friends).
"""

from __future__ import annotations

import copy
import re

from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.metal3 import ipaddr
from ansible_collections.baremetal.capi.plugins.module_utils.metal3.render import OBJECTS
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta

ETHERNET_TYPES = ("bridge", "dvs", "hw_veb", "hyperv", "ovs", "tap", "vhostuser", "vif", "phy")
BOND_MODES = ("balance-rr", "active-backup", "balance-xor", "broadcast", "balance-tlb", "balance-alb", "802.3ad")
XMIT_POLICIES = ("layer2", "layer3+4", "layer2+3")
LINK_NAME = re.compile(r"^[a-zA-Z][a-zA-Z0-9._-]*$")
META_LISTS = (
    "strings",
    "objectNames",
    "indexes",
    "namespaces",
    "ipAddressesFromPool",
    "prefixesFromPool",
    "gatewaysFromPool",
    "dnsServersFromPool",
    "fromHostInterfaces",
    "fromLabels",
    "fromAnnotations",
)
FROM_POOL_LISTS = ("ipAddressesFromPool", "prefixesFromPool", "gatewaysFromPool", "dnsServersFromPool")


def default_template(obj: dict) -> dict:
    """A copy with the CRD defaults: step 1, mtu 1500, FromPool apiGroup/kind."""
    out = copy.deepcopy(obj)
    spec = out.setdefault("spec", {})
    md = spec.get("metaData")
    if isinstance(md, dict):
        for e in md.get("indexes") or []:
            if isinstance(e, dict):
                e.setdefault("step", 1)
        for key in FROM_POOL_LISTS:
            for e in md.get(key) or []:
                if isinstance(e, dict):
                    e.setdefault("apiGroup", "ipam.metal3.io")
                    e.setdefault("kind", "IPPool")
    links = (spec.get("networkData") or {}).get("links") if isinstance(spec.get("networkData"), dict) else None
    for kind in ("ethernets", "bonds", "vlans"):
        for link in (links or {}).get(kind) or []:
            if isinstance(link, dict) and not link.get("mtu"):
                link["mtu"] = 1500
    return out


class _V:
    def __init__(self, obj):
        self.where = meta.ref(obj)

    def fail(self, msg, field):
        raise Invalid(msg, obj=self.where, field=field)

    def enum(self, value, allowed, field):
        if value not in allowed:
            self.fail(f"must be one of {', '.join(allowed)}, got {value!r}", field)

    def ip(self, value, field, version=None):
        ip = ipaddr.parse(value)
        if ip is None or (version and ip.version != version):
            self.fail(f"invalid IPv{version or ''} address {value!r}", field)

    def integer(self, value, lo, hi, field):
        if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
            self.fail(f"must be an integer {lo}..{hi}, got {value!r}", field)

    def listmap(self, items, key, field):
        if items is None:
            return []
        if not isinstance(items, list):
            self.fail("must be a list", field)
        seen = set()
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                self.fail("must be a mapping", f"{field}[{i}]")
            if item.get(key) in (None, ""):
                self.fail(f"{key} is required", f"{field}[{i}].{key}")
            if item[key] in seen:
                self.fail(f"duplicate {key} {item[key]!r}", f"{field}[{i}].{key}")
            seen.add(item[key])
        return items


def _meta_data(v: _V, md: dict) -> None:
    base = "spec.metaData"
    if not isinstance(md, dict):
        v.fail("must be a mapping", base)
    unknown = set(md) - set(META_LISTS)
    if unknown:
        v.fail(f"unknown field(s) {', '.join(sorted(unknown))}", base)
    for name in META_LISTS:
        v.listmap(md.get(name), "key", f"{base}.{name}")
    for key in ("objectNames", "fromLabels", "fromAnnotations"):
        for i, e in enumerate(md.get(key) or []):
            v.enum(str(e.get("object", "")).lower(), OBJECTS, f"{base}.{key}[{i}].object")
    for i, e in enumerate(md.get("indexes") or []):
        v.integer(e.get("offset", 0), 0, 1 << 62, f"{base}.indexes[{i}].offset")
        v.integer(e.get("step", 1), 1, 1 << 62, f"{base}.indexes[{i}].step")
    for key in FROM_POOL_LISTS:
        for i, e in enumerate(md.get(key) or []):
            if not e.get("name"):
                v.fail("name is required", f"{base}.{key}[{i}].name")
    for i, e in enumerate(md.get("fromHostInterfaces") or []):
        # C: webhook: interface is required unless fromBootMAC, and must be empty with it
        if e.get("fromBootMAC") and e.get("interface"):
            v.fail("interface must be empty when fromBootMAC is true", f"{base}.fromHostInterfaces[{i}].interface")
        if not e.get("fromBootMAC") and not e.get("interface"):
            v.fail("interface is required unless fromBootMAC is true", f"{base}.fromHostInterfaces[{i}].interface")


def _link(v: _V, link: dict, field: str) -> None:
    if link.get("name") and (len(link["name"]) > 15 or not LINK_NAME.match(link["name"])):
        v.fail(f"invalid interface name {link['name']!r} (max 15, ^[a-zA-Z][a-zA-Z0-9._-]*$)", f"{field}.name")
    v.integer(link.get("mtu", 1500), 1280, 9000, f"{field}.mtu")
    mac = link.get("macAddress")
    if mac is not None:
        if (
            not isinstance(mac, dict)
            or len([k for k in ("string", "fromHostInterface", "fromAnnotation") if mac.get(k) is not None]) > 1
        ):
            v.fail("give one of string, fromHostInterface or fromAnnotation", f"{field}.macAddress")
        if mac.get("fromAnnotation") is not None:
            v.enum(
                str(mac["fromAnnotation"].get("object", "")).lower(),
                OBJECTS,
                f"{field}.macAddress.fromAnnotation.object",
            )


def _routes(v: _V, routes, version: int, field: str) -> None:
    for j, route in enumerate(routes or []):
        rf = f"{field}.routes[{j}]"
        v.ip(route.get("network"), f"{rf}.network", version)
        v.integer(route.get("prefix", 0), 0, 32 if version == 4 else 128, f"{rf}.prefix")
        gw = route.get("gateway") or {}
        if gw.get("string"):
            v.ip(gw["string"], f"{rf}.gateway.string", version)
        for k, dns in enumerate((route.get("services") or {}).get("dns") or []):
            v.ip(dns, f"{rf}.services.dns[{k}]", version)


def _network_data(v: _V, nd: dict) -> None:
    base = "spec.networkData"
    if not isinstance(nd, dict):
        v.fail("must be a mapping", base)
    links = nd.get("links") or {}
    for i, link in enumerate(v.listmap(links.get("ethernets"), "id", f"{base}.links.ethernets")):
        v.enum(link.get("type"), ETHERNET_TYPES, f"{base}.links.ethernets[{i}].type")
        _link(v, link, f"{base}.links.ethernets[{i}]")
    for i, link in enumerate(v.listmap(links.get("bonds"), "id", f"{base}.links.bonds")):
        field = f"{base}.links.bonds[{i}]"
        v.enum(link.get("bondMode"), BOND_MODES, f"{field}.bondMode")
        if link.get("bondXmitHashPolicy"):
            v.enum(link["bondXmitHashPolicy"], XMIT_POLICIES, f"{field}.bondXmitHashPolicy")
        _link(v, link, field)
        params = link.get("parameters")
        if params is not None:
            if not isinstance(params, list):
                v.fail("must be a list of {name, value}", f"{field}.parameters")
            v.listmap(params, "name", f"{field}.parameters")
    for i, link in enumerate(v.listmap(links.get("vlans"), "vlanID", f"{base}.links.vlans")):
        v.integer(link.get("vlanID"), 0, 4096, f"{base}.links.vlans[{i}].vlanID")
        _link(v, link, f"{base}.links.vlans[{i}]")
    networks = nd.get("networks") or {}
    for family, version in (("ipv4", 4), ("ipv6", 6), ("ipv4DHCP", 4), ("ipv6DHCP", 6), ("ipv6SLAAC", 6)):
        for i, net in enumerate(networks.get(family) or []):
            field = f"{base}.networks.{family}[{i}]"
            if not isinstance(net, dict) or not net.get("id") or not net.get("link"):
                v.fail("id and link are required", field)
            if family in ("ipv4", "ipv6") and not (
                (net.get("fromPoolRef") or {}).get("name")
                or net.get("ipAddressFromIPPool")
                or (net.get("fromPoolAnnotation") or {}).get("object")
            ):
                # C: webhook, Metal3DataTemplate create
                v.fail("fromPoolRef.name, ipAddressFromIPPool or fromPoolAnnotation.object is required", field)
            _routes(v, net.get("routes"), version, field)
    for k, dns in enumerate((nd.get("services") or {}).get("dns") or []):
        v.ip(dns, f"{base}.services.dns[{k}]")


def validate_template(obj: dict, old: dict | None = None) -> list[str]:
    """Raise Invalid on a bad template; return the webhook's warnings."""
    v = _V(obj)
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        v.fail("spec is required", "spec")
    unknown = set(spec) - {"clusterName", "metaData", "networkData"}
    if unknown:
        v.fail(f"unknown field(s) {', '.join(sorted(unknown))}", "spec")
    if spec.get("metaData") is not None:
        _meta_data(v, spec["metaData"])
    if spec.get("networkData") is not None:
        _network_data(v, spec["networkData"])
    if old is not None:
        for key in ("metaData", "networkData"):
            if (old.get("spec") or {}).get(key) != spec.get(key):
                v.fail(
                    f"{key} is immutable once the template exists: create a new Metal3DataTemplate and point "
                    "the Metal3MachineTemplate at it",
                    f"spec.{key}",
                )
    if spec.get("clusterName"):
        return ["spec.clusterName is deprecated and has no effect"]
    return []


def validate_data(obj: dict, old: dict | None = None) -> None:
    v = _V(obj)
    spec = obj.get("spec") or {}
    v.integer(spec.get("index"), 0, 1 << 62, "spec.index")
    expected = f"{(spec.get('template') or {}).get('name')}-{spec.get('index')}"
    if meta.name(obj) != expected:
        v.fail(f"the name must be {expected!r} (<template>-<index>)", "metadata.name")
    if old is not None:
        for key in ("index", "template", "claim"):
            if (old.get("spec") or {}).get(key) != spec.get(key):
                v.fail("cannot be modified", f"spec.{key}")


def validate_claim(obj: dict, old: dict | None = None) -> None:
    v = _V(obj)
    template = (obj.get("spec") or {}).get("template") or {}
    if not template.get("name"):
        v.fail("template name is required", "spec.template.name")
    if template.get("namespace") not in (None, "", meta.namespace(obj)):
        v.fail("the template must be in the claim's namespace", "spec.template.namespace")
    if old is not None and (old.get("spec") or {}).get("template", {}).get("name") != template.get("name"):
        v.fail("cannot be modified", "spec.template")
