"""IP ranges (src/maasserver/api/ipranges.py, forms/iprange.py, models/iprange.py of MAAS 3.5).

A range is ``dynamic`` (DHCP hands its addresses out) or ``reserved`` (MAAS hands none of them out). What the
maas.maas collection's ``subnet_ip_range(_info)`` and python-libmaas's ``IPRanges`` read and write. Validation
is IPRangeForm's (field errors) followed by ``IPRange.clean`` (the model's checks, which run even when a field
failed, as Django's ModelForm runs ``full_clean``): the rules and the texts are MAAS's.
"""

from __future__ import annotations

import ipaddress as ipa

from lab.maas_sim import render
from lab.maas_sim.api import Ctx, handler
from lab.maas_sim.forms import Forbidden, NotFound, ValidationError

ipranges = handler("IPRangesHandler", "ipranges/", "Manage IP ranges.")
iprange_h = handler("IPRangeHandler", "ipranges/{id}/", "Manage IP range.")

TYPES = ("dynamic", "reserved")  # IPRANGE_TYPE_CHOICES


def _subnets(store) -> list[dict]:
    """Every subnet as the API renders it: the lab's (id 1) and those made for machines' other NICs."""
    return [render.subnet({"id": 1})] + [render.subnet(s) for _, s in sorted(store.subnets.items())]


def _subnet(store, sid) -> dict | None:
    return next((s for s in _subnets(store) if str(s["id"]) == str(sid)), None)


def subnet_by_spec(store, spec) -> dict | None:
    """SpecifierOrModelChoiceField over subnets: an id, or a ``cidr:`` / ``name:`` specifier (a bare CIDR too)."""
    text = str(spec or "")
    for s in _subnets(store):
        if text in (str(s["id"]), f"id:{s['id']}", f"cidr:{s['cidr']}", f"name:{s['name']}", s["cidr"]):
            return s
    return None


def _best_subnet(store, ip: str) -> dict | None:
    """Subnet.objects.get_best_subnet_for_ip: the longest prefix holding the address."""
    try:
        addr = ipa.ip_address(ip)
    except ValueError:
        return None
    holding = [s for s in _subnets(store) if addr in ipa.ip_network(s["cidr"])]
    return max(holding, key=lambda s: ipa.ip_network(s["cidr"]).prefixlen, default=None)


def render_range(store, r: dict) -> dict:
    user = store.users.get(r["user"]) if r["user"] else None
    return {"id": r["id"], "type": r["type"], "start_ip": r["start_ip"], "end_ip": r["end_ip"],
            "comment": r["comment"], "user": render.user(user) if user else None,
            "subnet": {**_subnet(store, r["subnet"]), "description": "", "disabled_boot_architectures": []},
            "resource_uri": f"{render.API}/ipranges/{r['id']}/"}  # fmt: skip


def _get(ctx: Ctx, id: str) -> dict:
    r = ctx.store.ipranges.get(int(id)) if id.isdigit() else None
    if r is None:
        raise NotFound("No IPRange matches the given query.")
    return r


def _owner_only(ctx: Ctx, r: dict) -> None:
    if not ctx.user["is_superuser"] and r["user"] != ctx.user["username"]:
        raise Forbidden("Unable to modify IP range. You don't own the IP range.")


