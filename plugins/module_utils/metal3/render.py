"""metaData and networkData rendering: pure functions over dicts.

Mirrors CAPM3 baremetal/metal3data_manager.go (renderMetaData, renderNetworkData,
getReferencedPools, translateMask, getLinkMacAddress) and the serialisation of
sigs.k8s.io/yaml.Marshal (map keys in go-yaml v2's order).  Errors name the
template and the field that could not be rendered.
"""

from __future__ import annotations

import ipaddress
import re

from ansible_collections.baremetal.capi.plugins.module_utils import yamltext
from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta

M3_POOL_GROUP, M3_POOL_KIND = "ipam.metal3.io", "IPPool"
MAC_RE = re.compile(r"^([0-9A-Fa-f]{2}[:-]){5}([0-9A-Fa-f]{2})$")
DEFAULT_MTU = 1500  # CRD default
OBJECTS = ("machine", "metal3machine", "baremetalhost")
GO_INT_MIN, GO_INT_MAX = -(1 << 63), (1 << 63) - 1  # Go's int on the 64-bit platforms CAPM3 ships for
# What go-yaml's reader refuses ("control characters are not allowed"): sigs.k8s.io/yaml.Marshal
# writes JSON first (which escapes C0 controls) and reads it back with go-yaml, so these fail there.
YAML_REFUSED = re.compile("[\x7f-\x84\x86-\x9f\ufffe\uffff]")


class RenderContext:
    """What a render reads: the Metal3Data (index, namespace), the machine objects and the pool answers."""

    def __init__(self, template: dict, data: dict, m3m: dict, machine: dict, bmh: dict, pools: dict | None = None):
        self.template = template
        self.where = meta.ref(template)
        self.data = data
        self.objects = {"metal3machine": m3m, "machine": machine, "baremetalhost": bmh}
        self.pools = pools or {}

    def err(self, msg: str, field: str) -> Invalid:
        return Invalid(msg, obj=self.where, field=field)

    def obj(self, kind: str, field: str) -> dict:
        found = self.objects.get(str(kind or "").lower())
        if found is None:
            raise self.err(f"Unknown object type {kind!r}: one of {', '.join(OBJECTS)}", field)
        return found

    def pool(self, name: str, field: str) -> dict:
        if name not in self.pools:
            raise self.err(f'pool "{name}" not found in the allocated addresses', field)
        return self.pools[name]

    def nic_mac(self, name: str, field: str) -> str:
        bmh = self.objects["baremetalhost"]
        nics = ((bmh.get("status") or {}).get("hardware") or {}).get("nics")
        if not nics:
            raise self.err(f"NICs list not populated on {meta.ref(bmh)} (status.hardware.nics)", field)
        for nic in nics:
            if nic.get("name") == name:
                return nic.get("mac", "")
        raise self.err(f"NIC name not found {name} on {meta.ref(bmh)}", field)


# -- pools ------------------------------------------------------------------------------


def _annotation_pool(ref: dict, objects: dict | None, where: str, field: str) -> str | None:
    if objects is None:
        return None  # upstream's release path: annotation pools are not resolved there
    obj = objects.get(str(ref.get("object") or "").lower())
    if obj is None:
        raise Invalid(f"Unknown object type {ref.get('object')!r}", obj=where, field=field)
    value = meta.annotations(obj).get(ref.get("annotation") or "")
    if not value:
        raise Invalid(f"annotation {ref.get('annotation')!r} not found on {meta.ref(obj)}", obj=where, field=field)
    return value


def network_pool(net: dict, objects: dict | None, where: str, field: str) -> tuple[str, dict] | None:
    """The pool an ipv4/ipv6 network takes its address from: annotation, then fromPoolRef, then the name."""
    if net.get("fromPoolAnnotation"):
        name = _annotation_pool(net["fromPoolAnnotation"], objects, where, f"{field}.fromPoolAnnotation")
        return (name, {}) if name else None
    ref = net.get("fromPoolRef") or {}
    if ref.get("name"):
        return ref["name"], ref
    if net.get("ipAddressFromIPPool"):
        return net["ipAddressFromIPPool"], {}
    return None


