"""DomainsHandler, DomainHandler, DNSResourcesHandler, DNSResourceHandler
(src/maasserver/api/domains.py, dnsresources.py, forms/dnsresource.py)."""

from __future__ import annotations

import ipaddress

from lab.maas_sim import names, render
from lab.maas_sim.api import Ctx, handler
from lab.maas_sim.api_machines import _check_admin
from lab.maas_sim.forms import BadRequest, NotFound, ValidationError, string_bool

domains = handler("DomainsHandler", "domains/", "Manage domains.")
domain_h = handler("DomainHandler", "domains/{id}/", "Manage domain.")
dnsresources = handler("DNSResourcesHandler", "dnsresources/", "Manage dnsresources.")
dnsresource_h = handler("DNSResourceHandler", "dnsresources/{id}/", "Manage dnsresource.")


# -- domains ---------------------------------------------------------------------


@domains.action("GET")
def list_domains(ctx: Ctx):
    """List domains."""
    return [render.domain(ctx.store, d) for d in sorted(ctx.store.domains.values(), key=lambda d: d["id"])]


@domains.action("POST")
def create_domain(ctx: Ctx):
    """Create a domain (name, authoritative, ttl)."""
    _check_admin(ctx)
    name = ctx.data.get("name", "")
    names.domain_name(name)
    if ctx.store.domain_by_name(name):
        raise ValidationError({"name": ["Domain with this Name already exists."]})
    d = {"id": ctx.store.next_id("domain"), "name": name, "ttl": names.ttl(ctx.data, "ttl"),
         "authoritative": string_bool(ctx.data, "authoritative", True)}  # fmt: skip
    ctx.store.domains[d["id"]] = d
    return render.domain(ctx.store, d)


def _domain(ctx: Ctx, id: str) -> dict:
    d = ctx.store.domains.get(int(id)) if id.lstrip("-").isdigit() else None
    if d is None:
        raise NotFound("No Domain matches the given query.")
    return d


@domain_h.action("GET")
def read_domain(ctx: Ctx, id: str):
    """A domain."""
    return render.domain(ctx.store, _domain(ctx, id))


@domain_h.action("PUT")
def update_domain(ctx: Ctx, id: str):
    """Update a domain (name, authoritative, ttl)."""
    _check_admin(ctx)
    d = _domain(ctx, id)
    if "name" in ctx.data:
        names.domain_name(ctx.data.get("name"))
        other = ctx.store.domain_by_name(ctx.data.get("name"))
        if other is not None and other is not d:
            raise ValidationError({"name": ["Domain with this Name already exists."]})
    ttl = names.ttl(ctx.data, "ttl") if "ttl" in ctx.data else d["ttl"]
    if "name" in ctx.data:
        d["name"] = ctx.data.get("name")
    if "ttl" in ctx.data:
        d["ttl"] = ttl
    if "authoritative" in ctx.data:
        d["authoritative"] = string_bool(ctx.data, "authoritative")
    return render.domain(ctx.store, d)


@domain_h.action("POST", "set_default")
def set_default_domain(ctx: Ctx, id: str):
    """Make this the default domain."""
    _check_admin(ctx)
    ctx.store.default_domain = _domain(ctx, id)["id"]
    return render.domain(ctx.store, ctx.store.domains[ctx.store.default_domain])


@domain_h.action("DELETE")
def delete_domain(ctx: Ctx, id: str):
    """Delete a domain."""
    _check_admin(ctx)
    d = _domain(ctx, id)
    if d["id"] == ctx.store.default_domain:
        raise BadRequest("This domain is the default domain, it cannot be deleted.")
    if any(m.domain == d["id"] for m in ctx.store.machines.values()) or any(
        r["domain"] == d["id"] for r in ctx.store.dnsresources.values()
    ):
        raise BadRequest("This domain is in use and cannot be deleted.")
    del ctx.store.domains[d["id"]]
    return None


# -- DNS resources ---------------------------------------------------------------