def _blocks(net, used: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """MAASIPSet.get_unused_ranges: the subnet's addresses (not its network or IPv4 broadcast address)
    less the ``used`` ones, as inclusive (first, last) pairs."""
    first = int(net.network_address) + 1
    last = int(net.broadcast_address) - (1 if net.version == 4 else 0)
    free, at = [], first
    for lo, hi in sorted(used):
        if lo > at:
            free.append((at, min(lo - 1, last)))
        at = max(at, hi + 1)
    if at <= last:
        free.append((at, last))
    return [(lo, hi) for lo, hi in free if lo <= hi]


def _in_use(ctx: Ctx, sub: dict, kind: str, but: int | None) -> list[tuple[int, int]]:
    """What a new range of ``kind`` may not cover (Subnet.get_ipranges_available_for_<kind>_range): the other
    ranges; for a dynamic range also the gateway, the DNS servers and every allocated address."""
    net = ipa.ip_network(sub["cidr"])
    used = [(int(ipa.ip_address(r["start_ip"])), int(ipa.ip_address(r["end_ip"])))
            for r in ctx.store.ipranges.values() if r["subnet"] == sub["id"] and r["id"] != but]  # fmt: skip
    if kind == "dynamic":
        ips = {sub.get("gateway_ip"), *sub.get("dns_servers", [])} | set(ctx.store.reserved_ips)
        # the gateways of static routes leaving this subnet are in use too
        ips |= {r["gateway_ip"] for r in ctx.store.static_routes.values() if r["source"] == sub["id"]}
        ips |= {ip for m in ctx.store.machines.values() for ip in render.addresses(m)}
        used += [(int(a), int(a)) for a in (ipa.ip_address(i) for i in ips if i) if a in net]
    return used


def _model_clean(ctx: Ctx, r: dict, errors: dict) -> None:
    """IPRange.clean: raises at the first broken rule, on start_ip and end_ip unless it names one."""

    def fail(message: str, fields=("start_ip", "end_ip")):
        for f in fields:
            errors.setdefault(f, []).append(message)

    try:
        start, end = ipa.ip_address(r["start_ip"] or ""), ipa.ip_address(r["end_ip"] or "")
    except ValueError:
        return fail("Start IP address and end IP address are both required.")
    if start.version != end.version:
        return fail("Start IP address and end IP address must be in the same address family.")
    if end < start:
        return fail("End IP address must not be less than Start IP address.", ("end_ip",))
    sub = _subnet(ctx.store, r["subnet"]) if r["subnet"] is not None else None
    if sub is not None:
        net = ipa.ip_network(sub["cidr"])
        if start not in net and end not in net:
            return fail(f"IP addresses must be within subnet: {net}.")
        if start not in net:
            return fail(f"Start IP address must be within subnet: {net}.", ("start_ip",))
        if end not in net:
            return fail(f"End IP address must be within subnet: {net}.", ("end_ip",))
        if start == net.network_address:
            return fail("Reserved network address cannot be included in IP range.", ("start_ip",))
        if net.version == 4 and end == net.broadcast_address:
            return fail("Broadcast address cannot be included in IP range.", ("end_ip",))
    if start.version == 6 and r["type"] == "dynamic" and int(end) - int(start) + 1 < 256:
        return fail("IPv6 dynamic range must be at least 256 addresses in size.")
    if sub is None or r["type"] not in TYPES or errors:
        return None  # _validate_duplicates_and_overlaps: an incomplete model is not checked
    free = _blocks(net, _in_use(ctx, sub, r["type"], r.get("id")))
    if not free:
        return fail(f"There is no room for any {r['type']} ranges on this subnet.")
    if not any(lo <= int(start) and int(end) <= hi for lo, hi in free):
        what = "range." if r["type"] == "reserved" else "IP address or range."
        return fail(f"Requested {r['type']} range conflicts with an existing {what}")
    return None


def _form(ctx: Ctx, r: dict) -> dict:
    """IPRangeForm on ``r`` (a new range's defaults or the one updated): fields given replace r's."""
    d, errors, out = ctx.data, {}, dict(r)
    if "type" in d or "id" not in r:
        t = d.get("type")
        if not t:
            errors["type"] = ["This field is required."]
        elif t not in TYPES:
            errors["type"] = [f"Select a valid choice. {t} is not one of the available choices."]
        out["type"] = t if t in TYPES else None
    for f in ("start_ip", "end_ip"):
        if f in d or "id" not in r:
            value = (d.get(f) or "").strip()
            out[f] = None
            if not value:
                errors[f] = ["This field is required."]
            else:
                try:
                    out[f] = str(ipa.ip_address(value))
                except ValueError:
                    errors[f] = ["Enter a valid IPv4 or IPv6 address."]
    if "subnet" in d:
        sub = _subnet(ctx.store, d.get("subnet"))
        out["subnet"] = sub["id"] if sub else None
        if sub is None:
            errors["subnet"] = ["Select a valid choice. That choice is not one of the available choices."]
    elif "id" not in r:  # a new range on the subnet of its start address, when one holds it
        sub = _best_subnet(ctx.store, d.get("start_ip") or "")
        out["subnet"] = sub["id"] if sub else None
        if sub is None:
            errors["subnet"] = ["This field is required."]
    if "comment" in d:
        out["comment"] = d.get("comment") or ""
    _model_clean(ctx, out, errors)
    if errors:
        raise ValidationError(errors)
    return out


@ipranges.action("GET")
def list_ranges(ctx: Ctx):
    """List all IP ranges."""
    return [render_range(ctx.store, r) for _, r in sorted(ctx.store.ipranges.items())]


@ipranges.action("POST")
def create_range(ctx: Ctx):
    """Create an IP range: type (dynamic or reserved), start_ip, end_ip, subnet (else the start address's),
    comment."""
    if ctx.data.get("type") == "dynamic" and not ctx.user["is_superuser"]:
        raise Forbidden("Unable to create dynamic IP range. You don't have sufficient privileges.")
    r = _form(ctx, {"type": None, "start_ip": None, "end_ip": None, "subnet": None, "comment": "",
                    "user": ctx.user["username"]})  # fmt: skip
    r["id"] = ctx.store.next_id("iprange")
    ctx.store.ipranges[r["id"]] = r
    return render_range(ctx.store, r)


@iprange_h.action("GET")
def read_range(ctx: Ctx, id: str):
    """Read an IP range."""
    return render_range(ctx.store, _get(ctx, id))


@iprange_h.action("PUT")
def update_range(ctx: Ctx, id: str):
    """Update an IP range: start_ip, end_ip, comment (and type, subnet)."""
    r = _get(ctx, id)
    _owner_only(ctx, r)
    ctx.store.ipranges[r["id"]] = r = _form(ctx, r)
    return render_range(ctx.store, r)


@iprange_h.action("DELETE")
def delete_range(ctx: Ctx, id: str):
    """Delete an IP range."""
    r = _get(ctx, id)
    _owner_only(ctx, r)
    del ctx.store.ipranges[r["id"]]
    return None


def in_ranges(store, ip: str) -> bool:
    """An address inside a dynamic or reserved range: MAAS allocates none of those itself
    (Subnet.get_next_ip_for_allocation leaves every range out)."""
    addr = ipa.ip_address(ip)
    return any(ipa.ip_address(r["start_ip"]) <= addr <= ipa.ip_address(r["end_ip"]) for r in store.ipranges.values())