def gateway_pool(gw: dict, objects: dict | None, where: str, field: str) -> tuple[str, dict] | None:
    """A route gateway's pool: a string wins, then fromPoolAnnotation, fromPoolRef, fromIPPool."""
    if gw.get("string"):
        return None
    if gw.get("fromPoolAnnotation"):
        name = _annotation_pool(gw["fromPoolAnnotation"], objects, where, f"{field}.fromPoolAnnotation")
        return (name, {}) if name else None
    if (gw.get("fromPoolRef") or {}).get("name"):
        return gw["fromPoolRef"]["name"], gw["fromPoolRef"]
    if gw.get("fromIPPool"):
        return gw["fromIPPool"], {}
    return None


def referenced_pools(template: dict, objects: dict | None = None) -> dict:
    """{pool name: {"apiGroup", "kind", "field"}} of every pool the template claims (getReferencedPools).

    Upstream's rule, including where it claims more than the renderer reads: an ipv4/ipv6 network or
    route gateway with ``fromPoolAnnotation`` also claims its ``fromPoolRef`` (else its
    ``ipAddressFromIPPool`` / ``fromIPPool``), and a gateway's pool is claimed even when ``string``
    gives the gateway.  One difference, a fix: upstream never claims the ``fromPoolAnnotation`` pool of
    a DHCP/SLAAC route's gateway, so rendering such a route always fails there; it is claimed here.
    ``field`` is where the pool is first named, for messages.
    """
    where = meta.ref(template)
    spec = template.get("spec") or {}
    pools: dict = {}

    def add(name, ref, field):
        # addRef: group and kind default to Metal3's IPPool; one name, one resource type
        group = (ref or {}).get("apiGroup") or M3_POOL_GROUP
        kind = (ref or {}).get("kind") or M3_POOL_KIND
        old = pools.setdefault(name, {"apiGroup": group, "kind": kind, "field": field})
        if (old["apiGroup"], old["kind"]) != (group, kind):
            raise Invalid("multiple references with the same name but different resource types", obj=where, field=field)

    def add_name(name, field):
        if name:
            add(name, None, field)

    def add_annotation(ref, field):
        name = _annotation_pool(ref, objects, where, f"{field}.fromPoolAnnotation") if ref else None
        if name:
            add(name, None, field)

    def add_source(holder, ref_key, name_key, field, annotation=True):
        if annotation:
            add_annotation(holder.get("fromPoolAnnotation"), field)
        ref = holder.get(ref_key) or {}
        if ref.get("name"):
            add(ref["name"], ref, field)
        else:
            add_name(holder.get(name_key), field)

    md = spec.get("metaData") or {}
    for key in ("ipAddressesFromPool", "prefixesFromPool", "gatewaysFromPool", "dnsServersFromPool"):
        for i, item in enumerate(md.get(key) or []):
            add(item.get("name") or "", item, f"spec.metaData.{key}[{i}]")
    nd = spec.get("networkData") or {}
    networks = nd.get("networks") or {}
    for family in ("ipv4", "ipv6", "ipv4DHCP", "ipv6DHCP", "ipv6SLAAC"):
        for i, net in enumerate(networks.get(family) or []):
            field = f"spec.networkData.networks.{family}[{i}]"
            if family in ("ipv4", "ipv6"):
                add_source(net, "fromPoolRef", "ipAddressFromIPPool", field)
            for j, route in enumerate(net.get("routes") or []):
                rfield = f"{field}.routes[{j}]"
                add_source(route.get("gateway") or {}, "fromPoolRef", "fromIPPool", f"{rfield}.gateway")
                add_name((route.get("services") or {}).get("dnsFromIPPool"), f"{rfield}.services.dnsFromIPPool")
    add_name((nd.get("services") or {}).get("dnsFromIPPool"), "spec.networkData.services.dnsFromIPPool")
    return pools


def is_metal3_pool(ref: dict) -> bool:
    return (ref.get("apiGroup") or M3_POOL_GROUP) == M3_POOL_GROUP and (ref.get("kind") or M3_POOL_KIND) == M3_POOL_KIND


# -- meta data ----------------------------------------------------------------------------


