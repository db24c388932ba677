"""The IP address manager: ipam.metal3.io IPPool, IPClaim and IPAddress.

Behaviour of metal3-io/ip-address-manager (ipam/ippool_manager.go, api/v1alpha1/utils.go
and the webhooks), with two deliberate differences:

* A claim that failed (``Exhausted IP Pools`` and friends) is tried again on the
  next call and succeeds once an address is free (upstream skips it forever,
  IPAM issue #1537).
* No process-wide lock and no scan of every allocation per claim.  The IPAddress
  object's name (``<namePrefix>-<ip with dashes>``) is the lock: the address is
  taken by whoever creates that object first (AlreadyExists for everyone else),
  so two processes can never hand out one address.  Sequential pools keep a
  free-address cursor (ipam_cursor.py: a high-water mark and the released
  indexes below it) so that a claim probes O(1) names however full the pool is.
  ``status.indexes`` keeps upstream's shape and is rebuilt when the pool itself
  is reconciled (``reconcile_pool``), not rewritten per claim.
"""

from __future__ import annotations

import random

from ansible_collections.baremetal.capi.plugins.module_utils.errors import (
    AlreadyExists,
    CapiError,
    Conflict,
    Invalid,
    NotFound,
)
from ansible_collections.baremetal.capi.plugins.module_utils.metal3 import ipaddr
from ansible_collections.baremetal.capi.plugins.module_utils.metal3.ipam_cursor import Cursor
from ansible_collections.baremetal.capi.plugins.module_utils.metal3.ipam_pools import (
    PoolsMixin,
    address_name,
    retry_conflicts,
)
from ansible_collections.baremetal.capi.plugins.module_utils.model import kinds, meta, names

# Upstream's messages, verbatim ("bond" is upstream's spelling).
EXHAUSTED = "Exhausted IP Pools"
PREALLOCATED_OUT_OF_BOUNDS = "Pre-allocated IP out of bond"
REQUESTED_NOT_AVAILABLE = "Requested IP not available"
CONFLICTING = "PreAllocation and requested ip address are conflicting"
CREATE_FAILED = "Failed to create associated IPAddress object"
_RETRIES = 50


class AllocationFailed(CapiError):
    """The claim could not get an address; its status.errorMessage says why."""


