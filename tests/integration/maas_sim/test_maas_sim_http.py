"""The MAAS simulator through a plain OAuth-signed HTTP client (requests), as the
maas.maas collection and maas-client-go talk to MAAS: status codes and bodies."""

from __future__ import annotations

import base64

import pytest
import requests
from requests_oauthlib import OAuth1

from tests.integration.net import LOOP

# Fields of src/maasserver/api/examples/machines.json "machines-deploy" a client may read.
EXAMPLE_MACHINE_KEYS = {
    "address_ttl", "architecture", "bcaches", "bios_boot_method", "blockdevice_set", "boot_disk", "boot_interface",
    "cache_sets", "commissioning_status", "commissioning_status_name", "cpu_count", "cpu_speed", "cpu_test_status",
    "cpu_test_status_name", "current_commissioning_result_id", "current_installation_result_id",
    "current_testing_result_id", "default_gateways", "description", "disable_ipv4", "distro_series", "domain", "fqdn",
    "hardware_info", "hostname", "hwe_kernel", "interface_set", "interface_test_status", "interface_test_status_name",
    "ip_addresses", "locked", "memory", "memory_test_status", "memory_test_status_name", "min_hwe_kernel", "netboot",
    "node_type", "node_type_name", "osystem", "other_test_status", "other_test_status_name", "owner", "owner_data",
    "physicalblockdevice_set", "pool", "power_state", "power_type", "raids", "resource_uri", "special_filesystems",
    "status", "status_action", "status_message", "status_name", "storage", "storage_test_status",
    "storage_test_status_name", "swap_size", "system_id", "tag_names", "testing_status", "testing_status_name",
    "virtualblockdevice_set", "volume_groups", "zone",
}  # fmt: skip


def test_describe_is_anonymous_and_built_from_the_host_header(sim):
    resp = sim.call("GET", "describe/", auth=False, headers={"Host": "maas.example:5240"})
    assert resp.status_code == 200
    assert resp.headers["Content-Type"] == "application/json"
    doc = resp.json()
    handlers = {r["name"]: r for r in doc["resources"]}
    machine = handlers["MachineHandler"]["auth"]
    assert machine["uri"] == "http://maas.example:5240/MAAS/api/2.0/machines/{system_id}/"
    assert machine["params"] == ["system_id"]
    assert {(a["name"], a["method"], a["op"], a["restful"]) for a in machine["actions"]} >= {
        ("read", "GET", None, True),
        ("deploy", "POST", "deploy", False),
        ("release", "POST", "release", False),
        ("query_power_state", "GET", "query_power_state", False),
    }
    assert handlers["DNSResourceHandler"]["auth"]["params"] == ["id"]
    assert handlers["VersionHandler"]["anon"] is not None and handlers["VersionHandler"]["auth"] is None
    assert {"MachinesHandler", "DNSResourcesHandler", "DomainsHandler", "ZonesHandler", "ResourcePoolsHandler",
            "TagsHandler", "TagHandler", "UsersHandler"} <= set(handlers)  # fmt: skip


def test_oauth_is_checked(sim):
    assert sim.call("GET", "users/", params={"op": "whoami"}, auth=False).status_code == 401
    consumer, token, secret = sim.apikey.split(":")
    bad_token = sim.call("GET", "machines/", headers={"Authorization": sim.auth_header(f"{consumer}:nope:{secret}")})
    assert (bad_token.status_code, bad_token.text) == (401, "Authorization Error: 'Invalid access token: nope'")
    bad_secret = sim.call("GET", "machines/", headers={"Authorization": sim.auth_header(f"{consumer}:{token}:x")})
    assert bad_secret.status_code == 401
    bad_consumer = sim.call("GET", "machines/", headers={"Authorization": sim.auth_header(f"x:{token}:{secret}")})
    assert (bad_consumer.status_code, bad_consumer.text) == (401, "Authorization Error: Invalid API key.")
    # PLAINTEXT without realm (the maas.maas collection) and with (python-libmaas)
    for realm in (False, True):
        ok = sim.call("GET", "users/", params={"op": "whoami"}, headers={"Authorization": sim.auth_header(realm=realm)})
        assert (ok.status_code, ok.json()["username"]) == (200, "admin")
    # HMAC-SHA1 (maas-client-go), right and wrong secret
    hmac_ok = requests.get(sim.api + "users/?op=whoami", auth=OAuth1(consumer, "", token, secret), timeout=30)
    assert (hmac_ok.status_code, hmac_ok.json()["username"]) == (200, "admin")
    hmac_bad = requests.get(sim.api + "users/?op=whoami", auth=OAuth1(consumer, "", token, "wrong"), timeout=30)
    assert hmac_bad.status_code == 401
    # HMAC-SHA1 over a signed urlencoded body
    zones = requests.post(sim.api + "zones/", data={"name": f"hmac-{token[:6].lower()}-{id(sim)}"},
                          auth=OAuth1(consumer, "", token, secret), timeout=30)  # fmt: skip
    assert zones.status_code == 200, zones.text


