"""IP ranges as MAAS 3.5 keeps them (api/ipranges.py, forms/iprange.py, IPRange.clean): python-libmaas's
IPRanges objects, the maas.maas collection's subnet_ip_range_info / subnet_info calls (raw OAuth), and the
model's rules with their texts.

Each test works on a subnet of its own (a seeded machine's second NIC makes it), so nothing another test holds
on the lab's subnet is in the way; only the reserve test uses the lab's subnet, at its top end.
"""

from __future__ import annotations

import random

import pytest
from maas.client.bones import CallError
from maas.client.enum import IPRangeType

from tests.integration.net import LOOP

# the collection's subnet_ip_range_info RETURN sample, one range
RANGE_KEYS = {"comment", "end_ip", "id", "resource_uri", "start_ip", "subnet", "type", "user"}
SUBNET_KEYS = {"active_discovery", "allow_dns", "allow_proxy", "cidr", "description", "disabled_boot_architectures",
               "dns_servers", "gateway_ip", "id", "managed", "name", "rdns_mode", "resource_uri", "space",
               "vlan"}  # fmt: skip


@pytest.fixture
def own_subnet(sim, tag):
    """A subnet of this test's own: 10.X.Y.0/24, gateway .1, a machine holding .50 STATIC (sticky)."""
    x, y = random.randint(100, 250), random.randint(1, 254)
    net = f"10.{x}.{y}"
    m = sim.seed({"nics": [{"name": "eno2", "cidr": f"{net}.0/24", "ip": f"{net}.50", "mode": "static",
                            "gateway_ip": f"{net}.1"}]}, tag=tag)[0]  # fmt: skip
    (sub,) = [s for s in sim.call("GET", "subnets/").json() if s["cidr"] == f"{net}.0/24"]
    made = []
    yield net, sub, m, made, (f"10.{x}.{y - 1}", f"10.{x}.{y + 1}")
    for rid in made:
        sim.call("DELETE", f"ipranges/{rid}/")


def _create(sim, made, **data):
    resp = sim.call("POST", "ipranges/", data=data)
    if resp.status_code == 200:
        made.append(resp.json()["id"])
    return resp


def test_python_libmaas_ip_ranges(client, sim, own_subnet):
    net, sub, _, made, _ = own_subnet
    subnet = client.subnets.get(sub["id"])
    r = client.ip_ranges.create(f"{net}.100", f"{net}.120", type=IPRangeType.RESERVED, comment="lab", subnet=subnet)
    made.append(r.id)
    assert (r.type, r.start_ip, r.end_ip, r.comment, r.subnet.id) == (IPRangeType.RESERVED, f"{net}.100",
                                                                      f"{net}.120", "lab", sub["id"])  # fmt: skip
    assert r.subnet.cidr == f"{net}.0/24"  # the whole subnet object, as MAAS renders it
    # no subnet given: MAAS takes the start address's (Subnet.objects.get_best_subnet_for_ip)
    d = client.ip_ranges.create(f"{net}.200", f"{net}.220", type=IPRangeType.DYNAMIC)
    made.append(d.id)
    assert (d.type, d.subnet.id) == (IPRangeType.DYNAMIC, sub["id"])
    assert {r.id, d.id} <= {x.id for x in client.ip_ranges.list()}
    assert client.ip_ranges.get(r.id).end_ip == f"{net}.120"
    d.delete()
    made.remove(d.id)
    with pytest.raises(CallError) as err:
        client.ip_ranges.get(d.id)
    assert err.value.status == 404 and err.value.content == b"No IPRange matches the given query."


def test_the_collections_subnet_ip_range_info_and_subnet_info_calls(sim, own_subnet):
    """subnet_ip_range_info: GET /api/2.0/ipranges/; subnet_info: GET subnets/ and ipranges/, grouped by
    ip_range["subnet"]["name"] into each subnet's ip_ranges."""
    net, sub, _, made, _ = own_subnet
    r = _create(sim, made, type="reserved", start_ip=f"{net}.10", end_ip=f"{net}.19", subnet=str(sub["id"]))
    assert r.status_code == 200, r.text
    got = r.json()
    assert set(got) == RANGE_KEYS and set(got["subnet"]) == SUBNET_KEYS
    assert got["resource_uri"] == f"/MAAS/api/2.0/ipranges/{got['id']}/"
    assert (got["user"]["username"], got["comment"]) == ("admin", "")  # the creator, MAAS's "" default comment
    ranges = sim.call("GET", "ipranges/").json()
    mine = [x for x in ranges if x["subnet"]["name"] == sub["name"]]
    assert [{k: x[k] for k in ("type", "start_ip", "end_ip")} for x in mine] == [
        {"type": "reserved", "start_ip": f"{net}.10", "end_ip": f"{net}.19"}
    ]
    assert all(set(x) == RANGE_KEYS for x in ranges)