def _split_fqdn(ctx: Ctx, fqdn: str) -> tuple[str, dict]:
    """separate_fqdn + get_domain_or_404: the first label is the name, the rest the domain."""
    name, _, domainname = fqdn.partition(".")
    if not domainname:
        return name, None
    d = ctx.store.domain_by_name(domainname)
    if d is None:
        raise NotFound("No Domain matches the given query.")
    return name, d


def _ip_list(value: str) -> list[str]:
    ips = value.replace(",", " ").split()
    bad = [ip for ip in ips if not _is_ip(ip)]
    if bad:
        raise ValidationError({"ip_addresses": [f"'{bad[0]}' is not a valid IP address."]})
    return ips


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
        return True
    except ValueError:
        return False


def _apply_dns_fields(ctx: Ctx, r: dict, creating: bool) -> None:
    data = ctx.data
    fqdn, name, domainname = data.get("fqdn"), data.get("name"), data.get("domain")
    if name is None and domainname is None and fqdn:
        r["name"], d = _split_fqdn(ctx, fqdn)
        r["domain"] = d["id"] if d else None
    else:
        if domainname is not None:
            d = _domain(ctx, domainname) if domainname.isdigit() else ctx.store.domain_by_name(domainname)
            if d is None:
                raise NotFound("No Domain matches the given query.")
            r["domain"] = d["id"]
        if name is not None:
            r["name"] = name
    errors = {}
    if creating and not r.get("name"):
        errors["name"] = ["This field is required."]
    if r["domain"] is None:
        # DNSResourceForm: domain is a required ModelChoiceField (name without a domain, or an fqdn of one label)
        errors["domain"] = ["This field is required."]
    if errors:
        raise ValidationError(errors)
    names.dnsresource_name(r["name"])
    if "address_ttl" in data:
        r["address_ttl"] = names.ttl(data, "address_ttl")
    if "ip_addresses" in data:
        r["ip_addresses"] = [[ctx.store.next_id("ip"), ip] for ip in _ip_list(data.get("ip_addresses"))]
    clash = [o for o in ctx.store.dnsresources.values()
             if o["id"] != r["id"] and o["name"] == r["name"] and o["domain"] == r["domain"]]  # fmt: skip
    if clash:
        raise ValidationError({"__all__": ["Labels must be unique within their zone."]})


@dnsresources.action("GET")
def list_dnsresources(ctx: Ctx):
    """List DNS resources (filters: fqdn, name, domain, rrtype, all)."""
    q, store = ctx.query, ctx.store
    name, domainname = q.get("name"), q.get("domain")
    if q.get("fqdn") and name is None and domainname is None:
        name, _, domainname = q.get("fqdn").partition(".")
    if domainname:
        # get_domain_or_404: a filter on a domain MAAS does not have is a 404, not an empty list
        if ctx.store.domain_by_name(domainname) is None and not (
            domainname.isdigit() and int(domainname) in store.domains
        ):
            raise NotFound("No Domain matches the given query.")
        if domainname.isdigit() and int(domainname) in store.domains:
            domainname = store.domains[int(domainname)]["name"]
    rrtype = q.get("rrtype").upper() if q.get("rrtype") else None
    everything = string_bool(q, "all", False)
    out, seen = [], []
    # get_dnsresource_queryset: ordered by domain, then name
    for r in sorted(store.dnsresources.values(), key=lambda r: (r["domain"], r["name"])):
        if name is not None and r["name"] != name:
            continue
        if domainname is not None and store.domains[r["domain"]]["name"] != domainname:
            continue
        # filter(dnsdata__rrtype=...): a resource with records of that type (addresses count as A/AAAA here)
        if rrtype and rrtype not in ("A", "AAAA") and rrtype not in {x["rrtype"] for x in r.get("dnsdata", [])}:
            continue
        if everything and r["domain"] not in seen:
            # DNSResourcesQuerySet.__iter__: a domain's implicit records come before its first resource
            seen.append(r["domain"])
            out += _implicit(store, r["domain"], name, rrtype)
        out.append(render.dnsresource(store, r))
    if everything:
        for did in sorted(store.domains):
            if did not in seen and (domainname is None or store.domains[did]["name"] == domainname):
                out += _implicit(store, did, name, rrtype)
    return out