def test_allocate_errors_and_repeated_fields(sim, tag):
    target = sim.seed({"tags": ["rack1"], "zone": "az-3"}, tag=tag)[0]
    unknown = sim.call("POST", "machines/", params={"op": "allocate"}, data={"tags": tag, "colour": "red"})
    assert (unknown.status_code, unknown.json()) == (400, {"colour": ["No such constraint."]})
    bad_zone = sim.call("POST", "machines/", params={"op": "allocate"}, data={"zone": "mars"})
    assert (bad_zone.status_code, bad_zone.json()) == (400, {"zone": ["No such zone(s): mars."]})
    bad_tag = sim.call("POST", "machines/", params={"op": "allocate"}, data={"tags": "no-such-tag"})
    assert (bad_tag.status_code, bad_tag.json()) == (400, {"tags": ["No such tag(s): 'no-such-tag'."]})
    none = sim.call("POST", "machines/", params={"op": "allocate"}, data=[("tags", tag), ("not_in_zone", "az-3")])
    assert none.status_code == 409
    assert none.headers["Content-Type"].startswith("text/plain")
    assert none.text == (
        f"No available machine matches constraints: [('tags', ['{tag}']), ('not_in_zone', ['az-3'])] "
        f'(resolved to "not_in_zone=az-3 tags={tag}")'
    )
    dry = sim.call("POST", "machines/", params={"op": "allocate"}, data=[("tags", tag), ("dry_run", "true")])
    assert (dry.status_code, dry.json()["system_id"], dry.json()["status_name"]) == (200, target["system_id"], "Ready")
    assert sim.state(target["system_id"])["owner"] is None
    # repeated fields are a list: both tags must match
    got = sim.call("POST", "machines/", params={"op": "allocate"}, data=[("tags", tag), ("tags", "rack1")])
    assert (got.status_code, got.json()["system_id"], got.json()["status_name"]) == (
        200,
        target["system_id"],
        "Allocated",
    )
    assert got.json()["owner"] == "admin"


def test_machine_json_has_maas_shape(sim, tag):
    target = sim.seed({"zone": "az-1", "pool": "compute"}, tag=tag)[0]
    m = sim.call("GET", f"machines/{target['system_id']}/").json()
    assert EXAMPLE_MACHINE_KEYS <= set(m)
    assert m["zone"] == {
        "name": "az-1",
        "description": "",
        "id": m["zone"]["id"],
        "resource_uri": "/MAAS/api/2.0/zones/az-1/",
    }
    assert set(m["pool"]) == {"name", "description", "id", "resource_uri"} and m["pool"]["name"] == "compute"
    assert (m["status"], m["status_name"], m["power_state"], m["owner"], m["owner_data"]) == (
        4,
        "Ready",
        "off",
        None,
        {},
    )
    assert m["domain"]["name"] == "maas" and m["fqdn"] == f"{target['hostname']}.maas"
    nic = m["interface_set"][0]
    assert {"name", "id", "mac_address", "system_id", "tags", "effective_mtu", "links", "vlan"} <= set(nic)
    assert {"name", "id", "size"} <= set(m["blockdevice_set"][0])
    assert tag in m["tag_names"]


