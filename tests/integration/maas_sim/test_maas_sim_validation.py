"""Names, DNS, config and the HTTP edges as MAAS 3.5 validates them."""

from __future__ import annotations

import re
import time
import uuid

import requests

from lab.maas_sim import names
from tests.integration.net import LOOP


def _err(resp):
    return resp.status_code, resp.json()


def test_zone_pool_and_tag_names(sim, tag):
    suffix = uuid.uuid4().hex[:6]
    ok = sim.call("POST", "zones/", data={"name": f"rack 1_a-{suffix}"})
    assert ok.status_code == 200, ok.text
    assert _err(sim.call("POST", "zones/", data={"name": "bad/zone"})) == (400, {"name": ["Enter a valid value."]})
    assert _err(sim.call("POST", "zones/", data={"name": "-lead"})) == (400, {"name": ["Enter a valid value."]})
    assert _err(sim.call("POST", "zones/", data={})) == (400, {"name": ["This field is required."]})
    rename = sim.call("PUT", f"zones/rack 1_a-{suffix}/", data={"name": "a.b"})
    assert _err(rename) == (400, {"name": ["Enter a valid value."]})
    assert _err(sim.call("POST", "resourcepools/", data={"name": "p:1"})) == (400, {"name": ["Enter a valid value."]})
    assert sim.call("POST", "resourcepools/", data={"name": f"pool-{suffix}"}).status_code == 200
    assert _err(sim.call("POST", "tags/", data={"name": "two words"})) == (400, {"name": ["Enter a valid value."]})
    assert _err(sim.call("POST", "tags/", data={"name": "a.b"})) == (400, {"name": ["Enter a valid value."]})
    assert sim.call("POST", "tags/", data={"name": f"ok_tag-{suffix}"}).status_code == 200


def test_domain_names_and_ttls(sim):
    suffix = uuid.uuid4().hex[:6]
    cases = [
        ("bad_domain.example", "Domain name contains invalid characters."),
        ("-bad.example", "Invalid domain name: -bad.example."),
        ("a..b", "Invalid domain name: a..b."),
        ("a" * 256, "Domain name length cannot exceed 255 characters."),
    ]
    for name, msg in cases:
        assert _err(sim.call("POST", "domains/", data={"name": name})) == (400, {"name": [msg]}), name
    for ttl, msg in (("-1", "Ensure this value is greater than or equal to 0."),
                     ("2147483648", "Ensure this value is less than or equal to 2147483647."),
                     ("soon", "Enter a whole number.")):  # fmt: skip
        resp = sim.call("POST", "domains/", data={"name": f"d{suffix}.example", "ttl": ttl})
        assert _err(resp) == (400, {"ttl": [msg]}), ttl
    ok = sim.call("POST", "domains/", data={"name": f"d{suffix}.example", "ttl": "2147483647"})
    assert (ok.status_code, ok.json()["ttl"]) == (200, 2147483647)


def test_dns_resources_need_a_domain_and_a_valid_label(sim):
    suffix = uuid.uuid4().hex[:6]
    dom = f"z{suffix}.example"
    assert sim.call("POST", "domains/", data={"name": dom}).status_code == 200
    required = {"domain": ["This field is required."]}
    assert _err(sim.call("POST", "dnsresources/", data={"name": "api", "ip_addresses": f"{LOOP}.2.1"})) == (
        400,
        required,
    )
    assert _err(sim.call("POST", "dnsresources/", data={"fqdn": "single-label"})) == (400, required)
    bad = sim.call("POST", "dnsresources/", data={"fqdn": f"bad_name.{dom}"})
    assert _err(bad) == (400, {"name": ["Invalid dnsresource name: bad_name."]})
    ttl = sim.call("POST", "dnsresources/", data={"fqdn": f"api.{dom}", "address_ttl": "-5"})
    assert _err(ttl) == (400, {"address_ttl": ["Ensure this value is greater than or equal to 0."]})
    fields = {"fqdn": f"api.{dom}", "address_ttl": "10", "ip_addresses": f"{LOOP}.2.9"}
    ok = sim.call("POST", "dnsresources/", data=fields)
    assert ok.status_code == 200, ok.text
    # a filter naming a domain MAAS does not have: 404, not an empty list
    for params in ({"domain": "nowhere.example"}, {"fqdn": "api.nowhere.example"}):
        resp = sim.call("GET", "dnsresources/", params=params)
        assert (resp.status_code, resp.text) == (404, "No Domain matches the given query."), params
    assert len(sim.call("GET", "dnsresources/", params={"fqdn": f"api.{dom}"}).json()) == 1
    assert sim.call("GET", "dnsresources/", params={"domain": dom}).json()[0]["fqdn"] == f"api.{dom}"


