"""The other handlers: version, users, account, config, zones, resource pools and tags."""

from __future__ import annotations

from lab.maas_sim import names, render
from lab.maas_sim.api import Ctx, JsonValue, handler
from lab.maas_sim.api_machines import _check_admin, get_machine
from lab.maas_sim.forms import BadRequest, NotFound, ValidationError

version = handler("VersionHandler", "version/", "Information about this MAAS instance.", anon=True)
users = handler("UsersHandler", "users/", "Manage the user accounts of this MAAS.")
user_h = handler("UserHandler", "users/{username}/", "Manage a user account.")
account = handler("AccountHandler", "account/", "Manage the current logged-in user.")
maas = handler("MaasHandler", "maas/", "Manage the MAAS server.")
zones = handler("ZonesHandler", "zones/", "Manage physical zones.")
zone_h = handler("ZoneHandler", "zones/{name}/", "Manage a physical zone.")
pools = handler("ResourcePoolsHandler", "resourcepools/", "Manage resource pools.")
pool_h = handler("ResourcePoolHandler", "resourcepool/{id}/", "Manage a resource pool.")
tags = handler("TagsHandler", "tags/", "Manage all tags known to MAAS.")
tag_h = handler("TagHandler", "tags/{name}/", "Tags are properties that can be associated with a Node.")

CAPABILITIES = ["networks-management", "static-ipaddresses", "ipv6-deployment-ubuntu", "devices-management",
                "storage-deployment-ubuntu", "network-deployment-ubuntu", "bridging-interface-ubuntu",
                "bridging-automatic-ubuntu", "authenticate-api"]  # fmt: skip
NAME_ERROR = ["Enter a valid name."]


@version.action("GET")
def read_version(ctx: Ctx):
    """Version and capabilities of this MAAS instance."""
    return {"capabilities": CAPABILITIES, "version": "3.5.0 (simulated)", "subversion": "maas-sim"}


@users.action("GET")
def list_users(ctx: Ctx):
    """List users."""
    return [render.user(u) for u in ctx.store.users.values()]


@users.action("GET", "whoami")
def whoami(ctx: Ctx):
    """The logged-in user."""
    return render.user(ctx.user)


@user_h.action("GET")
def read_user(ctx: Ctx, username: str):
    """A user."""
    u = ctx.store.users.get(username)
    if u is None:
        raise NotFound("No User matches the given query.")
    return render.user(u)


@account.action("POST", "create_authorisation_token")
def create_token(ctx: Ctx):
    """Create an API key for the logged-in user."""
    consumer, token, secret = ctx.store.new_key(ctx.user["username"]).split(":")
    return {"token_key": token, "token_secret": secret, "consumer_key": consumer, "name": ctx.data.get("name", "")}


@maas.action("GET", "get_config")
def get_config(ctx: Ctx):
    """A configuration value (name=...)."""
    name = ctx.query.get("name")
    if name is None:
        raise BadRequest("No provided name!")
    if name not in ctx.store.config:
        raise ValidationError({"name": [f"{name} is not a valid config name."]})
    return JsonValue(ctx.store.config[name])


@maas.action("POST", "set_config")
def set_config(ctx: Ctx):
    """Set a configuration value (name=..., value=...)."""
    _check_admin(ctx)
    name = ctx.data.get("name")
    if name is None:
        raise BadRequest("No provided name!")
    if name not in ctx.store.config:
        raise ValidationError({"name": [f"{name} is not a valid config name."]})
    ctx.store.config[name] = names.config_value(name, ctx.store.config[name], ctx.data)
    return None


# -- zones and pools -----------------------------------------------------------


@zones.action("GET")
def list_zones(ctx: Ctx):
    """List zones."""
    return [render.zone(z) for z in sorted(ctx.store.zones.values(), key=lambda z: z["id"])]


@zones.action("POST")
def create_zone(ctx: Ctx):
    """Create a zone (name, description)."""
    _check_admin(ctx)
    name = ctx.data.get("name", "")
    names.model_name(name)
    if name in ctx.store.zones:
        raise ValidationError({"name": ["Zone with this Name already exists."]})
    z = {"id": ctx.store.next_id("zone"), "name": name, "description": ctx.data.get("description", "")}
    ctx.store.zones[name] = z
    return render.zone(z)


def _zone(ctx: Ctx, name: str) -> dict:
    if name not in ctx.store.zones:
        raise NotFound("No Zone matches the given query.")
    return ctx.store.zones[name]


@zone_h.action("GET")
def read_zone(ctx: Ctx, name: str):
    """A zone."""
    return render.zone(_zone(ctx, name))


@zone_h.action("PUT")
def update_zone(ctx: Ctx, name: str):
    """Update a zone (name, description)."""
    _check_admin(ctx)
    z = _zone(ctx, name)
    if "description" in ctx.data:
        z["description"] = ctx.data.get("description")
    new = ctx.data.get("name")
    if new is not None:
        names.model_name(new)
        if new != name and new in ctx.store.zones:
            raise ValidationError({"name": ["Zone with this Name already exists."]})
    if new and new != name:
        ctx.store.zones[new] = ctx.store.zones.pop(name)
        z["name"] = new
        for m in ctx.store.machines.values():
            m.zone = new if m.zone == name else m.zone
    return render.zone(z)


@zone_h.action("DELETE")
def delete_zone(ctx: Ctx, name: str):
    """Delete a zone; its machines move to the default zone."""
    _check_admin(ctx)
    _zone(ctx, name)
    if name == "default":
        raise BadRequest("This zone is the default zone, it cannot be deleted.")
    del ctx.store.zones[name]
    for m in ctx.store.machines.values():
        m.zone = "default" if m.zone == name else m.zone
    return None


