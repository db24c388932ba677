"""Static routes (src/maasserver/api/staticroutes.py, forms/staticroute.py, models/staticroute.py).

A route from a source subnet to a destination subnet through a gateway on the source subnet, with a metric; the
maas.maas collection's ``static_route`` module and python-libmaas's ``StaticRoutes`` read and write them.
Validation is StaticRouteForm's (fields, then the gateway on the source subnet), then ``StaticRoute.clean`` and
the model's unique (source, destination, gateway_ip), with MAAS's texts.
"""

from __future__ import annotations

import ipaddress as ipa

from lab.maas_sim import render
from lab.maas_sim.api import Ctx, handler
from lab.maas_sim.api_ipranges import subnet_by_spec
from lab.maas_sim.api_machines import _check_admin
from lab.maas_sim.forms import NotFound, ValidationError

routes = handler("StaticRoutesHandler", "static-routes/", "Manage static routes.")
route_h = handler("StaticRouteHandler", "static-routes/{id}/", "Manage static route.")

_INVALID = "Select a valid choice. That choice is not one of the available choices."


def _subnet_json(sub: dict) -> dict:
    return {**sub, "description": "", "disabled_boot_architectures": []}


def render_route(store, r: dict) -> dict:
    return {"id": r["id"], "source": _subnet_json(subnet_by_spec(store, r["source"])),
            "destination": _subnet_json(subnet_by_spec(store, r["destination"])), "gateway_ip": r["gateway_ip"],
            "metric": r["metric"], "resource_uri": f"{render.API}/static-routes/{r['id']}/"}  # fmt: skip


def _get(ctx: Ctx, id: str) -> dict:
    r = ctx.store.static_routes.get(int(id)) if id.isdigit() else None
    if r is None:
        raise NotFound("No StaticRoute matches the given query.")
    return r


def _form(ctx: Ctx, r: dict) -> dict:
    """StaticRouteForm on ``r`` (a new route's defaults, or the route updated: the fields given replace r's)."""
    d, errors, out = ctx.data, {}, dict(r)
    new = r.get("id") is None
    for f in ("source", "destination"):
        if f in d or new:
            value = d.get(f)
            sub = subnet_by_spec(ctx.store, value) if value not in (None, "") else None
            out[f] = sub["id"] if sub else None
            if value in (None, ""):
                errors[f] = ["This field is required."]
            elif sub is None:
                errors[f] = [_INVALID]
    if "gateway_ip" in d or new:
        value = (d.get("gateway_ip") or "").strip()
        out["gateway_ip"] = None
        if not value:
            errors["gateway_ip"] = ["This field is required."]
        else:
            try:
                out["gateway_ip"] = str(ipa.ip_address(value))
            except ValueError:
                errors["gateway_ip"] = ["Enter a valid IPv4 or IPv6 address."]
    if "metric" in d and d.get("metric") not in (None, ""):
        try:
            out["metric"] = int(d.get("metric"))
        except ValueError:
            errors["metric"] = ["Enter a whole number."]
        else:
            if out["metric"] < 0:
                errors["metric"] = ["Ensure this value is greater than or equal to 0."]
    source = subnet_by_spec(ctx.store, out["source"]) if out["source"] is not None else None
    destination = subnet_by_spec(ctx.store, out["destination"]) if out["destination"] is not None else None
    # StaticRouteForm.clean: the gateway must be on the source subnet (the field then counts as failed)
    if source is not None and out["gateway_ip"] and "gateway_ip" not in errors:
        if ipa.ip_address(out["gateway_ip"]) not in ipa.ip_network(source["cidr"]):
            errors["gateway_ip"] = [f"Enter an IP address in {source['cidr']}."]
            out["gateway_ip"] = None if new else r["gateway_ip"]
    # StaticRoute.clean, then validate_unique: non-field errors
    if source is not None and destination is not None and not any(k in errors for k in ("source", "destination")):
        if source["id"] == destination["id"]:
            errors.setdefault("__all__", []).append("source and destination cannot be the same subnet.")
        elif ipa.ip_network(source["cidr"]).version != ipa.ip_network(destination["cidr"]).version:
            errors.setdefault("__all__", []).append("source and destination must be the same IP version.")
        elif not errors and any(
            o["id"] != r.get("id")
            and (o["source"], o["destination"], o["gateway_ip"])
            == (out["source"], out["destination"], out["gateway_ip"])
            for o in ctx.store.static_routes.values()
        ):
            errors["__all__"] = ["Static route with this Source, Destination and Gateway IP already exists."]
    if errors:
        raise ValidationError(errors)
    return out


@routes.action("GET")
def list_routes(ctx: Ctx):
    """List all static routes."""
    return [render_route(ctx.store, r) for _, r in sorted(ctx.store.static_routes.items())]


@routes.action("POST")
def create_route(ctx: Ctx):
    """Create a static route (admin): source, destination (subnet id or specifier), gateway_ip, metric (0)."""
    _check_admin(ctx)
    r = _form(ctx, {"id": None, "source": None, "destination": None, "gateway_ip": None, "metric": 0})
    r["id"] = ctx.store.next_id("staticroute")
    ctx.store.static_routes[r["id"]] = r
    return render_route(ctx.store, r)


@route_h.action("GET")
def read_route(ctx: Ctx, id: str):
    """Read a static route."""
    return render_route(ctx.store, _get(ctx, id))


@route_h.action("PUT")
def update_route(ctx: Ctx, id: str):
    """Update a static route (admin): the fields given."""
    r = _get(ctx, id)
    _check_admin(ctx)
    ctx.store.static_routes[r["id"]] = r = _form(ctx, r)
    return render_route(ctx.store, r)


@route_h.action("DELETE")
def delete_route(ctx: Ctx, id: str):
    """Delete a static route (admin)."""
    r = _get(ctx, id)
    _check_admin(ctx)
    del ctx.store.static_routes[r["id"]]
    return None