def render_meta_data(ctx: RenderContext) -> dict | None:
    """The flat string map, written in upstream's order (later writers win; providerid last)."""
    md = (ctx.template.get("spec") or {}).get("metaData")
    if md is None:
        return None
    out: dict = {}
    base = "spec.metaData"
    bmh = ctx.objects["baremetalhost"]
    for i, e in enumerate(md.get("fromHostInterfaces") or []):
        field = f"{base}.fromHostInterfaces[{i}]"
        if e.get("fromBootMAC"):
            mac = (bmh.get("spec") or {}).get("bootMACAddress") or ""
            if not mac:
                raise ctx.err(f"bootMACAddress is empty on {meta.ref(bmh)}", f"{field}.fromBootMAC")
            out[e["key"]] = mac
        else:
            out[e["key"]] = ctx.nic_mac(e.get("interface", ""), f"{field}.interface")
    for key, attr in (
        ("ipAddressesFromPool", "address"),
        ("prefixesFromPool", "prefix"),
        ("gatewaysFromPool", "gateway"),
    ):
        for i, e in enumerate(md.get(key) or []):
            value = ctx.pool(e.get("name"), f"{base}.{key}[{i}].name").get(attr)
            out[e["key"]] = str(value if value is not None else "")
    index = (ctx.data.get("spec") or {}).get("index", 0)
    for i, e in enumerate(md.get("indexes") or []):
        step = e.get("step") or 1
        value = e.get("offset", 0) + index * step
        if not GO_INT_MIN <= value <= GO_INT_MAX:
            # upstream computes offset + index * step in Go's int and would wrap around silently
            raise ctx.err(
                f"offset + index * step = {e.get('offset', 0)} + {index} * {step} overflows a 64-bit integer",
                f"{base}.indexes[{i}]",
            )
        out[e["key"]] = f"{e.get('prefix', '')}{value}{e.get('suffix', '')}"
    for e in md.get("namespaces") or []:
        out[e["key"]] = meta.namespace(ctx.data)
    for i, e in enumerate(md.get("objectNames") or []):
        out[e["key"]] = meta.name(ctx.obj(e.get("object"), f"{base}.objectNames[{i}].object"))
    for i, e in enumerate(md.get("fromLabels") or []):
        obj = ctx.obj(e.get("object"), f"{base}.fromLabels[{i}].object")
        out[e["key"]] = meta.labels(obj).get(e.get("label", ""), "")
    for i, e in enumerate(md.get("fromAnnotations") or []):
        obj = ctx.obj(e.get("object"), f"{base}.fromAnnotations[{i}].object")
        out[e["key"]] = meta.annotations(obj).get(e.get("annotation", ""), "")
    for e in md.get("strings") or []:
        out[e["key"]] = e.get("value", "")
    # dnsServersFromPool: claimed above (referenced_pools) but, as upstream, no key is rendered.
    m3m = ctx.objects["metal3machine"]
    out["providerid"] = f"{meta.namespace(m3m)}/{meta.name(bmh)}/{meta.name(m3m)}"
    check_serialisable(ctx, out, base)
    return out


# -- network data ---------------------------------------------------------------------------


def translate_mask(prefix: int, ipv4: bool, where: str = "", field: str = "") -> str:
    """A prefix length as a netmask: dotted for IPv4, IPv6 text for IPv6 (translateMask)."""
    bits = 32 if ipv4 else 128
    if not isinstance(prefix, int) or not 0 <= prefix <= bits:
        raise Invalid(f"prefix {prefix!r} is not 0..{bits}", obj=where or None, field=field or None)
    value = ((1 << bits) - 1) ^ ((1 << (bits - prefix)) - 1)
    return str(ipaddress.IPv4Address(value) if ipv4 else ipaddress.IPv6Address(value))


def link_mac(ctx: RenderContext, mac: dict | None, field: str) -> str | None:
    if mac is None:
        return None  # no macAddress: the key is left out (upstream's CRD requires one)
    if mac.get("string") is not None:
        value = mac["string"]
    elif mac.get("fromHostInterface") is not None:
        value = ctx.nic_mac(mac["fromHostInterface"], f"{field}.fromHostInterface")
    elif mac.get("fromAnnotation") is not None:
        ref = mac["fromAnnotation"]
        obj = ctx.obj(ref.get("object"), f"{field}.fromAnnotation.object")
        value = meta.annotations(obj).get(ref.get("annotation", ""), "")
    else:
        raise ctx.err("no MAC address given", field)  # getLinkMacAddress: macAddress: {}
    if not isinstance(value, str) or not MAC_RE.match(value):
        raise ctx.err(f"bad MAC address: {value}", field)
    return value