def test_update_keeps_what_it_is_not_given(sim, own_subnet):
    net, sub, _, made, _ = own_subnet
    rid = _create(sim, made, type="reserved", start_ip=f"{net}.10", end_ip=f"{net}.19", comment="a").json()["id"]
    up = sim.call("PUT", f"ipranges/{rid}/", data={"end_ip": f"{net}.29"})
    assert up.status_code == 200, up.text
    assert (up.json()["start_ip"], up.json()["end_ip"], up.json()["comment"]) == (f"{net}.10", f"{net}.29", "a")
    bad = sim.call("PUT", f"ipranges/{rid}/", data={"end_ip": f"{net}.5"})
    assert bad.status_code == 400
    assert bad.json() == {"end_ip": ["End IP address must not be less than Start IP address."]}
    assert sim.call("GET", f"ipranges/{rid}/").json()["end_ip"] == f"{net}.29"  # the failed update changed nothing
    assert sim.call("DELETE", f"ipranges/{rid}/").status_code == 204
    made.remove(rid)
    assert sim.call("DELETE", f"ipranges/{rid}/").status_code == 404


def test_model_rules_and_their_texts(sim, own_subnet):
    net, sub, _, made, (below, above) = own_subnet
    cidr, sid = f"{net}.0/24", str(sub["id"])
    both = ("start_ip", "end_ip")
    cases = [
        ({"start_ip": f"{net}.10", "end_ip": f"{net}.20", "subnet": sid}, {"type": ["This field is required."]}),
        ({"type": "static", "start_ip": f"{net}.10", "end_ip": f"{net}.20", "subnet": sid},
         {"type": ["Select a valid choice. static is not one of the available choices."]}),
        ({"type": "reserved", "start_ip": "10.1", "end_ip": f"{net}.20", "subnet": sid},
         {"start_ip": ["Enter a valid IPv4 or IPv6 address.",
                       "Start IP address and end IP address are both required."],
          "end_ip": ["Start IP address and end IP address are both required."]}),
        ({"type": "reserved", "start_ip": f"{net}.10", "end_ip": f"{net}.20", "subnet": "9999"},
         {"subnet": ["Select a valid choice. That choice is not one of the available choices."]}),
        ({"type": "reserved", "start_ip": "192.0.2.10", "end_ip": "192.0.2.20"},
         {"subnet": ["This field is required."]}),
        ({"type": "reserved", "start_ip": f"{net}.10", "end_ip": "fd00::1", "subnet": sid},
         dict.fromkeys(both, ["Start IP address and end IP address must be in the same address family."])),
        ({"type": "reserved", "start_ip": f"{net}.20", "end_ip": f"{net}.10", "subnet": sid},
         {"end_ip": ["End IP address must not be less than Start IP address."]}),
        ({"type": "reserved", "start_ip": "192.0.2.10", "end_ip": "192.0.2.20", "subnet": sid},
         dict.fromkeys(both, [f"IP addresses must be within subnet: {cidr}."])),
        ({"type": "reserved", "start_ip": f"{below}.250", "end_ip": f"{net}.10", "subnet": sid},
         {"start_ip": [f"Start IP address must be within subnet: {cidr}."]}),
        ({"type": "reserved", "start_ip": f"{net}.250", "end_ip": f"{above}.1", "subnet": sid},
         {"end_ip": [f"End IP address must be within subnet: {cidr}."]}),
        ({"type": "reserved", "start_ip": f"{net}.0", "end_ip": f"{net}.5", "subnet": sid},
         {"start_ip": ["Reserved network address cannot be included in IP range."]}),
        ({"type": "reserved", "start_ip": f"{net}.250", "end_ip": f"{net}.255", "subnet": sid},
         {"end_ip": ["Broadcast address cannot be included in IP range."]}),
    ]  # fmt: skip
    for data, errors in cases:
        resp = _create(sim, made, **data)
        assert (resp.status_code, resp.json()) == (400, errors), (data, resp.text)
    assert made == []  # no failed request left a range behind