@pools.action("GET")
def list_pools(ctx: Ctx):
    """List resource pools."""
    return [render.pool(p) for p in sorted(ctx.store.pools.values(), key=lambda p: p["id"])]


@pools.action("POST")
def create_pool(ctx: Ctx):
    """Create a resource pool (name, description)."""
    _check_admin(ctx)
    name = ctx.data.get("name", "")
    names.model_name(name)
    if ctx.store.pool_by_name(name):
        raise ValidationError({"name": ["Resource pool with this Name already exists."]})
    p = ctx.store.pool_by_name(name, create=True)
    p["description"] = ctx.data.get("description", "")
    return render.pool(p)


def _pool(ctx: Ctx, id: str) -> dict:
    p = ctx.store.pools.get(int(id)) if id.isdigit() else None
    if p is None:
        raise NotFound("No ResourcePool matches the given query.")
    return p


@pool_h.action("GET")
def read_pool(ctx: Ctx, id: str):
    """A resource pool."""
    return render.pool(_pool(ctx, id))


@pool_h.action("PUT")
def update_pool(ctx: Ctx, id: str):
    """Update a resource pool (name, description)."""
    _check_admin(ctx)
    p = _pool(ctx, id)
    old = p["name"]
    if "name" in ctx.data:
        names.model_name(ctx.data.get("name"))
        other = ctx.store.pool_by_name(ctx.data.get("name"))
        if other is not None and other is not p:
            raise ValidationError({"name": ["Resource pool with this Name already exists."]})
    for key in ("name", "description"):
        if key in ctx.data:
            p[key] = ctx.data.get(key)
    for m in ctx.store.machines.values():
        m.pool = p["name"] if m.pool == old else m.pool
    return render.pool(p)


@pool_h.action("DELETE")
def delete_pool(ctx: Ctx, id: str):
    """Delete a resource pool (not the default one)."""
    _check_admin(ctx)
    p = _pool(ctx, id)
    if p["id"] == 0:
        raise BadRequest("This is the default pool, it cannot be deleted.")
    del ctx.store.pools[p["id"]]
    for m in ctx.store.machines.values():
        m.pool = "default" if m.pool == p["name"] else m.pool
    return None


# -- tags --------------------------------------------------------------------------


@tags.action("GET")
def list_tags(ctx: Ctx):
    """List tags."""
    return [render.tag(t) for t in sorted(ctx.store.tags.values(), key=lambda t: t["name"])]


@tags.action("POST")
def create_tag(ctx: Ctx):
    """Create a tag (name, comment, definition, kernel_opts)."""
    _check_admin(ctx)
    name = ctx.data.get("name", "")
    names.tag_name(name)
    if name in ctx.store.tags:
        raise ValidationError({"name": ["Tag with this Name already exists."]})
    t = {"name": name, **{k: ctx.data.get(k, "") for k in ("comment", "definition", "kernel_opts")}}
    ctx.store.tags[name] = t
    return render.tag(t)


def _tag(ctx: Ctx, name: str) -> dict:
    if name not in ctx.store.tags:
        raise NotFound("No Tag matches the given query.")
    return ctx.store.tags[name]


@tag_h.action("GET")
def read_tag(ctx: Ctx, name: str):
    """A tag."""
    return render.tag(_tag(ctx, name))


@tag_h.action("PUT")
def update_tag(ctx: Ctx, name: str):
    """Update a tag (name, comment, definition, kernel_opts)."""
    _check_admin(ctx)
    t = _tag(ctx, name)
    if "name" in ctx.data:
        names.tag_name(ctx.data.get("name"))
        if ctx.data.get("name") != name and ctx.data.get("name") in ctx.store.tags:
            raise ValidationError({"name": ["Tag with this Name already exists."]})
    for key in ("comment", "definition", "kernel_opts"):
        if key in ctx.data:
            t[key] = ctx.data.get(key)
    new = ctx.data.get("name")
    if new and new != name:
        ctx.store.tags[new] = ctx.store.tags.pop(name)
        t["name"] = new
        for m in ctx.store.machines.values():
            m.tags = [new if x == name else x for x in m.tags]
    return render.tag(t)


@tag_h.action("DELETE")
def delete_tag(ctx: Ctx, name: str):
    """Delete a tag."""
    _check_admin(ctx)
    _tag(ctx, name)
    del ctx.store.tags[name]
    for m in ctx.store.machines.values():
        m.tags = [x for x in m.tags if x != name]
    return None


@tag_h.action("POST", "update_nodes")
def update_nodes(ctx: Ctx, name: str):
    """Add (add=) or remove (remove=) nodes by system_id; returns the counts."""
    _check_admin(ctx)
    _tag(ctx, name)
    added = removed = 0
    for system_id in ctx.data.getlist("add"):
        m = get_machine(ctx.store, system_id)
        if name not in m.tags:
            m.tags.append(name)
            added += 1
    for system_id in ctx.data.getlist("remove"):
        m = get_machine(ctx.store, system_id)
        if name in m.tags:
            m.tags.remove(name)
            removed += 1
    return {"added": added, "removed": removed}


@tag_h.action("GET", "machines")
def tag_machines(ctx: Ctx, name: str):
    """Machines with this tag."""
    _tag(ctx, name)
    return [render.machine(ctx.store, m) for m in ctx.store.machines.values() if name in m.tags]


@tag_h.action("GET", "nodes")
def tag_nodes(ctx: Ctx, name: str):
    """Nodes with this tag (here: machines)."""
    return tag_machines(ctx, name)
