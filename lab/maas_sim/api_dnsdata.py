"""DNS resource records: the non-address data of a DNS resource (src/maasserver/api/dnsresourcerecords.py,
forms/dnsdata.py, models/dnsdata.py; ``separate_fqdn`` and ``validate_dnsresource_name`` of
models/dnsresource.py).

A record is ``{id, ttl, rrtype, rrdata}`` kept on its DNS resource (``dnsdata``), so it goes with the resource
in a transaction, a snapshot and a delete; the DNS resource shows them as ``resource_records``. Creating one for
a name that has no DNS resource makes the resource first, as MAAS's handler does. The maas.maas collection's
``dns_record`` module writes CNAME / TXT / MX / NS / SRV / SSHFP records here.
"""

from __future__ import annotations

import re

from lab.maas_sim import render
from lab.maas_sim.api import Ctx, handler
from lab.maas_sim.api_machines import _check_admin
from lab.maas_sim.forms import BadRequest, NotFound, ValidationError
from lab.maas_sim.names import LABEL, ttl

records = handler("DNSResourceRecordsHandler", "dnsresourcerecords/", "Manage dnsresourcerecords.")
record_h = handler("DNSResourceRecordHandler", "dnsresourcerecords/{id}/", "Manage dnsresourcerecord.")

SUPPORTED_RRTYPES = ("CNAME", "MX", "NS", "SRV", "SSHFP", "TXT")
SRV_LABEL = r"_[a-zA-Z0-9]([-a-zA-Z0-9]{0,62}[a-zA-Z0-9]){0,1}"
SRV_LHS = rf"{SRV_LABEL}\.{SRV_LABEL}(\.{LABEL})?"
CNAME_LABEL = r"[_a-zA-Z0-9]([-_a-zA-Z0-9]{0,62}[_a-zA-Z0-9]){0,1}"
CNAME_SPEC = re.compile(rf"^({CNAME_LABEL}\.)*{CNAME_LABEL}\.?$")
INVALID_CNAME_MSG = "Invalid CNAME: Should be '<server>'."
INVALID_MX_MSG = "Invalid MX: Should be '<preference> <server>'. Range for preference is 0-65535."
INVALID_SRV_MSG = ("Invalid SRV: Should be '<priority> <weight> <port> <server>'. Range for priority, weight, and "
                   "port are 0-65536.")  # fmt: skip
INVALID_SSHFP_MSG = "Invalid SSHFP: Should be '<algorithm> <fptype> <fingerprint>'."
CNAME_AND_OTHER_MSG = "CNAME records for a name cannot coexist with non-CNAME records."
MULTI_CNAME_MSG = "Only one CNAME can be associated with a name."


def _domain_name_error(value: str) -> str | None:
    """validate_domain_name's message for ``value`` (None when valid)."""
    if len(value) > 255:
        return "Domain name length cannot exceed 255 characters."
    if not all(re.match(f"^{LABEL}$", label) for label in value.rstrip(".").split(".")):
        if re.sub(r"[a-zA-Z0-9-.]*", "", value):
            return "Domain name contains invalid characters."
        return f"Invalid domain name: {value}."
    return None


def _rrdata_error(rrtype: str, rrdata: str) -> str | None:
    """DNSData.clean_rrdata: the rrdata must fit the record type."""
    if rrtype == "CNAME":
        return None if CNAME_SPEC.search(rrdata) else INVALID_CNAME_MSG
    if rrtype == "SSHFP":
        return None if re.search(r"^(?P<algo>[0-9]+)\s+(?P<fptype>[0-9]+)\s+(?P<fp>.*)$", rrdata) else INVALID_SSHFP_MSG
    if rrtype == "MX":
        m = re.search(r"^(?P<pref>[0-9]+)\s+(?P<mxhost>.+)$", rrdata)
        if m is None or not 0 <= int(m["pref"]) <= 65535:
            return INVALID_MX_MSG
        return _domain_name_error(m["mxhost"])
    if rrtype == "NS":
        return _domain_name_error(rrdata)
    if rrtype == "SRV":
        m = re.search(r"^(?P<pri>[0-9]+)\s+(?P<weight>[0-9]+)\s+(?P<port>[0-9]+)\s+(?P<target>.*)", rrdata)
        if m is None or any(not 0 <= int(m[k]) <= 65535 for k in ("pri", "weight", "port")):
            return INVALID_SRV_MSG
        # "." says the service is decidedly not available at this domain
        return None if m["target"] == "." else _domain_name_error(m["target"])
    return None  # TXT is free-form


def separate_fqdn(store, fqdn: str, rrtype: str | None) -> tuple[str | None, str | None]:
    """models/dnsresource.py separate_fqdn: ('@', fqdn) for a domain's own name; else the name (one label, or
    ``_service._proto[.label]`` for SRV) and the rest."""
    if store.domain_by_name(fqdn) is not None:
        return "@", fqdn
    spec = SRV_LHS if rrtype == "SRV" else LABEL
    m = re.match(rf"^(?P<name>{spec})\.(?P<domain>.+)$", fqdn)
    return (m["name"], m["domain"]) if m else (fqdn, None)


def _domain(ctx: Ctx, domainname: str) -> dict:
    d = ctx.store.domains.get(int(domainname)) if domainname.isdigit() else ctx.store.domain_by_name(domainname)
    if d is None:
        raise NotFound("No Domain matches the given query.")
    return d


def render_record(store, r: dict, rec: dict) -> dict:
    d = store.domains[r["domain"]]
    fqdn = d["name"] if r["name"] == "@" else f"{r['name']}.{d['name']}"
    return {"id": rec["id"], "fqdn": fqdn, "ttl": rec["ttl"], "rrtype": rec["rrtype"], "rrdata": rec["rrdata"],
            "resource_uri": f"{render.API}/dnsresourcerecords/{rec['id']}/"}  # fmt: skip


