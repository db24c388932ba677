# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What every part of the ironic driver shares: one host during one step (``Ctx``), ``NOW``, node names.

The driver (driver.py), Register, the state handlers, power and delete all work on a ``Ctx``; none of
them imports another one's file for it.
"""

from __future__ import annotations

import datetime

from ansible_collections.baremetal.capi.plugins.module_utils.hosts import base
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta, names

NOW = "now"  # a handler result: go on with the next action in this step


def node_name(namespace: str, name: str) -> str:
    return f"{namespace}~{name}"  # BMO ironic.go:1836


# Calls of openstacksdk's baremetal proxy that read; any other call may change the node.
_READS = frozenset({"get", "get_node", "get_node_inventory", "get_endpoint_data", "nodes", "ports", "get_port"})


class _Baremetal:
    """The connection's baremetal proxy, seen through one step: a call that is not a read makes the step's
    read of the node stale, so the next ``find_node`` reads it again."""

    def __init__(self, ctx: Ctx, bm):
        self._ctx, self._bm = ctx, bm

    def __getattr__(self, name):
        attr = getattr(self._bm, name)
        if name in _READS or not callable(attr):
            return attr

        def write(*args, **kwargs):
            self._ctx.node_read = None
            self._ctx.acted = True
            return attr(*args, **kwargs)

        return write


class _Conn:
    def __init__(self, ctx: Ctx, conn):
        self._conn = conn
        self.baremetal = _Baremetal(ctx, conn.baremetal)

    def __getattr__(self, name):
        return getattr(self._conn, name)


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Ctx:
    """One host during one step: the object, the status being built, the node."""

    def __init__(self, driver, store, host: dict, conn):
        self.driver, self.store = driver, store
        self.conn = _Conn(self, conn)
        # this step's read of the node while nothing was asked of Ironic since: the next action of the same
        # step uses it instead of reading the node again (a state change of the host alone asks Ironic nothing)
        self.node_read = None
        # something was asked of Ironic in this step (any call but a read): the host may look as its spec asks
        # while Ironic is still acting on that request, so the step is not the last one of a wait
        self.acted = False
        # the step ended in the host's steady state (power as wanted, or detached): Ironic has nothing under way
        # for it; a step that waited on Ironic (a node verifying, adopting, cleaning) is not settled
        self.settled = False
        self.host = host
        self.status = meta.deepcopy(host.get("status") or {})
        self.status.setdefault("provisioning", {})
        self.status.setdefault("errorMessage", "")
        self.node = None
        self.messages: list[str] = []
        self.changed = False

    # -- reading -------------------------------------------------------------
    @property
    def spec(self) -> dict:
        return self.host.get("spec") or {}

    @property
    def ns(self) -> str:
        return base.key(self.host)[0]

    @property
    def name(self) -> str:
        return base.key(self.host)[1]

    @property
    def state(self) -> str:
        return self.status["provisioning"].get("state") or ""

    def view(self) -> dict:
        """The host as it will be once the status is saved."""
        return {**self.host, "status": self.status}

    # -- writing status ------------------------------------------------------
    def set_state(self, state: str, why: str = "") -> str:
        old = self.state
        if state != old:
            self.status["provisioning"]["state"] = state
            self.say(f"{old or 'new'} -> {state}" + (f" ({why})" if why else ""))
        return NOW

    def say(self, msg: str) -> None:
        self.messages.append(msg)

    def set_error(self, error_type: str, message: str) -> float:
        """BMO setErrorMessage: type, message, count+1; the step backs off.

        The same error seen again by a later poll is not counted again, but one after the count went back to 0
        (BMO zeroes it when deprovisioning completes) is a new failure: a retry that failed the same way.
        """
        same = self.status.get("errorType") == error_type and self.status.get("errorMessage") == message
        if not same or not self.status.get("errorCount"):
            self.status["errorCount"] = int(self.status.get("errorCount") or 0) + 1
        self.status["errorType"] = error_type
        self.status["errorMessage"] = message
        self.status["operationalStatus"] = names.BMH_OPERATIONAL_ERROR
        self.say(f"{error_type}: {message}")
        return self.driver.backoff(self.status["errorCount"])

    def clear_error(self, only: tuple = ()) -> None:
        if self.status.get("errorType") and (not only or self.status["errorType"] in only):
            self.status.pop("errorType", None)  # an enum, omitted when empty
            self.status["errorMessage"] = ""  # BMO's CRD requires the field: empty, not absent
            self.status["errorCount"] = 0
            self.status["operationalStatus"] = names.BMH_OPERATIONAL_OK

    def save(self) -> None:
        if self.host is None:  # deleted
            return
        old = self.host.get("status") or {}
        if self.status == old:
            return
        self.status["lastUpdated"] = _now()
        self.host = self.store.update_status({**self.host, "status": self.status})
        self.status = meta.deepcopy(self.host.get("status") or {})
        self.status.setdefault("provisioning", {})
        self.changed = True

    def update_meta(self, mutate) -> None:
        """Write metadata (annotations, finalizers) through store.update, keeping the status being built."""
        obj = meta.deepcopy(self.host)
        if not mutate(obj):
            return
        status = self.status
        self.host = self.store.update(obj)
        self.status = status
        self.changed = True
        if meta.is_deleting(obj) and not meta.finalizers(obj):
            self.host = None  # the last finalizer went: the object is gone

    # -- Ironic ------------------------------------------------------------------
    def ironic_error(self, node=None) -> str:
        """last_error, or the newest ERROR event of the node's history (last_error is sometimes empty)."""
        node = node or self.node
        if node is None:
            return ""
        if node.last_error:
            return node.last_error
        try:
            resp = self.conn.baremetal.get(f"/nodes/{node.id}/history", microversion="1.78")
            events = resp.json().get("history") or []
        except Exception:  # an old Ironic without history: nothing more to say
            return ""
        events = sorted(events, key=lambda e: e.get("created_at") or "")
        errors = [e for e in events if (e.get("severity") or "").upper() == "ERROR"]
        return (errors[-1].get("event") or "") if errors else ""