def _name_and_mac(ctx: RenderContext, link: dict, entry: dict, field: str, mac_key: str) -> dict:
    """What every kind of link adds after its own keys: its name when set, its MAC (as ``mac_key``) when given."""
    if link.get("name"):
        entry["name"] = link["name"]
    mac = link_mac(ctx, link.get("macAddress"), f"{field}.macAddress")
    if mac is not None:
        entry[mac_key] = mac
    return entry


def render_links(ctx: RenderContext, links: dict) -> list:
    data = []
    base = "spec.networkData.links"
    for i, link in enumerate(links.get("bonds") or []):
        field = f"{base}.bonds[{i}]"
        entry = {
            "type": "bond",
            "id": link.get("id"),
            "mtu": link.get("mtu") or DEFAULT_MTU,
            "bond_mode": link.get("bondMode"),
            "bond_xmit_hash_policy": link.get("bondXmitHashPolicy") or "",
            "bond_links": link.get("bondLinks"),
        }
        _name_and_mac(ctx, link, entry, field, "ethernet_mac_address")
        illegal = []
        for param in link.get("parameters") or []:
            target = "bond_" + str(param.get("name"))
            if target in entry:
                illegal.append(str(param.get("name")))
                continue  # never overwrite a structured field
            entry[target] = param.get("value")
        if illegal:
            raise ctx.err(
                'illegal params "{}" into bond params blob into link id={}'.format(
                    '", "'.join(illegal), link.get("id")
                ),
                f"{field}.parameters",
            )
        data.append(entry)
    for i, link in enumerate(links.get("ethernets") or []):
        entry = {"type": link.get("type"), "id": link.get("id"), "mtu": link.get("mtu") or DEFAULT_MTU}
        data.append(_name_and_mac(ctx, link, entry, f"{base}.ethernets[{i}]", "ethernet_mac_address"))
    for i, link in enumerate(links.get("vlans") or []):
        entry = {
            "type": "vlan",
            "id": link.get("id"),
            "mtu": link.get("mtu") or DEFAULT_MTU,
            "vlan_link": link.get("vlanLink"),
            "vlan_id": link.get("vlanID", 0),
        }
        data.append(_name_and_mac(ctx, link, entry, f"{base}.vlans[{i}]", "vlan_mac_address"))
    return data


def _dns(addresses) -> list:
    return [{"type": "dns", "address": a} for a in addresses or []]


def render_routes(ctx: RenderContext, routes, ipv4: bool, field: str) -> list:
    out = []
    for j, route in enumerate(routes or []):
        rfield = f"{field}.routes[{j}]"
        gw = route.get("gateway") or {}
        gateway = ""
        if gw.get("string"):
            gateway = gw["string"]
        else:
            found = gateway_pool(gw, ctx.objects, ctx.where, f"{rfield}.gateway")
            if found:
                gateway = ctx.pool(found[0], f"{rfield}.gateway").get("gateway") or ""
        services = _dns((route.get("services") or {}).get("dns"))
        pool = (route.get("services") or {}).get("dnsFromIPPool")
        if pool:
            services += _dns(ctx.pool(pool, f"{rfield}.services.dnsFromIPPool").get("dnsServers"))
        out.append(
            {
                "network": route.get("network"),
                "netmask": translate_mask(route.get("prefix", 0), ipv4, ctx.where, f"{rfield}.prefix"),
                "gateway": gateway,
                "services": services,
            }
        )
    return out


def render_networks(ctx: RenderContext, networks: dict) -> list:
    data = []
    base = "spec.networkData.networks"
    for family, ipv4 in (("ipv4", True), ("ipv6", False)):
        for i, net in enumerate(networks.get(family) or []):
            field = f"{base}.{family}[{i}]"
            found = network_pool(net, ctx.objects, ctx.where, field)
            if not found:
                raise ctx.err("fromPoolRef.name, ipAddressFromIPPool or fromPoolAnnotation is required", field)
            pool = ctx.pool(found[0], field)
            data.append(
                {
                    "type": family,
                    "id": net.get("id"),
                    "link": net.get("link"),
                    "ip_address": pool.get("address"),
                    "netmask": translate_mask(pool.get("prefix") or 0, ipv4, ctx.where, field),
                    "routes": render_routes(ctx, net.get("routes"), ipv4, field),
                }
            )
    for family, kind, ipv4 in (
        ("ipv4DHCP", "ipv4_dhcp", True),
        ("ipv6DHCP", "ipv6_dhcp", False),
        ("ipv6SLAAC", "ipv6_slaac", False),
    ):
        for i, net in enumerate(networks.get(family) or []):
            data.append(
                {
                    "type": kind,
                    "id": net.get("id"),
                    "link": net.get("link"),
                    "routes": render_routes(ctx, net.get("routes"), ipv4, f"{base}.{family}[{i}]"),
                }
            )
    return data