def test_overlaps_reserved_and_dynamic(sim, own_subnet):
    """Reserved ranges may cover allocated addresses but no other range; dynamic ones neither (nor the gateway)."""
    net, sub, _, made, _ = own_subnet
    sid = str(sub["id"])
    ok = _create(sim, made, type="reserved", start_ip=f"{net}.40", end_ip=f"{net}.60", subnet=sid)
    assert ok.status_code == 200, ok.text  # .50 is the machine's sticky address: a reserved range may hold it
    clash = _create(sim, made, type="reserved", start_ip=f"{net}.55", end_ip=f"{net}.70", subnet=sid)
    assert clash.json() == dict.fromkeys(("start_ip", "end_ip"),
                                         ["Requested reserved range conflicts with an existing range."])  # fmt: skip
    sim.call("DELETE", f"ipranges/{made.pop()}/")
    for start, end in ((f"{net}.45", f"{net}.55"), (f"{net}.1", f"{net}.9")):  # the machine's address; the gateway
        clash = _create(sim, made, type="dynamic", start_ip=start, end_ip=end, subnet=sid)
        assert clash.status_code == 400
        assert clash.json() == dict.fromkeys(
            ("start_ip", "end_ip"), ["Requested dynamic range conflicts with an existing IP address or range."]
        )
    ok = _create(sim, made, type="dynamic", start_ip=f"{net}.100", end_ip=f"{net}.254", subnet=sid)
    assert ok.status_code == 200, ok.text
    full = _create(sim, made, type="reserved", start_ip=f"{net}.2", end_ip=f"{net}.3", subnet=sid)
    assert full.status_code == 200, full.text
    # now everything but .4-.99 is taken by ranges (.1 the gateway counts only for dynamic ranges)
    rest = _create(sim, made, type="reserved", start_ip=f"{net}.4", end_ip=f"{net}.99", subnet=sid)
    assert rest.status_code == 200, rest.text
    none_left = _create(sim, made, type="reserved", start_ip=f"{net}.1", end_ip=f"{net}.1", subnet=sid)
    assert none_left.status_code == 200, none_left.text
    last = _create(sim, made, type="reserved", start_ip=f"{net}.30", end_ip=f"{net}.31", subnet=sid)
    assert last.json() == dict.fromkeys(("start_ip", "end_ip"),
                                        ["There is no room for any reserved ranges on this subnet."])  # fmt: skip


def test_reserve_picks_no_address_inside_a_range(sim, tag):
    """ipaddresses op=reserve without an ip takes a free address that no IP range holds."""
    top = f"{LOOP}.2.250"
    r = sim.call("POST", "ipranges/", data={"type": "reserved", "start_ip": top, "end_ip": f"{LOOP}.2.253"})
    assert r.status_code == 200, r.text
    try:
        got = sim.call("POST", "ipaddresses/", params={"op": "reserve"}, data={"subnet": "1"})
        assert got.status_code == 200, got.text
        ip = got.json()["ip"]
        assert int(ip.rsplit(".", 1)[1]) < 250, ip
        assert sim.call("POST", "ipaddresses/", params={"op": "release"}, data={"ip": ip}).ok
    finally:
        assert sim.call("DELETE", f"ipranges/{r.json()['id']}/").status_code == 204


def test_seeded_machines_take_no_address_inside_a_range(sim, tag):
    """A machine enlisted through the control API gets the address MAAS would hand it: none in a range."""
    machines = sim.ctl("GET", "machines")
    taken, n = {m["ip"] for m in machines}, len(machines) + 1
    while f"{LOOP}.2.{n}" in taken:  # the address the control API gives the next machine
        n += 1
    assert n + 2 < 254, f"the lab subnet is nearly full ({len(machines)} machines): reset the simulator"
    r = sim.call("POST", "ipranges/", data={"type": "reserved", "start_ip": f"{LOOP}.2.{n}",
                                            "end_ip": f"{LOOP}.2.{n + 2}"})  # fmt: skip
    assert r.status_code == 200, r.text
    try:
        (m,) = sim.seed({}, tag=tag)
        assert int(m["ip"].rsplit(".", 1)[1]) > n + 2, (n, m["ip"])
    finally:
        assert sim.call("DELETE", f"ipranges/{r.json()['id']}/").status_code == 204