def _all_records(store):
    for r in sorted(store.dnsresources.values(), key=lambda r: (r["domain"], r["name"])):
        for rec in r.get("dnsdata", []):
            yield r, rec


def _find(ctx: Ctx, id: str) -> tuple[dict, dict]:
    for r, rec in _all_records(ctx.store):
        if str(rec["id"]) == id:
            return r, rec
    raise NotFound("No DNSData matches the given query.")


def _clean(ctx: Ctx, r: dict, rec: dict, new: bool) -> None:
    """DNSDataForm: ttl and rrtype fields, then DNSData.clean (rrdata, and for a new record the CNAME rules)."""
    errors: dict[str, list[str]] = {}
    if rec["rrtype"] not in SUPPORTED_RRTYPES:
        errors["rrtype"] = [f"{rec['rrtype']} is not one of {' '.join(SUPPORTED_RRTYPES)}."]
    if not rec["rrdata"]:
        errors["rrdata"] = ["This field is required."]
    if errors:
        raise ValidationError(errors)
    problem = _rrdata_error(rec["rrtype"], rec["rrdata"])
    others = [x for x in r.get("dnsdata", []) if x["id"] != rec.get("id")]
    if problem is None and new:
        cnames = sum(1 for x in others if x["rrtype"] == "CNAME")
        if rec["rrtype"] == "CNAME":
            non_cname = sum(1 for x in others if x["rrtype"] != "CNAME") + len(r["ip_addresses"])
            problem = CNAME_AND_OTHER_MSG if non_cname else MULTI_CNAME_MSG if cnames else None
        elif cnames:
            problem = CNAME_AND_OTHER_MSG
    if problem:
        raise ValidationError({"__all__": [problem]})


@records.action("GET")
def list_records(ctx: Ctx):
    """List DNS resource records (filters: fqdn, name, domain, rrtype)."""
    q = ctx.query
    name, domainname, rrtype = q.get("name"), q.get("domain"), q.get("rrtype")
    if domainname is None and name is None and q.get("fqdn"):
        name, domainname = separate_fqdn(ctx.store, q.get("fqdn"), rrtype)
    did = _domain(ctx, domainname)["id"] if domainname is not None else None
    return [render_record(ctx.store, r, rec) for r, rec in _all_records(ctx.store)
            if (did is None or r["domain"] == did) and (name is None or r["name"] == name)
            and (rrtype is None or rec["rrtype"] == rrtype)]  # fmt: skip


@records.action("POST")
def create_record(ctx: Ctx):
    """Create a record (admin): fqdn, or name and domain; rrtype; rrdata; ttl. The DNS resource of the name is
    made when it does not exist."""
    _check_admin(ctx)
    d = ctx.data
    name, domainname, rrtype, rrdata = d.get("name"), d.get("domain"), d.get("rrtype"), d.get("rrdata")
    if rrtype is None:
        raise BadRequest("rrtype must be provided.")
    if rrdata is None:
        raise BadRequest("rrdata must be provided.")
    if domainname is None and name is None and d.get("fqdn"):
        name, domainname = separate_fqdn(ctx.store, d.get("fqdn"), rrtype)
    domain = _domain(ctx, domainname) if domainname is not None else None
    if domain is None or name is None:
        raise ValidationError("Either name and domain (or fqdn) must be specified")
    r = next((x for x in ctx.store.dnsresources.values() if x["name"] == name and x["domain"] == domain["id"]), None)
    if r is None:  # DNSResourceForm: the name checked as validate_dnsresource_name does for this record type
        spec = SRV_LHS if rrtype.upper() == "SRV" else LABEL
        if name not in ("", "@", "*") and not re.match(f"^{spec}$", name):
            raise ValidationError({"name": [f"Invalid dnsresource name: {name}."]})
        r = {"id": ctx.store.next_id("dnsresource"), "name": name, "domain": domain["id"], "address_ttl": None,
             "ip_addresses": [], "dnsdata": []}  # fmt: skip
        ctx.store.dnsresources[r["id"]] = r
    rec = {"id": None, "ttl": ttl(d, "ttl"), "rrtype": rrtype.upper(), "rrdata": rrdata}
    _clean(ctx, r, rec, new=True)
    rec["id"] = ctx.store.next_id("dnsdata")
    r.setdefault("dnsdata", []).append(rec)
    return render_record(ctx.store, r, rec)


@record_h.action("GET")
def read_record(ctx: Ctx, id: str):
    """Read a DNS resource record."""
    return render_record(ctx.store, *_find(ctx, id))


@record_h.action("PUT")
def update_record(ctx: Ctx, id: str):
    """Update a record (admin): rrtype, rrdata, ttl (the fields given)."""
    _check_admin(ctx)
    r, rec = _find(ctx, id)
    d, updated = ctx.data, dict(rec)
    if "rrtype" in d:
        updated["rrtype"] = (d.get("rrtype") or "").upper()
    if "rrdata" in d:
        updated["rrdata"] = d.get("rrdata") or ""
    if "ttl" in d:
        updated["ttl"] = ttl(d, "ttl")
    _clean(ctx, r, updated, new=False)
    rec.update(updated)
    return render_record(ctx.store, r, rec)


@record_h.action("DELETE")
def delete_record(ctx: Ctx, id: str):
    """Delete a record (admin); a DNS resource left with no records and no addresses goes too."""
    _check_admin(ctx)
    r, rec = _find(ctx, id)
    r["dnsdata"] = [x for x in r["dnsdata"] if x["id"] != rec["id"]]
    if not r["dnsdata"] and not r["ip_addresses"]:
        del ctx.store.dnsresources[r["id"]]
    return None
