"""The handler table: each MAAS handler with its URI template and actions.

``describe()`` builds MAAS's ``describe/`` document from this table (the shape
of src/maasserver/api/doc.py ``describe_api``), with absolute ``uri``s taken
from the request's Host, since python-libmaas calls those URIs as given.
Dispatch follows piston3's OperationsHandlerMixin: ``op`` from the query or
the body, or a trailing ``op-<name>`` path segment; (method, op) picks the
action, else 400 "Unrecognised signature".
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Callable
from urllib.parse import unquote

from lab.maas_sim.forms import BadRequest, Form
from lab.maas_sim.model import Store

API_PATH = "/MAAS/api/2.0/"
CRUD = {"GET": "read", "POST": "create", "PUT": "update", "DELETE": "delete"}


@dataclass
class Ctx:
    """One request as a handler sees it."""

    store: Store
    user: dict | None
    method: str
    data: Form  # body fields for POST/PUT, query fields for GET/DELETE (MAAS's request.data)
    query: Form
    op: str | None = None


@dataclass
class Action:
    name: str
    method: str
    op: str | None
    doc: str
    func: Callable


@dataclass
class Handler:
    name: str
    path: str  # relative to /MAAS/api/2.0/, e.g. "machines/{system_id}/"
    doc: str
    anon: bool = False
    actions: dict = field(default_factory=dict)  # (method, op) -> Action

    def __post_init__(self):
        self.params = re.findall(r"{(\w+)}", self.path)
        pattern = re.sub(r"{(\w+)}", r"(?P<\1>[^/]+)", self.path)
        self.regex = re.compile(f"^{pattern}$")

    def action(self, method: str, op: str | None = None):
        def register(func):
            name = CRUD[method] if op is None else op
            self.actions[(method, op)] = Action(name, method, op, (func.__doc__ or "").strip(), func)
            return func

        return register

    def describe(self, base_url: str) -> dict:
        actions = [
            {"method": a.method, "name": a.name, "doc": a.doc, "op": a.op, "restful": a.op is None}
            for a in sorted(self.actions.values(), key=lambda a: a.name)
        ]
        path = API_PATH + self.path
        return {"actions": actions, "doc": self.doc, "name": self.name, "params": list(self.params),
                "path": path, "uri": base_url + path}  # fmt: skip


@dataclass
class JsonValue:
    """A handler's answer that is JSON even when it is ``null`` (None alone means a bodiless 200/204)."""

    value: object


HANDLERS: list[Handler] = []


def handler(name: str, path: str, doc: str, anon: bool = False) -> Handler:
    h = Handler(name, path, doc, anon)
    HANDLERS.append(h)
    return h


def route(rel_path: str) -> tuple[Handler, dict, str | None] | None:
    """Find the handler for a path under /MAAS/api/2.0/ (``op-<name>`` suffix allowed)."""
    op = None
    match = re.match(r"^(.*/)op-([^/]+)/?$", rel_path)
    if match:
        rel_path, op = match.group(1), match.group(2)
    for h in HANDLERS:
        m = h.regex.match(rel_path)
        if m:
            # Django resolves the decoded path: zones/rack%201/ names the zone "rack 1"
            return h, {k: unquote(v) for k, v in m.groupdict().items()}, op
    return None


def dispatch(h: Handler, ctx: Ctx, params: dict):
    action = h.actions.get((ctx.method, ctx.op))
    if action is None:
        raise BadRequest(f"Unrecognised signature: method={ctx.method} op={ctx.op}")
    return action.func(ctx, **params)


def describe(base_url: str) -> dict:
    resources = []
    for h in sorted(HANDLERS, key=lambda h: h.name):
        desc = h.describe(base_url)
        resources.append({"anon": desc if h.anon else None, "auth": None if h.anon else desc, "name": h.name})
    doc = {"doc": "MAAS API", "resources": resources}
    doc["handlers"] = [r["anon"] for r in resources if r["anon"]] + [r["auth"] for r in resources if r["auth"]]
    doc["hash"] = api_hash()
    return doc


def api_hash() -> str:
    """Stable hash of the API shape (MAAS sends it as X-MAAS-API-Hash)."""
    shape = [(h.name, h.path, sorted(f"{m} {o}" for m, o in h.actions)) for h in HANDLERS]
    return hashlib.sha1(json.dumps(sorted(shape)).encode()).hexdigest()