def render_network_data(ctx: RenderContext) -> dict | None:
    nd = (ctx.template.get("spec") or {}).get("networkData")
    if nd is None:
        return None
    services = _dns((nd.get("services") or {}).get("dns"))
    pool = (nd.get("services") or {}).get("dnsFromIPPool")
    if pool:
        services += _dns(ctx.pool(pool, "spec.networkData.services.dnsFromIPPool").get("dnsServers"))
    out = {
        "links": render_links(ctx, nd.get("links") or {}),
        "networks": render_networks(ctx, nd.get("networks") or {}),
        "services": services,
    }
    check_serialisable(ctx, out, "spec.networkData")
    return out


def check_serialisable(ctx: RenderContext, value, field: str) -> None:
    """Refuse what upstream's yaml.Marshal refuses: a key or string holding a character go-yaml rejects."""
    if isinstance(value, dict):
        for k, v in value.items():
            check_serialisable(ctx, k, f"{field}[{k!r}]")
            check_serialisable(ctx, v, f"{field}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            check_serialisable(ctx, v, f"{field}[{i}]")
    elif isinstance(value, str):
        bad = YAML_REFUSED.search(value)
        if bad:
            raise ctx.err(
                f"yaml: control characters are not allowed (U+{ord(bad.group()):04X} in {value[:40]!r})", field
            )


# -- serialisation ----------------------------------------------------------------------------


def _go_yaml_less(a: str, b: str) -> bool:
    """go-yaml v2's keyList.Less for two string keys (letters after other runes, digit runs numerically)."""
    for i in range(min(len(a), len(b))):
        if a[i] == b[i]:
            continue
        al, bl = a[i].isalpha(), b[i].isalpha()
        if al and bl:
            return a[i] < b[i]
        if al or bl:
            return bl
        an = bn = 0
        if a[i] == "0" or b[i] == "0":
            j = i - 1
            while j >= 0 and a[j].isdigit():
                if a[j] != "0":
                    an = bn = 1
                    break
                j -= 1
        ai = i
        while ai < len(a) and a[ai].isdigit():
            an, ai = an * 10 + int(a[ai]), ai + 1
        bi = i
        while bi < len(b) and b[bi].isdigit():
            bn, bi = bn * 10 + int(b[bi]), bi + 1
        if an != bn:
            return an < bn
        if ai != bi:
            return ai < bi
        return a[i] < b[i]
    return len(a) < len(b)


class _GoKey(str):
    def __lt__(self, other):
        return _go_yaml_less(str(self), str(other))


# Most maps of one payload share their key sets (every route, every link of a kind): sort each set once.
_ORDER_CACHE: dict = {}


def _go_sorted(keys) -> list:
    probe = tuple(keys)
    order = _ORDER_CACHE.get(probe)
    if order is None:
        order = sorted(probe, key=lambda k: _GoKey(str(k)))
        if len(_ORDER_CACHE) < 4096:
            _ORDER_CACHE[probe] = order
    return order


def _go_order(value):
    if isinstance(value, dict):
        return {k: _go_order(value[k]) for k in _go_sorted(value)}
    if isinstance(value, list):
        return [_go_order(v) for v in value]
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        # sigs.k8s.io/yaml goes through JSON, where an integral number has no fraction: 12, not 12.0
        return int(value)
    return value


def to_yaml(data) -> str:
    """YAML as sigs.k8s.io/yaml.Marshal writes it (block style, keys in go-yaml order)."""
    # Strings any YAML 1.1 or 1.2 reader (cloud-init, sigs.k8s.io/yaml) would read as something else are
    # quoted; libyaml's emitter writes the same text as PyYAML's, seven times faster.
    return yamltext.dump(_go_order(data), fast=True)
