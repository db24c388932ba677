"""DNS resource records (CNAME, TXT, MX, NS, SRV, SSHFP) as MAAS 3.5 keeps them (api/dnsresourcerecords.py,
DNSDataForm, DNSData.clean): the maas.maas collection's dns_record calls for a non-address record (raw OAuth),
python-libmaas's bones handler, and the rules with their texts."""

from __future__ import annotations

import pytest
from maas.client.bones import CallError


def _create(sim, **data):
    return sim.call("POST", "dnsresourcerecords/", data=data)


def _resource(sim, fqdn: str) -> dict | None:
    found = [r for r in sim.call("GET", "dnsresources/").json() if r["fqdn"] == fqdn]
    assert len(found) <= 1, found
    return found[0] if found else None


def test_the_collections_dns_record_calls_for_a_txt_record(sim, tag):
    """dns_record (type TXT): POST dnsresourcerecords/ name+domain+rrtype+rrdata; found again in dnsresources/ by
    fqdn with the record in resource_records; PUT dnsresourcerecords/{record id}/; absent: DELETE the resource."""
    fqdn = f"{tag}.maas"
    made = _create(sim, name=tag, domain="maas", rrtype="TXT", rrdata="v=spf1 -all")
    assert made.status_code == 200, made.text
    rec = made.json()
    assert (rec["fqdn"], rec["rrtype"], rec["rrdata"], rec["ttl"]) == (fqdn, "TXT", "v=spf1 -all", None)
    assert rec["resource_uri"] == f"/MAAS/api/2.0/dnsresourcerecords/{rec['id']}/"
    res = _resource(sim, fqdn)  # the handler made the DNS resource for the name
    assert res["ip_addresses"] == []
    assert [(x["id"], x["rrtype"], x["rrdata"], x["ttl"]) for x in res["resource_records"]] == [
        (rec["id"], "TXT", "v=spf1 -all", None)]  # fmt: skip
    up = sim.call("PUT", f"dnsresourcerecords/{rec['id']}/", data={"rrtype": "TXT", "rrdata": "v=spf1 ~all"})
    assert up.status_code == 200 and up.json()["rrdata"] == "v=spf1 ~all", up.text
    assert [x["rrdata"] for x in sim.call("GET", "dnsresourcerecords/", params={"fqdn": fqdn}).json()] == [
        "v=spf1 ~all"]  # fmt: skip
    assert sim.call("DELETE", f"dnsresources/{res['id']}/").status_code == 204
    assert _resource(sim, fqdn) is None
    gone = sim.call("GET", f"dnsresourcerecords/{rec['id']}/")  # the records go with their resource
    assert (gone.status_code, gone.text) == (404, "No DNSData matches the given query.")


def test_python_libmaas_bones_and_the_last_record_deleting_its_resource(client, sim, tag):
    session = client._origin.session
    rec = session.DNSResourceRecords.create(fqdn=f"mail-{tag}.maas", rrtype="mx", rrdata="10 mx1.example.com")
    assert (rec["rrtype"], rec["rrdata"]) == ("MX", "10 mx1.example.com")  # rrtype upper-cased
    srv = session.DNSResourceRecords.create(fqdn=f"_sip._tcp.{tag}.maas", rrtype="SRV",
                                            rrdata="0 5 5060 sip.example.com")  # fmt: skip
    assert srv["fqdn"] == f"_sip._tcp.{tag}.maas"  # separate_fqdn keeps _service._proto.label for SRV
    listed = session.DNSResourceRecords.read(rrtype="SRV", domain="maas")
    assert srv["id"] in {x["id"] for x in listed} and rec["id"] not in {x["id"] for x in listed}
    session.DNSResourceRecord.delete(id=rec["id"])
    assert _resource(sim, f"mail-{tag}.maas") is None  # no records, no addresses: the resource went too
    session.DNSResourceRecord.delete(id=srv["id"])
    with pytest.raises(CallError) as err:
        session.DNSResourceRecord.read(id=srv["id"])
    assert err.value.status == 404


def test_rules_and_their_texts(sim, tag):
    missing = _create(sim, fqdn=f"{tag}.maas", rrdata="x")
    assert (missing.status_code, missing.text) == (400, "rrtype must be provided.")
    missing = _create(sim, fqdn=f"{tag}.maas", rrtype="TXT")
    assert (missing.status_code, missing.text) == (400, "rrdata must be provided.")
    nodomain = _create(sim, fqdn=f"{tag}.nosuch-{tag}", rrtype="TXT", rrdata="x")
    assert (nodomain.status_code, nodomain.text) == (404, "No Domain matches the given query.")
    cases = [
        ("CNAME", "not a name!", "Invalid CNAME: Should be '<server>'."),
        ("MX", "high mx1.example.com", "Invalid MX: Should be '<preference> <server>'. Range for preference is "
                                       "0-65535."),
        ("MX", "70000 mx1.example.com", "Invalid MX: Should be '<preference> <server>'. Range for preference is "
                                        "0-65535."),
        ("MX", "10 bad_host", "Domain name contains invalid characters."),
        ("SSHFP", "one two", "Invalid SSHFP: Should be '<algorithm> <fptype> <fingerprint>'."),
        ("NS", "ns-.example.com", "Invalid domain name: ns-.example.com."),
    ]  # fmt: skip
    for rrtype, rrdata, message in cases:
        resp = _create(sim, fqdn=f"r{tag}.maas", rrtype=rrtype, rrdata=rrdata)
        assert (resp.status_code, resp.json()) == (400, {"__all__": [message]}), (rrtype, rrdata, resp.text)
    assert _resource(sim, f"r{tag}.maas") is None  # a failed request leaves no DNS resource behind
    bad_type = _create(sim, fqdn=f"r{tag}.maas", rrtype="PTR", rrdata="x")
    assert bad_type.status_code == 400 and bad_type.json()["rrtype"][0].startswith("PTR is not one of ")
    bad_name = _create(sim, name="no_underscores", domain="maas", rrtype="TXT", rrdata="x")
    assert (bad_name.status_code, bad_name.json()) == (400, {"name": ["Invalid dnsresource name: no_underscores."]})
    # a CNAME is alone on its name: not beside other records, not beside addresses, not twice
    cname = _create(sim, fqdn=f"c{tag}.maas", rrtype="CNAME", rrdata="www.example.com.")
    assert cname.status_code == 200, cname.text
    for rrtype, rrdata, message in (
        ("TXT", "x", "CNAME records for a name cannot coexist with non-CNAME records."),
        ("CNAME", "other.example.com", "Only one CNAME can be associated with a name."),
    ):
        resp = _create(sim, fqdn=f"c{tag}.maas", rrtype=rrtype, rrdata=rrdata)
        assert (resp.status_code, resp.json()) == (400, {"__all__": [message]})  # fmt: skip
    addr = sim.call("POST", "dnsresources/", data={"fqdn": f"a{tag}.maas", "ip_addresses": "192.0.2.9"})
    assert addr.status_code == 200, addr.text
    resp = _create(sim, fqdn=f"a{tag}.maas", rrtype="CNAME", rrdata="www.example.com")
    assert resp.json() == {"__all__": ["CNAME records for a name cannot coexist with non-CNAME records."]}
    for fqdn in (f"c{tag}.maas", f"a{tag}.maas"):
        assert sim.call("DELETE", f"dnsresources/{_resource(sim, fqdn)['id']}/").status_code == 204