def test_illegal_transitions_answer_409_with_maas_messages(sim, tag):
    new, broken = sim.seed({"status": "New"}, {}, tag=tag)
    sid = new["system_id"]
    release = sim.call("POST", f"machines/{sid}/", params={"op": "release"})
    assert (release.status_code, release.text) == (409, "Machine cannot be released in its current state ('New').")
    deploy = sim.call("POST", f"machines/{sid}/", params={"op": "deploy"})
    assert (deploy.status_code, deploy.text) == (409, "Can't deploy a machine that is in the 'New' state")
    sim.ctl("POST", f"machines/{broken['system_id']}/fault", {"fault": "broken"})
    assert sim.state(broken["system_id"])["status_name"] == "Broken"
    deploy = sim.call("POST", f"machines/{broken['system_id']}/", params={"op": "deploy"})
    assert (deploy.status_code, deploy.text) == (409, "Can't deploy a machine that is in the 'Broken' state")
    fixed = sim.call("POST", f"machines/{broken['system_id']}/", params={"op": "mark_fixed"})
    assert (fixed.status_code, fixed.json()["status_name"]) == (200, "Ready")
    assert sim.call("POST", f"machines/{sid}/", params={"op": "mark_fixed"}).status_code == 409
    missing = sim.call("GET", "machines/nosuch/")
    assert (missing.status_code, missing.text) == (404, "No Machine matches the given query.")
    bogus = sim.call("POST", f"machines/{sid}/", params={"op": "bogus"})
    assert (bogus.status_code, bogus.text) == (400, "Unrecognised signature: method=POST op=bogus")


def _multipart_base64(fields: list[tuple[str, str]], boundary: str = "sim-boundary") -> tuple[bytes, str]:
    """A body as python-libmaas builds it: every part Content-Transfer-Encoding: base64."""
    lines = []
    for name, value in fields:
        lines += [f"--{boundary}", f'Content-Disposition: form-data; name="{name}"',
                  "Content-Type: text/plain; charset=utf-8", "Content-Transfer-Encoding: base64", "",
                  base64.b64encode(value.encode()).decode()]  # fmt: skip
    lines += [f"--{boundary}--", ""]
    return "\r\n".join(lines).encode(), f'multipart/form-data; boundary="{boundary}"'


def test_multipart_base64_deploy_then_timed_release(sim, tag):
    target = sim.seed({}, tag=tag)[0]
    sid = target["system_id"]
    sim.ctl("POST", "timings", {"deploy": 0.3, "release": 0.5})
    user_data = "#!/bin/sh\necho join\n"
    body, ctype = _multipart_base64([("user_data", base64.b64encode(user_data.encode()).decode()),
                                     ("distro_series", "noble")])  # fmt: skip
    # deploy on a Ready machine allocates it on the way
    resp = sim.call("POST", f"machines/{sid}/", params={"op": "deploy"}, data=body, headers={"Content-Type": ctype})
    assert resp.status_code == 200, resp.text
    assert (resp.json()["status_name"], resp.json()["owner"], resp.json()["distro_series"]) == (
        "Deploying",
        "admin",
        "noble",
    )
    assert sim.state(sid)["user_data"] == user_data
    assert sim.wait_status(sid, "Deployed")["ip_addresses"] == [target["ip"]]
    # an empty POST as python-libmaas sends it: one part without headers
    empty = b"--b\r\n\r\n\r\n--b--\r\n"
    resp = sim.call("POST", f"machines/{sid}/", params={"op": "release"}, data=empty,
                    headers={"Content-Type": 'multipart/form-data; boundary="b"'})  # fmt: skip
    assert (resp.status_code, resp.json()["status_name"]) == (200, "Releasing")
    # releasing again while Releasing is a no-op success, as in MAAS
    again = sim.call("POST", f"machines/{sid}/", params={"op": "release"})
    assert (again.status_code, again.json()["status_name"]) == (200, "Releasing")
    assert sim.wait_status(sid, "Ready")["status_name"] == "Ready"