def test_every_config_name_maas_knows(sim):
    expected = names.default_config("x")
    for name in ("http_proxy", "upstream_dns", "ntp_servers", "default_storage_layout", "kernel_opts",
                 "enable_http_proxy", "maas_proxy_port", "dnssec_validation", "session_length", "theme"):  # fmt: skip
        assert name in expected
    for name in expected:
        resp = sim.call("GET", "maas/", params={"op": "get_config", "name": name})
        assert resp.status_code == 200, (name, resp.text)
    unknown = sim.call("GET", "maas/", params={"op": "get_config", "name": "no_such_setting"})
    assert _err(unknown) == (400, {"name": ["no_such_setting is not a valid config name."]})
    before = sim.call("GET", "maas/", params={"op": "get_config", "name": "http_proxy"}).json()
    try:
        set_ok = sim.call("POST", "maas/", params={"op": "set_config"},
                          data={"name": "http_proxy", "value": "http://proxy.lab:3128/"})  # fmt: skip
        assert set_ok.status_code == 200, set_ok.text
        got = sim.call("GET", "maas/", params={"op": "get_config", "name": "http_proxy"}).json()
        assert got == "http://proxy.lab:3128/"
        bad_url = sim.call("POST", "maas/", params={"op": "set_config"}, data={"name": "http_proxy", "value": "proxy"})
        assert _err(bad_url) == (400, {"http_proxy": ["Enter a valid URL."]})
        bad_choice = sim.call("POST", "maas/", params={"op": "set_config"},
                              data={"name": "default_storage_layout", "value": "zfs"})  # fmt: skip
        assert bad_choice.status_code == 400 and "zfs is not one of the available choices" in bad_choice.text
        bad_bool = sim.call("POST", "maas/", params={"op": "set_config"},
                            data={"name": "enable_http_proxy", "value": "maybe"})  # fmt: skip
        assert bad_bool.status_code == 400
    finally:
        sim.call("POST", "maas/", params={"op": "set_config"}, data={"name": "http_proxy", "value": before or ""})


def test_http_edges_login_slash_op(sim, maas_info):
    bad_login = requests.post(sim.url + "accounts/authenticate/", data={"username": "admin", "password": "no"},
                              timeout=30)  # fmt: skip
    assert (bad_login.status_code, bad_login.text) == (403, "")
    moved = sim.call("GET", "machines", params={"hostname": "x"}, allow_redirects=False)
    assert moved.status_code == 301
    assert moved.headers["Location"] == "/MAAS/api/2.0/machines/?hostname=x"
    assert sim.call("GET", "no-such-thing", allow_redirects=False).status_code == 404
    # MAAS answers an unknown op 400 (OperationsHandlerMixin.dispatch; its test_POST_fails_with_bad_operation)
    bogus = sim.call("POST", "machines/", params={"op": "frobnicate"})
    assert (bogus.status_code, bogus.text) == (400, "Unrecognised signature: method=POST op=frobnicate")


def test_oauth_timestamp_and_nonce(sim):
    header = sim.auth_header()
    first = sim.call("GET", "users/", params={"op": "whoami"}, headers={"Authorization": header})
    assert first.status_code == 200
    replay = sim.call("GET", "users/", params={"op": "whoami"}, headers={"Authorization": header})
    nonce = header.split('oauth_nonce="', 1)[1].split('"', 1)[0]
    assert (replay.status_code, replay.text) == (401, f"Authorization Error: 'Nonce already used: {nonce}'")
    old = int(time.time()) - 3600
    stale = re.sub(r'oauth_timestamp="\d+"', f'oauth_timestamp="{old}"', sim.auth_header())
    resp = sim.call("GET", "users/", params={"op": "whoami"}, headers={"Authorization": stale})
    assert resp.status_code == 401
    assert resp.text.startswith(f"Authorization Error: 'Expired timestamp: given {old} and now ")
    assert resp.text.endswith("has a greater difference than threshold 300'")
    no_nonce = ", ".join(p for p in sim.auth_header().split(", ") if not p.startswith("oauth_nonce"))
    resp = sim.call("GET", "users/", params={"op": "whoami"}, headers={"Authorization": no_nonce})
    assert (resp.status_code, resp.text) == (401, "Authorization Error: 'Parameter not found: oauth_nonce'")
