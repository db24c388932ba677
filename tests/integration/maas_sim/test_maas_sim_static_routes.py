"""Static routes as MAAS 3.5 keeps them (api/staticroutes.py, StaticRouteForm, StaticRoute.clean): python-libmaas's
StaticRoutes objects, the maas.maas collection's static_route calls (raw OAuth), the rules and their texts."""

from __future__ import annotations

import random

import pytest
from maas.client.bones import CallError

from tests.integration.net import LOOP


@pytest.fixture
def subnets(sim, tag):
    """A subnet of this test's own (10.X.Y.0/24, made by a seeded machine's second NIC) and the lab's."""
    net = f"10.{random.randint(100, 250)}.{random.randint(1, 254)}"
    sim.seed({"nics": [{"name": "eno2", "cidr": f"{net}.0/24", "gateway_ip": f"{net}.1"}]}, tag=tag)
    (own,) = [s for s in sim.call("GET", "subnets/").json() if s["cidr"] == f"{net}.0/24"]
    made = []
    yield net, own, made
    for rid in made:
        sim.call("DELETE", f"static-routes/{rid}/")


def _create(sim, made, **data):
    resp = sim.call("POST", "static-routes/", data=data)
    if resp.status_code == 200:
        made.append(resp.json()["id"])
    return resp


def test_python_libmaas_static_routes(client, subnets):
    net, own, made = subnets
    source, destination = client.subnets.get(own["id"]), client.subnets.get(1)
    route = client.static_routes.create(destination, source, f"{net}.254", 10)
    made.append(route.id)
    assert (route.source.id, route.destination.id, route.gateway_ip, route.metric) == (own["id"], 1, f"{net}.254", 10)
    assert route.destination.cidr == f"{LOOP}.2.0/24"  # the whole subnet objects, as MAAS renders them
    assert route.id in {r.id for r in client.static_routes.list()}
    assert client.static_routes.get(route.id).gateway_ip == f"{net}.254"
    route.delete()
    made.remove(route.id)
    with pytest.raises(CallError) as err:
        client.static_routes.get(route.id)
    assert err.value.status == 404 and err.value.content == b"No StaticRoute matches the given query."


def test_the_collections_static_route_calls(sim, subnets):
    """static_route: create with source/destination/gateway_ip/metric, find it in the list by source and
    destination, PUT a new metric (the rest kept), DELETE; metric defaults to 0."""
    net, own, made = subnets
    r = _create(sim, made, source=f"cidr:{own['cidr']}", destination="1", gateway_ip=f"{net}.254")
    assert r.status_code == 200, r.text
    got = r.json()
    assert set(got) == {"id", "source", "destination", "gateway_ip", "metric", "resource_uri"}
    assert (got["metric"], got["resource_uri"]) == (0, f"/MAAS/api/2.0/static-routes/{got['id']}/")
    found = [x for x in sim.call("GET", "static-routes/").json()
             if x["source"]["id"] == own["id"] and x["destination"]["id"] == 1]  # fmt: skip
    assert [x["id"] for x in found] == [got["id"]]
    up = sim.call("PUT", f"static-routes/{got['id']}/", data={"metric": "5"})
    assert up.status_code == 200, up.text
    assert (up.json()["metric"], up.json()["gateway_ip"], up.json()["source"]["id"]) == (5, f"{net}.254", own["id"])
    assert sim.call("DELETE", f"static-routes/{got['id']}/").status_code == 204
    made.remove(got["id"])
    assert sim.call("GET", f"static-routes/{got['id']}/").status_code == 404


def test_rules_and_their_texts(sim, subnets):
    net, own, made = subnets
    sid = str(own["id"])
    invalid = "Select a valid choice. That choice is not one of the available choices."
    cases = [
        ({}, {"source": ["This field is required."], "destination": ["This field is required."],
              "gateway_ip": ["This field is required."]}),
        ({"source": "999", "destination": "1", "gateway_ip": f"{net}.254"}, {"source": [invalid]}),
        ({"source": sid, "destination": "1", "gateway_ip": "nope"},
         {"gateway_ip": ["Enter a valid IPv4 or IPv6 address."]}),
        ({"source": sid, "destination": "1", "gateway_ip": f"{LOOP}.2.9"},
         {"gateway_ip": [f"Enter an IP address in {own['cidr']}."]}),
        ({"source": sid, "destination": sid, "gateway_ip": f"{net}.254"},
         {"__all__": ["source and destination cannot be the same subnet."]}),
        ({"source": sid, "destination": "1", "gateway_ip": f"{net}.254", "metric": "-1"},
         {"metric": ["Ensure this value is greater than or equal to 0."]}),
        ({"source": sid, "destination": "1", "gateway_ip": f"{net}.254", "metric": "x"},
         {"metric": ["Enter a whole number."]}),
    ]  # fmt: skip
    for data, errors in cases:
        resp = _create(sim, made, **data)
        assert (resp.status_code, resp.json()) == (400, errors), (data, resp.text)
    assert made == []
    ok = _create(sim, made, source=sid, destination="1", gateway_ip=f"{net}.254")
    assert ok.status_code == 200, ok.text
    dup = _create(sim, made, source=sid, destination="1", gateway_ip=f"{net}.254", metric="3")
    assert (dup.status_code, dup.json()) == (
        400, {"__all__": ["Static route with this Source, Destination and Gateway IP already exists."]})  # fmt: skip
    # the route's gateway is in use on its source subnet: no dynamic range may cover it
    rng = sim.call("POST", "ipranges/", data={"type": "dynamic", "start_ip": f"{net}.200", "end_ip": f"{net}.254"})
    assert rng.status_code == 400 and "conflicts with an existing IP address" in rng.text, rng.text