def test_op_path_segment_and_owner_data(sim, tag):
    target = sim.seed({}, tag=tag)[0]
    sid = target["system_id"]
    sim.call("POST", "machines/", params={"op": "allocate"}, data={"system_id": sid})
    resp = sim.call("POST", f"machines/{sid}/op-power_on", data={"comment": "maas provider power on"})
    assert (resp.status_code, resp.json()["status_name"]) == (200, "Deploying")
    resp = sim.call("POST", f"machines/{sid}/", params={"op": "set_owner_data"}, data={"cluster": "c1", "role": "cp"})
    assert resp.json()["owner_data"] == {"cluster": "c1", "role": "cp"}
    resp = sim.call("POST", f"machines/{sid}/", params={"op": "set_owner_data"}, data={"role": ""})
    assert resp.json()["owner_data"] == {"cluster": "c1"}


def test_machine_list_filters(sim, tag):
    a, b = sim.seed({"zone": "az-2"}, {"zone": "az-3"}, tag=tag)
    names = sim.call("GET", "machines/", params=[("hostname", a["hostname"]), ("hostname", b["hostname"])])
    assert sorted(m["system_id"] for m in names.json()) == sorted([a["system_id"], b["system_id"]])
    by_zone = sim.call("GET", "machines/", params={"hostname": [a["hostname"], b["hostname"]], "zone": "az-3"})
    assert [m["system_id"] for m in by_zone.json()] == [b["system_id"]]
    by_tag = sim.call("GET", "machines/", params={"tags": tag, "status": "ready"})
    assert sorted(m["system_id"] for m in by_tag.json()) == sorted([a["system_id"], b["system_id"]])
    bad = sim.call("GET", "machines/", params={"flavour": "x"})
    assert (bad.status_code, bad.json()) == (400, {"flavour": ["No such constraint."]})


def test_dns_resources_over_plain_http(sim, tag):
    fqdn = f"cp-{tag}.maas"
    created = sim.call("POST", "dnsresources/", data={"fqdn": fqdn, "address_ttl": "10", "ip_addresses": ""})
    assert created.status_code == 200, created.text
    rid = created.json()["id"]
    # the maas.maas collection updates and deletes at dnsresources//{id}/
    updated = sim.call("PUT", f"dnsresources//{rid}/", data={"ip_addresses": "10.0.0.1 10.0.0.2"})
    assert [a["ip"] for a in updated.json()["ip_addresses"]] == ["10.0.0.1", "10.0.0.2"]
    bad = sim.call("PUT", f"dnsresources/{rid}/", data={"ip_addresses": "10.0.0.1 not-an-ip"})
    assert (bad.status_code, bad.json()) == (400, {"ip_addresses": ["'not-an-ip' is not a valid IP address."]})
    listed = sim.call("GET", "dnsresources/", params={"fqdn": fqdn}).json()
    assert [r["id"] for r in listed] == [rid] and listed[0]["address_ttl"] == 10
    no_domain = sim.call("POST", "dnsresources/", data={"fqdn": "x.no-such-domain"})
    assert no_domain.status_code == 404
    deleted = sim.call("DELETE", f"dnsresources//{rid}/")
    assert (deleted.status_code, deleted.content) == (204, b"")
    assert "json" not in deleted.headers.get("Content-Type", "")
    assert sim.call("GET", f"dnsresources/{rid}/").status_code == 404


