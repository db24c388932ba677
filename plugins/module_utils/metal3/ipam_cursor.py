"""Where a sequential pool's next free address is, without scanning its allocations.

A ConfigMap ``<pool>-ipam-cursor`` (owned by the pool) holds ``high`` - no index
at or above it was handed out through the cursor - and ``free`` - the indexes
below ``high`` released since, as intervals ``a-b``.  Invariant: every index
below ``high`` that is not in ``free`` is taken (or pre-allocated).  So the
first free address is the first of ``free`` or else ``high``: a claim probes
O(1) names however full the pool is.

It is a hint, never the truth: the IPAddress object is the lock, every
candidate is probed, and a stale entry costs one probe.  Allocations write it
with the resourceVersion they read and give up on Conflict (someone else moved
it: their value is as good); releases always land (re-read and retry) and bump
``epoch`` so that an allocation that raced with them does not advance ``high``
over the released index.
"""

from __future__ import annotations

import hashlib
import json

from ansible_collections.baremetal.capi.plugins.module_utils.errors import AlreadyExists, Conflict, NotFound, Requeue
from ansible_collections.baremetal.capi.plugins.module_utils.metal3 import ipaddr
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta
from ansible_collections.baremetal.capi.plugins.module_utils.store import mutate as rmw

CURSOR_SUFFIX = "-ipam-cursor"
_RETRIES = 50


def _parse_free(text: str) -> list[list[int]]:
    out = []
    for part in (text or "").split(","):
        if part:
            a, _sep, b = part.partition("-")
            out.append([int(a), int(b or a)])
    return out


def _format_free(free) -> str:
    return ",".join(f"{a}-{b}" if a != b else str(a) for a, b in free)


def _remove(free, idx: int) -> list[list[int]]:
    out = []
    for a, b in free:
        if a <= idx <= b:
            if a < idx:
                out.append([a, idx - 1])
            if idx < b:
                out.append([idx + 1, b])
        else:
            out.append([a, b])
    return out


def _add(free, idx: int) -> list[list[int]]:
    merged = []
    for a, b in sorted([*free, [idx, idx]]):
        if merged and a <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return merged


class Cursor:
    def __init__(self, store, pool: dict, ranges: ipaddr.Ranges):
        self.store = store
        self.pool = pool
        self.ranges = ranges
        self.name = meta.name(pool) + CURSOR_SUFFIX
        self.ns = meta.namespace(pool)
        self.fingerprint = hashlib.sha256(json.dumps(ranges.spec, sort_keys=True).encode()).hexdigest()[:16]

    def read(self) -> tuple[dict, dict | None]:
        """({"high", "free", "epoch"}, the ConfigMap as read or None)."""
        try:
            obj = self.store.get("ConfigMap", self.name, self.ns)
        except NotFound:
            return {"high": 0, "free": [], "epoch": 0}, None
        data = obj.get("data") or {}
        epoch = int(data.get("epoch", "0"))
        if data.get("spec") != self.fingerprint:  # the pool's ranges changed: start over
            return {"high": 0, "free": [], "epoch": epoch}, obj
        return {"high": int(data.get("high", "0")), "free": _parse_free(data.get("free", "")), "epoch": epoch}, obj

    def candidates(self, state: dict):
        """(index, ip, range) in the order a sequential pool hands them out, per the cursor."""
        for a, b in state["free"]:
            for idx in range(a, b + 1):
                found = self.ranges.at(idx)
                if found is not None:
                    yield idx, found[0], found[1]
        yield from self.ranges.iterate(state["high"])

    def _write(self, state: dict, seen: dict | None) -> None:
        obj = meta.deepcopy(seen) if seen is not None else meta.new("ConfigMap", self.name, self.ns)
        if seen is None:
            meta.set_owner(obj, self.pool)
        obj["data"] = {
            "high": str(state["high"]),
            "free": _format_free(state["free"]),
            "epoch": str(state["epoch"]),
            "spec": self.fingerprint,
        }
        if seen is None:
            self.store.create(obj)
        else:
            self.store.update(obj)

    def taken(self, state: dict, seen: dict | None, idx: int, skipped: list[int]) -> None:
        """``idx`` was allocated (and ``skipped`` found taken) from ``state``: move on, unless someone moved first."""
        free = state["free"]
        for i in [*skipped, idx]:
            free = _remove(free, i)
        high = max(state["high"], idx + 1) if idx >= state["high"] else state["high"]
        try:
            self._write({"high": high, "free": free, "epoch": state["epoch"]}, seen)
        except (Conflict, AlreadyExists, NotFound):
            pass

    def released(self, idx: int) -> None:
        def attempt():
            state, seen = self.read()
            if seen is None:
                return  # no cursor yet: the next allocation starts at 0
            state["epoch"] += 1
            if idx < state["high"]:
                state["free"] = _add(state["free"], idx)
            try:
                self._write(state, seen)
            except NotFound:
                return

        try:
            rmw.on_conflict(attempt, what="the IPPool's allocation cursor", attempts=_RETRIES)
        except Requeue:
            pass  # the cursor is a hint: an allocation that finds it stale scans the pool