def _implicit(store, did: int, name: str | None, rrtype: str | None) -> list[dict]:
    """DNSResourcesQuerySet._generate_synthetic_rrdata: Domain.render_json_for_related_rrdata(include_dnsdata=
    False) as resources of id -1, one per label, the address records in ``resource_records``. The address
    mapping (get_hostname_ip_mapping) holds the DNS resources' addresses and the machines' (a machine's boot
    interface addresses under its hostname, or its others' when the boot interface has none)."""
    d = store.domains[did]
    labels: dict[str, dict] = {}
    for r in sorted(store.dnsresources.values(), key=lambda r: r["name"]):
        if r["domain"] == did and r["ip_addresses"]:
            ttl = r["address_ttl"] if r["address_ttl"] is not None else d["ttl"]
            labels[r["name"]] = {"system_id": None, "node_type": None, "user_id": None, "dnsresource_id": r["id"],
                                 "rrset": [(ttl, ip) for _, ip in r["ip_addresses"]]}  # fmt: skip
    users = list(store.users)
    for m in sorted(store.machines.values(), key=lambda m: m.hostname):
        ips = render.addresses(m)
        if m.domain != did or not ips:
            continue
        boot = [ips[0]] if ips[0] == m.ip else ips
        entry = labels.setdefault(m.hostname, {"dnsresource_id": None, "rrset": []})
        entry.update(system_id=m.system_id, node_type=0, user_id=users.index(m.owner) + 1 if m.owner in users else None)
        entry["rrset"] += [(d["ttl"], ip) for ip in boot]
    out = []
    for label, e in labels.items():
        if name is not None and label != name:
            continue
        rrs = []
        for ttl, ip in e["rrset"]:
            kind = "AAAA" if ipaddress.ip_address(ip).version == 6 else "A"
            if rrtype in (None, kind):
                rrs.append({"system_id": e["system_id"], "node_type": e["node_type"], "user_id": e["user_id"],
                            "dnsresource_id": e["dnsresource_id"], "ttl": ttl, "rrtype": kind, "rrdata": ip,
                            "dnsdata_id": None})  # fmt: skip
        if rrs:
            fqdn = d["name"] if label == "@" else f"{label}.{d['name']}"
            out.append({"id": -1, "fqdn": fqdn, "address_ttl": None, "ip_addresses": None, "resource_records": rrs,
                        "resource_uri": f"{render.API}/dnsresources/-1/"})  # fmt: skip
    return out


@dnsresources.action("POST")
def create_dnsresource(ctx: Ctx):
    """Create a DNS resource (fqdn or name+domain, address_ttl, ip_addresses space-separated)."""
    _check_admin(ctx)
    r = {"id": None, "name": None, "domain": None, "address_ttl": None, "ip_addresses": []}
    _apply_dns_fields(ctx, r, creating=True)
    r["id"] = ctx.store.next_id("dnsresource")
    ctx.store.dnsresources[r["id"]] = r
    return render.dnsresource(ctx.store, r)


def _dnsresource(ctx: Ctx, id: str) -> dict:
    r = ctx.store.dnsresources.get(int(id)) if id.isdigit() else None
    if r is None:
        raise NotFound("No DNSResource matches the given query.")
    return r


@dnsresource_h.action("GET")
def read_dnsresource(ctx: Ctx, id: str):
    """A DNS resource."""
    return render.dnsresource(ctx.store, _dnsresource(ctx, id))


@dnsresource_h.action("PUT")
def update_dnsresource(ctx: Ctx, id: str):
    """Update a DNS resource (fqdn, name, domain, address_ttl, ip_addresses)."""
    _check_admin(ctx)
    r = _dnsresource(ctx, id)
    updated = dict(r)
    _apply_dns_fields(ctx, updated, creating=False)
    r.update(updated)
    return render.dnsresource(ctx.store, r)


@dnsresource_h.action("DELETE")
def delete_dnsresource(ctx: Ctx, id: str):
    """Delete a DNS resource."""
    _check_admin(ctx)
    del ctx.store.dnsresources[_dnsresource(ctx, id)["id"]]
    return None