def test_domains_zones_pools_tags(sim, tag):
    dom = sim.call("POST", "domains/", data={"name": f"{tag}.example", "authoritative": "true"})
    assert (dom.status_code, dom.json()["name"], dom.json()["is_default"]) == (200, f"{tag}.example", False)
    rec = sim.call("POST", "dnsresources/", data={"fqdn": f"api.{tag}.example", "address_ttl": "10"})
    assert rec.json()["fqdn"] == f"api.{tag}.example"
    zone = sim.call("POST", "zones/", data={"name": f"z-{tag}", "description": "d"})
    assert zone.json()["resource_uri"] == f"/MAAS/api/2.0/zones/z-{tag}/"
    assert sim.call("POST", "zones/", data={"name": f"z-{tag}"}).status_code == 400
    pool = sim.call("POST", "resourcepools/", data={"name": f"p-{tag}"}).json()
    assert sim.call("GET", f"resourcepool/{pool['id']}/").json()["name"] == f"p-{tag}"
    target = sim.seed({}, tag=tag)[0]
    moved = sim.call("PUT", f"machines/{target['system_id']}/", data={"zone": f"z-{tag}", "pool": f"p-{tag}"}).json()
    assert (moved["zone"]["name"], moved["pool"]["name"]) == (f"z-{tag}", f"p-{tag}")
    sim.call("POST", "tags/", data={"name": f"{tag}-extra"})
    counts = sim.call("POST", f"tags/{tag}-extra/", params={"op": "update_nodes"}, data={"add": target["system_id"]})
    assert counts.json() == {"added": 1, "removed": 0}
    tagged = sim.call("GET", f"tags/{tag}-extra/", params={"op": "machines"}).json()
    assert [m["system_id"] for m in tagged] == [target["system_id"]]


def test_injected_http_faults(sim):
    try:
        sim.ctl("POST", "faults", {"status": 503, "count": 1, "method": "GET", "path": "/machines/$"})
        first = sim.call("GET", "machines/")
        assert (first.status_code, first.text) == (503, "Service Unavailable")
        assert sim.call("GET", "machines/").status_code == 200  # the fault is used up
        sim.ctl("POST", "faults", {"status": 500, "count": 2, "path": "/version/"})
        assert [sim.call("GET", "version/", auth=False).status_code for _ in range(3)] == [500, 500, 200]
        # a slow answer: a client with a short timeout gives up, the next call is served
        sim.ctl("POST", "faults", {"delay": 3, "count": 1, "path": "/zones/"})
        with pytest.raises(requests.exceptions.ReadTimeout):
            requests.get(sim.api + "zones/", headers={"Authorization": sim.auth_header()}, timeout=0.5)
        assert sim.call("GET", "zones/").status_code == 200
        assert sim.ctl("GET", "faults") == []
    finally:
        sim.ctl("DELETE", "faults")


def test_control_api_shows_machine_state(sim, tag):
    target = sim.seed({"cpu_count": 6, "memory": 12288}, tag=tag)[0]
    assert target["ip"].startswith(f"{LOOP}.2.") and target["status_name"] == "Ready"
    listed = {m["system_id"]: m for m in sim.ctl("GET", "machines")}
    assert {"system_id", "hostname", "status_name", "power_state", "ip", "user_data"} <= set(
        listed[target["system_id"]]
    )
    bad = requests.post(sim.control + "timings", json={"warp": 1}, timeout=30)
    assert bad.status_code == 400 and "unknown timings" in bad.json()["error"]
    poked = sim.ctl("POST", f"machines/{target['system_id']}", {"status": "Deployed", "power_state": "on"})
    assert (poked["status_name"], poked["power_state"]) == ("Deployed", "on")
    assert sim.ctl("GET", "state")["timings"]["deploy"] == 0.4


def test_commission_new_machine_then_abort_a_deployment(sim, tag):
    new = sim.seed({"status": "New"}, tag=tag)[0]
    sid = new["system_id"]
    resp = sim.call("POST", f"machines/{sid}/", params={"op": "commission"})
    assert (resp.status_code, resp.json()["status_name"]) == (200, "Commissioning")
    assert sim.wait_status(sid, "Ready")["power_state"] == "off"
    sim.ctl("POST", "timings", {"deploy": 30})
    resp = sim.call("POST", f"machines/{sid}/", params={"op": "deploy"})
    assert resp.json()["status_name"] == "Deploying"
    aborted = sim.call("POST", f"machines/{sid}/", params={"op": "abort"})
    assert (aborted.status_code, aborted.json()["status_name"]) == (200, "Allocated")
    again = sim.call("POST", f"machines/{sid}/", params={"op": "abort"})
    assert (again.status_code, again.text) == (409, "Cannot abort in current state Allocated.")