class IPAM(PoolsMixin):
    """Pools, claims and addresses on a store (the IPAM controller's reconcile steps)."""

    def __init__(self, store, rng: random.Random | None = None):
        self.store = store
        self.rng = rng or random.SystemRandom()

    # claims ---------------------------------------------------------------------

    def apply_claim(self, obj: dict, check: bool = False) -> tuple[bool, dict, dict | None]:
        """Create the IPClaim if needed and allocate its address.  Returns (changed, claim, address)."""
        obj = meta.deepcopy(obj)
        ns = meta.namespace(obj) or "default"
        obj["metadata"]["namespace"] = ns
        obj.setdefault("spec", {}).setdefault("pool", {}).setdefault("namespace", ns)
        try:
            old = self.store.get("IPClaim", meta.name(obj), ns)
        except NotFound:
            old = None
        ipaddr.validate_claim(obj, old)
        pool = self.get_pool(obj["spec"]["pool"]["name"], ns, meta.ref(obj), "spec.pool.name")
        if check:
            if old is not None and self._current_address(old):
                return False, old, self._current_address(old)
            return True, obj, self.peek(pool, obj)
        changed = False
        if old is None:
            try:
                old = self.store.create(obj)
                changed = True
            except AlreadyExists:
                old = self.store.get("IPClaim", meta.name(obj), ns)
        had = self._current_address(old)
        claim, address = self.allocate(old, pool)
        return changed or had is None, claim, address

    def _current_address(self, claim: dict) -> dict | None:
        ref = (claim.get("status") or {}).get("address")
        if not ref or not ref.get("name"):
            return None
        try:
            addr = self.store.get(kinds.M3_IPADDRESS, ref["name"], meta.namespace(claim))
        except NotFound:
            return None
        return addr if addr["spec"].get("claim", {}).get("name") == meta.name(claim) else None

    def allocate(self, claim: dict, pool: dict | None = None) -> tuple[dict, dict]:
        """Give ``claim`` an address (idempotent).  Raises AllocationFailed with upstream's message."""
        ns = meta.namespace(claim)
        if pool is None:
            pool = self.get_pool(claim["spec"]["pool"]["name"], ns, meta.ref(claim), "spec.pool.name")
        if meta.is_deleting(claim):
            raise Invalid("the claim is being deleted", obj=meta.ref(claim), field="metadata.deletionTimestamp")

        def add_finalizer():
            cur = self.store.get("IPClaim", meta.name(claim), ns)
            if meta.add_finalizer(cur, names.IPCLAIM_FINALIZER):
                cur = self.store.update(cur)
            return cur

        claim = retry_conflicts(add_finalizer)
        for _attempt in range(_RETRIES):
            existing = self._current_address(claim)
            if existing is not None:
                if (claim.get("status") or {}).get("errorMessage"):
                    claim = self._set_status(claim, existing, None)
                return claim, existing
            try:
                address, cursor_step = self._take(pool, claim)
            except AllocationFailed as exc:
                self._set_status(claim, None, exc.message)
                raise
            try:
                claim = self._set_status(claim, address, None)
            except Conflict:
                # Someone else reconciled this claim meanwhile: keep theirs, give ours back.
                claim = self.store.get("IPClaim", meta.name(claim), ns)
                theirs = self._current_address(claim)
                if theirs is None:
                    continue
                if meta.name(theirs) != meta.name(address):
                    self._free_address(address, pool)
                return claim, theirs
            if cursor_step:
                cursor_step()
            return claim, address
        raise Conflict("the claim kept changing while allocating", obj=meta.ref(claim))

    def _set_status(self, claim: dict, address: dict | None, error: str | None) -> dict:
        new = meta.deepcopy(claim)
        status = dict(new.get("status") or {})
        if address is not None:
            status["address"] = {"name": meta.name(address), "namespace": meta.namespace(address)}
        if error is None:
            status.pop("errorMessage", None)
        else:
            status["errorMessage"] = error
        if status == (claim.get("status") or {}):
            return claim
        new["status"] = status
        try:
            return self.store.update_status(new)
        except Conflict:
            if address is not None:
                raise
            return claim

    # picking an address ----------------------------------------------------------

    def _take(self, pool: dict, claim: dict):
        """Create the IPAddress for the claim's address; return it and the cursor step to run after."""
        spec = pool["spec"]
        ranges = ipaddr.Ranges(spec)
        pre = {k: ipaddr.normalize(v) for k, v in (spec.get("preAllocations") or {}).items()}
        reserved = set(pre.values())
        name = meta.name(claim)
        requested = meta.annotations(claim).get(names.IPADDRESS_ANNOTATION, "")
        if requested and ipaddr.normalize(requested) is None:
            raise AllocationFailed(
                f'Invalid ipAddress annotation "{requested}": not a valid IP address',
                obj=meta.ref(claim),
                field=f"metadata.annotations[{names.IPADDRESS_ANNOTATION}]",
            )
        if requested and name in pre and ipaddr.normalize(requested) != pre[name]:
            raise AllocationFailed(CONFLICTING, obj=meta.ref(claim))
        exact = pre.get(name) or (ipaddr.normalize(requested) if requested else None)
        if exact is not None:
            found = ranges.locate(exact)
            if found is None:
                raise AllocationFailed(PREALLOCATED_OUT_OF_BOUNDS if name in pre else EXHAUSTED, obj=meta.ref(claim))
            if name not in pre and exact in reserved:
                # upstream counts every pre-allocated address as in use
                raise AllocationFailed(REQUESTED_NOT_AVAILABLE, obj=meta.ref(claim))
            address = self._try_create(pool, claim, exact, found[1])
            if address is None:
                raise AllocationFailed(REQUESTED_NOT_AVAILABLE if requested else CREATE_FAILED, obj=meta.ref(claim))
            return address, None
        if spec.get("allocationStrategy") == "random":
            for r in ranges.ranges:
                if r.size is None or r.size <= 0:
                    continue
                start = self.rng.randrange(r.size)
                for i in range(r.size):
                    ip = r.at((start + i) % r.size)
                    if ip in reserved:
                        continue
                    address = self._probe(pool, claim, ip, r)
                    if address is not None:
                        return address, None
            raise AllocationFailed(EXHAUSTED, obj=meta.ref(claim))
        cursor = Cursor(self.store, pool, ranges)
        state, seen = cursor.read()
        skipped = []  # stale entries of the free list, found taken
        for idx, ip, r in cursor.candidates(state):
            if ip not in reserved:
                address = self._probe(pool, claim, ip, r)
                if address is not None:
                    return address, (lambda i=idx, sk=skipped: cursor.taken(state, seen, i, sk))
            if idx < state["high"]:
                skipped.append(idx)
        # The cursor is a hint: before saying "exhausted", look at every address once.
        if state["high"] or state["free"]:
            for _idx, ip, r in ranges.iterate(0):
                if ip not in reserved:
                    address = self._probe(pool, claim, ip, r)
                    if address is not None:
                        return address, None
        raise AllocationFailed(EXHAUSTED, obj=meta.ref(claim))

    def _probe(self, pool, claim, ip, r):
        """Cheap read first: only a free-looking name costs a write."""
        nm = address_name(pool, ip)
        ns = meta.namespace(pool)
        try:
            existing = self.store.get(kinds.M3_IPADDRESS, nm, ns)
        except NotFound:
            existing = None
        if existing is not None:
            return existing if self._ours(existing, claim) else None
        try:
            self.store.get(kinds.CAPI_IPADDRESS, nm, ns)
            return None
        except NotFound:
            pass
        return self._try_create(pool, claim, ip, r)

    @staticmethod
    def _ours(address: dict, claim: dict) -> bool:
        """An IPAddress made for this very claim (left by an interrupted run): adopt it."""
        if address["spec"].get("claim", {}).get("name") != meta.name(claim) or meta.is_deleting(address):
            return False
        uid = claim["metadata"].get("uid")
        return any(r.get("uid") == uid for r in address["metadata"].get("ownerReferences") or [])

    def _try_create(self, pool, claim, ip, r) -> dict | None:
        ns = meta.namespace(pool)
        spec = pool["spec"]
        prefix = r.entry.get("prefix") or spec.get("prefix") or 0
        gateway = r.entry.get("gateway") or spec.get("gateway")
        dns = r.entry.get("dnsServers") or spec.get("dnsServers") or []
        aspec = {
            "address": ip,
            "pool": {"name": meta.name(pool), "namespace": ns},
            "claim": {"name": meta.name(claim), "namespace": ns},
            "prefix": prefix,
        }
        if gateway:
            aspec["gateway"] = gateway
        if dns:
            aspec["dnsServers"] = list(dns)
        obj = meta.new(
            kinds.M3_IPADDRESS,
            address_name(pool, ip),
            ns,
            spec=aspec,
            finalizers=[names.IPADDRESS_FINALIZER],
            labels=dict(meta.labels(claim)) or None,
        )
        obj["metadata"]["ownerReferences"] = [meta.owner_reference(pool), meta.owner_reference(claim)]
        try:
            return self.store.create(obj)
        except AlreadyExists:
            existing = self.store.get(kinds.M3_IPADDRESS, obj["metadata"]["name"], ns)
            return existing if self._ours(existing, claim) else None

    def peek(self, pool: dict, claim: dict) -> dict | None:
        """The address a claim would get, without writing anything (check mode)."""
        spec = pool["spec"]
        ranges = ipaddr.Ranges(spec)
        pre = (spec.get("preAllocations") or {}).get(meta.name(claim))
        requested = meta.annotations(claim).get(names.IPADDRESS_ANNOTATION)
        ns = meta.namespace(pool)
        reserved = {ipaddr.normalize(v) for v in (spec.get("preAllocations") or {}).values()}
        candidates = [ipaddr.normalize(pre or requested)] if (pre or requested) else None
        if spec.get("allocationStrategy") == "random":
            order = ranges.iterate(0)
        else:
            cursor = Cursor(self.store, pool, ranges)
            order = cursor.candidates(cursor.read()[0])
        for _idx, ip, r in [(0, c, (ranges.locate(c) or (0, None))[1]) for c in candidates] if candidates else order:
            if r is None or (candidates is None and ip in reserved):
                continue
            try:
                self.store.get(kinds.M3_IPADDRESS, address_name(pool, ip), ns)
                continue
            except NotFound:
                pass
            return {
                "metadata": {"name": address_name(pool, ip), "namespace": ns},
                "spec": {
                    "address": ip,
                    "prefix": r.entry.get("prefix") or spec.get("prefix") or 0,
                    "gateway": r.entry.get("gateway") or spec.get("gateway"),
                    "dnsServers": r.entry.get("dnsServers") or spec.get("dnsServers") or [],
                },
            }
        return None

    # release ---------------------------------------------------------------------

    def _free_address(self, address: dict, pool: dict | None) -> None:
        ns, nm = meta.namespace(address), meta.name(address)

        def drop():
            cur = self.store.get(kinds.M3_IPADDRESS, nm, ns)
            if meta.remove_finalizer(cur, names.IPADDRESS_FINALIZER):
                self.store.update(cur)

        try:
            retry_conflicts(drop)
            self.store.delete(kinds.M3_IPADDRESS, nm, ns)
        except NotFound:
            pass
        if pool is not None and pool["spec"].get("allocationStrategy") != "random":
            ranges = ipaddr.Ranges(pool["spec"])
            found = ranges.locate(address["spec"]["address"])
            if found is not None:
                Cursor(self.store, pool, ranges).released(found[0])

    def release(self, claim: dict) -> bool:
        """Free the claim's address and drop IPAM's finalizer (upstream deleteAddress).  True if changed."""
        ns = meta.namespace(claim)
        changed = False
        address = self._current_address(claim)
        if address is not None:
            try:
                pool = self.store.get("IPPool", address["spec"]["pool"]["name"], ns)
            except NotFound:
                pool = None
            self._free_address(address, pool)
            changed = True

        def drop():
            cur = self.store.get("IPClaim", meta.name(claim), ns)
            if (cur.get("status") or {}).get("address"):
                cur["status"].pop("address")
                cur = self.store.update_status(cur)
            if meta.remove_finalizer(cur, names.IPCLAIM_FINALIZER):
                self.store.update(cur)
                return True
            return False

        try:
            changed = retry_conflicts(drop) or changed
        except NotFound:
            pass
        return changed

    def delete_claim(self, name: str, namespace: str, check: bool = False) -> bool:
        """Delete an IPClaim and release its address once IPAM's finalizer is the only one left."""
        try:
            claim = self.store.get("IPClaim", name, namespace)
        except NotFound:
            return False
        if check:
            return True
        claim = self.store.delete("IPClaim", name, namespace)
        if claim is None:
            return True
        others = [f for f in meta.finalizers(claim) if f != names.IPCLAIM_FINALIZER]
        if others:
            # Upstream: "IPClaim is still in use (has other finalizers)"; the owner releases it.
            return True
        self.release(claim)
        return True
