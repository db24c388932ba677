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

``status.indexes`` is upstream's allocation record, ``{claim name: address}``: written when a
claim gets its address and when it lets it go (createAddress / deleteAddress), rebuilt from the
IPAddress objects when the pool itself is reconciled (getIndexes).  A claim recorded there keeps
that address: its IPAddress is made again with the same address if it went missing.
"""

from __future__ import annotations

import random

from ansible_collections.baremetal.capi.plugins.module_utils.errors import (
    AlreadyExists,
    CapiError,
    Conflict,
    Invalid,
    NotFound,
    Requeue,
)
from ansible_collections.baremetal.capi.plugins.module_utils.metal3 import ipaddr
from ansible_collections.baremetal.capi.plugins.module_utils.metal3.ipam_capi import CapiClaimsMixin
from ansible_collections.baremetal.capi.plugins.module_utils.metal3.ipam_cursor import Cursor
from ansible_collections.baremetal.capi.plugins.module_utils.metal3.ipam_pools import (
    ATTEMPTS,
    PoolsMixin,
    _now,
    address_name,
)
from ansible_collections.baremetal.capi.plugins.module_utils.model import kinds, meta, names
from ansible_collections.baremetal.capi.plugins.module_utils.store import mutate as rmw

# Upstream's messages, verbatim ("bond" is upstream's spelling).
EXHAUSTED = "Exhausted IP Pools"
PREALLOCATED_OUT_OF_BOUNDS = "Pre-allocated IP out of bond"
REQUESTED_NOT_AVAILABLE = "Requested IP not available"
CONFLICTING = "PreAllocation and requested ip address are conflicting"
CREATE_FAILED = "Failed to create associated IPAddress object"
_RETRIES = 50


def is_capi(claim: dict) -> bool:
    """A Cluster API IPAddressClaim (ipam.cluster.x-k8s.io), as opposed to a Metal3 IPClaim."""
    return claim.get("kind") == "IPAddressClaim"


def claim_kind(claim: dict) -> tuple[str, str]:
    """(the claim's kind key, IPAM's finalizer on it)."""
    if is_capi(claim):
        return f"IPAddressClaim.{kinds.CAPI_IPAM_GROUP}", names.CAPI_IPADDRESSCLAIM_FINALIZER
    return "IPClaim", names.IPCLAIM_FINALIZER


def _claim_of(address: dict) -> str | None:
    spec = address.get("spec") or {}
    return (spec.get("claim") or spec.get("claimRef") or {}).get("name")


def capi_error_condition(status: dict, error: str | None) -> None:
    """The one condition ip-address-manager sets on an IPAddressClaim (capiUpdateAddress): type and
    reason ``ErrorMessage``, False/Info with an empty message once answered, True/Error with the
    message on failure.  They are v1beta1 conditions, kept where Cluster API v1beta2 keeps those."""
    from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions

    old = (((status.get("deprecated") or {}).get("v1beta1") or {}).get("conditions")) or []
    cond = {
        "type": "ErrorMessage",
        "status": "True" if error else "False",
        "severity": "Error" if error else "Info",
        "reason": "ErrorMessage",
        "message": error or "",
    }
    same = [c for c in old if c.get("type") == "ErrorMessage" and {k: c.get(k) for k in cond} == cond]
    cond["lastTransitionTime"] = same[0]["lastTransitionTime"] if same else conditions.now_rfc3339()
    status.setdefault("deprecated", {}).setdefault("v1beta1", {})["conditions"] = [cond]


class AllocationFailed(CapiError):
    """The claim could not get an address; its status.errorMessage says why."""


class IPAM(PoolsMixin, CapiClaimsMixin):
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
        capi = is_capi(claim)
        ref = (claim.get("status") or {}).get("addressRef" if capi else "address")
        if not ref or not ref.get("name"):
            return None
        try:
            addr = self.store.get(
                kinds.CAPI_IPADDRESS if capi else kinds.M3_IPADDRESS, ref["name"], meta.namespace(claim)
            )
        except NotFound:
            return None
        return addr if _claim_of(addr) == meta.name(claim) else None

    def allocate(self, claim: dict, pool: dict | None = None) -> tuple[dict, dict]:
        """Give ``claim`` an address (idempotent).  Raises AllocationFailed with upstream's message."""
        ns = meta.namespace(claim)
        if pool is None:
            pool = self.get_pool(claim["spec"]["pool"]["name"], ns, meta.ref(claim), "spec.pool.name")
        if meta.is_deleting(claim):
            raise Invalid("the claim is being deleted", obj=meta.ref(claim), field="metadata.deletionTimestamp")

        ckind, finalizer = claim_kind(claim)

        claim = rmw.mutate(self.store, ckind, meta.name(claim), ns, lambda cur: meta.add_finalizer(cur, finalizer))
        try:  # the pool as it is now: its allocation record and whether it is being deleted
            pool = self.store.get("IPPool", meta.name(pool), meta.namespace(pool))
        except NotFound:
            pass
        for _attempt in range(_RETRIES):
            existing = self._current_address(claim)
            if existing is not None:
                if (claim.get("status") or {}).get("errorMessage"):
                    claim = self._set_status(claim, existing, None)
                self._record(pool, meta.name(claim), existing["spec"]["address"])
                return claim, existing
            recorded = ((pool.get("status") or {}).get("indexes") or {}).get(meta.name(claim))
            try:
                if recorded:
                    # createAddress: a claim in the allocation record keeps the address recorded there
                    address, cursor_step = self._keep(pool, claim, recorded), None
                else:
                    address, cursor_step = self._take(pool, claim)
            except AllocationFailed as exc:
                self._set_status(claim, None, exc.message)
                raise
            try:
                claim = self._set_status(claim, address, None)
            except Conflict:
                # Someone else reconciled this claim meanwhile: keep theirs, give ours back.
                claim = self.store.get(ckind, meta.name(claim), ns)
                theirs = self._current_address(claim)
                if theirs is None:
                    continue
                if meta.name(theirs) != meta.name(address):
                    self._free_address(address, pool)
                return claim, theirs
            if cursor_step:
                cursor_step()
            self._record(pool, meta.name(claim), address["spec"]["address"])
            return claim, address
        raise Conflict("the claim kept changing while allocating", obj=meta.ref(claim))

    def _record(self, pool: dict, claim_name: str, ip: str | None) -> None:
        """Write ``status.indexes[claim_name] = ip`` (or drop the entry when ``ip`` is None)."""
        name, ns = meta.name(pool), meta.namespace(pool)

        def attempt():
            cur = self.store.get("IPPool", name, ns)
            status = dict(cur.get("status") or {})
            indexes = dict(status.get("indexes") or {})
            if ip is None:
                if claim_name not in indexes:
                    return
                indexes.pop(claim_name)
            else:
                if indexes.get(claim_name) == ip:
                    return
                indexes[claim_name] = ip
            status["indexes"] = indexes
            if not indexes:
                status.pop("indexes")
            status["lastUpdated"] = _now()
            cur["status"] = status
            self.store.update_status(cur)

        try:
            rmw.on_conflict(attempt, what=f"IPPool {ns}/{name}", attempts=ATTEMPTS)
        except NotFound:
            pass

    def _keep(self, pool: dict, claim: dict, ip: str) -> dict:
        """The IPAddress of the recorded ``ip``: the existing one, or made again (same name, same address)."""
        found = ipaddr.Ranges(pool["spec"]).locate(ip)
        r = found[1] if found else ipaddr.Range({})
        address = self._probe(pool, claim, ip, r)
        if address is None:
            raise Requeue(
                f"{ip} is recorded for this claim in IPPool {meta.name(pool)} status.indexes but its IPAddress "
                f"{address_name(pool, ip)} belongs to another claim; waiting for the record to be rebuilt",
                obj=meta.ref(claim),
            )
        return address

    def _set_status(self, claim: dict, address: dict | None, error: str | None) -> dict:
        new = meta.deepcopy(claim)
        status = dict(new.get("status") or {})
        if is_capi(claim):
            if address is not None:
                status["addressRef"] = {"name": meta.name(address)}
            capi_error_condition(status, error)
        else:
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
        # getIndexes: pre-allocated addresses count as in use unless the pool is being deleted
        reserved = set() if meta.is_deleting(pool) else set(pre.values())
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
            address = self._probe(pool, claim, exact, found[1])
            if address is None and name in pre:
                # upstream: the create meets AlreadyExists, a transient error: requeue, no errorMessage
                raise Requeue(
                    f"pre-allocated {exact} is held by IPAddress {address_name(pool, exact)} of another claim",
                    obj=meta.ref(claim),
                )
            if address is None:
                raise AllocationFailed(REQUESTED_NOT_AVAILABLE, obj=meta.ref(claim))
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
        if meta.is_deleting(pool) and pre:
            # the pre-allocated addresses below the cursor's high-water mark are free now: scan from 0
            for _idx, ip, r in ranges.iterate(0):
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
        for kind in (kinds.M3_IPADDRESS, kinds.CAPI_IPADDRESS):
            try:
                existing = self.store.get(kind, nm, ns)
            except NotFound:
                continue
            return existing if self._ours(existing, claim) else self._taken(pool, claim, existing)
        return self._try_create(pool, claim, ip, r)

    @staticmethod
    def _taken(pool: dict, claim: dict, existing: dict) -> None:
        """None when ``existing`` (an IPAddress of the wanted name) is another allocation of this pool.

        An object of that name that this pool does not count (another pool with the same namePrefix,
        a stray object) is a name clash: upstream's create fails with AlreadyExists and the claim is
        requeued, never given a different address (Requeue here).
        """
        spec = existing.get("spec") or {}
        owner = (spec.get("pool") or spec.get("poolRef") or {}).get("name")
        if owner != meta.name(pool):
            raise Requeue(
                f"{kinds.of(existing).kind} {meta.namespace(existing)}/{meta.name(existing)} already exists and is "
                f"not an address of IPPool {meta.name(pool)}: name clash, requeued",
                obj=meta.ref(claim),
            )
        return None

    @staticmethod
    def _ours(address: dict, claim: dict) -> bool:
        """An IPAddress made for this very claim (left by an interrupted run): adopt it."""
        if _claim_of(address) != meta.name(claim) or meta.is_deleting(address):
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
        kind, finalizer = kinds.M3_IPADDRESS, names.IPADDRESS_FINALIZER
        if is_capi(claim):
            # capiCreateAddress: poolRef/claimRef, gateway as a string, no DNS servers
            kind, finalizer = kinds.CAPI_IPADDRESS, names.CAPI_IPADDRESS_FINALIZER
            aspec = {
                "address": ip,
                "poolRef": {"apiGroup": kinds.M3IPAM_GROUP, "kind": "IPPool", "name": meta.name(pool)},
                "claimRef": {"name": meta.name(claim)},
                "prefix": prefix,
                "gateway": gateway or "",
            }
        obj = meta.new(
            kind,
            address_name(pool, ip),
            ns,
            spec=aspec,
            finalizers=[finalizer],
            labels=dict(meta.labels(claim)) or None,
        )
        # the claim's own owners first, then the pool and the claim (createAddress / capiCreateAddress)
        owners = list(claim["metadata"].get("ownerReferences") or []) if is_capi(claim) else []
        obj["metadata"]["ownerReferences"] = owners + [meta.owner_reference(pool), meta.owner_reference(claim)]
        try:
            return self.store.create(obj)
        except AlreadyExists:
            existing = self.store.get(kind, obj["metadata"]["name"], ns)
            return existing if self._ours(existing, claim) else self._taken(pool, claim, existing)

    def peek(self, pool: dict, claim: dict) -> dict | None:
        """The address a claim would get, without writing anything (check mode)."""
        spec = pool["spec"]
        ranges = ipaddr.Ranges(spec)
        pre = (spec.get("preAllocations") or {}).get(meta.name(claim))
        requested = meta.annotations(claim).get(names.IPADDRESS_ANNOTATION)
        ns = meta.namespace(pool)
        reserved = set()
        if not meta.is_deleting(pool):
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
        capi = "poolRef" in (address.get("spec") or {})
        kind = kinds.CAPI_IPADDRESS if capi else kinds.M3_IPADDRESS
        finalizer = names.CAPI_IPADDRESS_FINALIZER if capi else names.IPADDRESS_FINALIZER

        try:
            rmw.mutate(self.store, kind, nm, ns, lambda cur: meta.remove_finalizer(cur, finalizer))
            self.store.delete(kind, nm, ns)
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
            pool_name = (address["spec"].get("pool") or address["spec"].get("poolRef") or {}).get("name")
        else:
            pool_name = (claim["spec"].get("pool") or claim["spec"].get("poolRef") or {}).get("name")
        try:
            pool = self.store.get("IPPool", pool_name, ns) if pool_name else None
        except NotFound:
            pool = None
        if address is not None:
            self._free_address(address, pool)
            changed = True
        if pool is not None:
            self._record(pool, meta.name(claim), None)  # deleteAddress: the claim leaves the record

        ckind, finalizer = claim_kind(claim)
        ref_key = "addressRef" if is_capi(claim) else "address"

        def drop():
            cur = self.store.get(ckind, meta.name(claim), ns)
            if (cur.get("status") or {}).get(ref_key):
                cur["status"].pop(ref_key)
                cur = self.store.update_status(cur)
            if meta.remove_finalizer(cur, finalizer):
                self.store.update(cur)
                return True
            return False

        try:
            changed = rmw.on_conflict(drop, what=f"{ckind} {ns}/{meta.name(claim)}") or changed
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
