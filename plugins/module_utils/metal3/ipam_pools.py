"""The pool side of the IP address manager: IPPool create/update/delete and status.

Mirrors ip-address-manager's IPPool webhook (validation in ipaddr.py) and the
pool reconcile (finalizer, cluster label and owner, ``status.indexes`` rebuilt
from every IPAddress naming the pool).
"""

from __future__ import annotations

from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid, NotFound
from ansible_collections.baremetal.capi.plugins.module_utils.metal3 import ipaddr
from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions, kinds, meta, names
from ansible_collections.baremetal.capi.plugins.module_utils.store import mutate as rmw

PROVIDER_LABEL = "cluster.x-k8s.io/provider"
PROVIDER_VALUE = "ipam-metal3"
# Many claims write one pool's status.indexes at once: more attempts than store/mutate.py's default.
ATTEMPTS = 50


def _now() -> str:
    return conditions.now_rfc3339()


def address_name(pool: dict, ip: str) -> str:
    return ipaddr.address_name(pool["spec"].get("namePrefix", ""), ip)


# -- the manager --------------------------------------------------------------------


class PoolsMixin:
    """Needs ``self.store`` (IPAM)."""

    def get_pool(self, name: str, namespace: str, where: str | None = None, field: str | None = None) -> dict:
        try:
            return self.store.get("IPPool", name, namespace)
        except NotFound:
            raise Invalid(f'pool "{name}" not found', obj=where or f"IPPool {namespace}/{name}", field=field) from None

    def apply_pool(self, obj: dict, check: bool = False) -> tuple[bool, dict]:
        """Create or update an IPPool (webhook validation first), then reconcile it."""
        obj = meta.deepcopy(obj)
        obj.setdefault("spec", {}).setdefault("allocationStrategy", "sequential")  # webhook default
        ns, name = meta.namespace(obj) or "default", meta.name(obj)
        obj["metadata"]["namespace"] = ns
        try:
            old = self.store.get("IPPool", name, ns)
        except NotFound:
            old = None
        ipaddr.validate_pool(obj, old, in_use=self.allocations(old).keys() if old else ())
        if old is None:
            if check:
                return True, obj
            created = self.store.create(obj)
            return True, self._serve(self.reconcile_pool(created))
        merged = meta.deepcopy(old)
        merged["spec"] = obj["spec"]
        for key in ("labels", "annotations"):
            if obj["metadata"].get(key):
                merged["metadata"].setdefault(key, {}).update(obj["metadata"][key])
        changed = merged["spec"] != old["spec"] or merged["metadata"] != old["metadata"]
        if check:
            return changed or bool(self.claims_to_serve(old)), merged
        if changed:
            merged = self.store.update(merged)
        after = self._serve(self.reconcile_pool(merged))
        # the reconcile's own writes (status.indexes rebuilt) and the claims it answered or released count too
        return changed or after["metadata"].get("resourceVersion") != old["metadata"].get("resourceVersion"), after

    def _serve(self, pool: dict) -> dict:
        """The pool reconcile's UpdateAddresses: the deleting claims naming it let their addresses go, and the
        Cluster API claims naming it are answered.  The pool as it is afterwards (its record moved on)."""
        if not self.update_addresses(pool):
            return pool
        return self.store.get("IPPool", meta.name(pool), meta.namespace(pool))

    def claims_to_serve(self, pool: dict) -> list[dict]:
        """What ``update_addresses`` would write for: releasable deleting claims, unanswered Cluster API claims."""
        out = self.releasable_claims(pool)
        for claim in self.capi_claims(pool):
            answered = ((claim.get("status") or {}).get("addressRef") or {}).get("name")
            if meta.is_deleting(claim):
                if meta.finalizers(claim) == [names.CAPI_IPADDRESSCLAIM_FINALIZER]:
                    out.append(claim)
            elif not answered:
                out.append(claim)
        return out

    def releasable_claims(self, pool: dict) -> list[dict]:
        """The deleting IPClaims naming the pool that IPAM's finalizer alone still holds (m3UpdateAddresses
        deletes their IPAddress; a claim with another finalizer is "still in use")."""
        out = []
        for claim in self.store.list("IPClaim", meta.namespace(pool)):
            if ((claim.get("spec") or {}).get("pool") or {}).get("name") != meta.name(pool):
                continue
            if meta.is_deleting(claim) and meta.finalizers(claim) == [names.IPCLAIM_FINALIZER]:
                out.append(claim)
        return out

    def update_addresses(self, pool: dict) -> bool:
        """UpdateAddresses for the claims a pool reconcile finds: deleting Metal3 IPClaims released, Cluster API
        IPAddressClaims answered or released (ipam_capi).  True if any changed."""
        changed = False
        for claim in self.releasable_claims(pool):
            changed |= self.release(claim)
        served = self.serve_capi_claims(pool)
        return changed or any("error" not in answer for answer in served.values())

    def reconcile_pool(self, pool: dict) -> dict:
        """Finalizer, cluster label and owner, and status.indexes rebuilt from the IPAddresses."""

        def attempt():
            cur = self.store.get("IPPool", meta.name(pool), meta.namespace(pool))
            new = meta.deepcopy(cur)
            if not meta.is_deleting(new):
                meta.add_finalizer(new, names.IPPOOL_FINALIZER)
            cluster = new["spec"].get("clusterName")
            if cluster:
                labels = new["metadata"].setdefault("labels", {})
                labels[names.CLUSTER_NAME_LABEL] = cluster
                labels[PROVIDER_LABEL] = PROVIDER_VALUE
                try:
                    meta.set_owner(new, self.store.get("Cluster", cluster, meta.namespace(new)))
                except NotFound:
                    pass
            if new["metadata"] != cur["metadata"]:
                new = self.store.update(new)
            indexes = {c: a for a, c in self.allocations(new).items()}
            status = dict(new.get("status") or {})
            if status.get("indexes", {}) != indexes or "lastUpdated" not in status:
                status["indexes"] = indexes
                status["lastUpdated"] = _now()
                if not indexes:
                    status.pop("indexes")
                new["status"] = status
                new = self.store.update_status(new)
            return new

        return rmw.on_conflict(attempt, what=f"IPPool {meta.namespace(pool)}/{meta.name(pool)}", attempts=ATTEMPTS)

    def allocations(self, pool: dict) -> dict:
        """{ip: claim name} of every IPAddress (Metal3 and CAPI) naming the pool."""
        out = {}
        name, ns = meta.name(pool), meta.namespace(pool)
        for addr in self.store.list(kinds.M3_IPADDRESS, ns):
            if (addr.get("spec") or {}).get("pool", {}).get("name") == name:
                out[addr["spec"]["address"]] = addr["spec"].get("claim", {}).get("name", "")
        for addr in self.store.list(kinds.CAPI_IPADDRESS, ns):
            if (addr.get("spec") or {}).get("poolRef", {}).get("name") == name:
                out[addr["spec"]["address"]] = addr["spec"].get("claimRef", {}).get("name", "")
        return out

    def pool_info(self, pool: dict) -> dict:
        allocated = self.allocations(pool)
        ranges = ipaddr.Ranges(pool["spec"])
        taken = set(allocated) | {ipaddr.normalize(a) for a in (pool["spec"].get("preAllocations") or {}).values()}
        capacity = ranges.total
        return {
            "allocations": {c: a for a, c in allocated.items()},
            "capacity": capacity,
            "allocated": len(allocated),
            "free": max(0, capacity - len(taken)) if capacity is not None else None,
        }

    def delete_pool(self, name: str, namespace: str, check: bool = False) -> bool:
        """Delete a pool with no allocations (upstream waits for 0 allocations; we refuse instead).

        As upstream's reconcileDelete, the claims already being deleted let their addresses go first
        (UpdateAddresses): only the allocations of live claims, or of claims another finalizer holds, stop it.
        """
        try:
            pool = self.store.get("IPPool", name, namespace)
        except NotFound:
            return False
        if check:
            going = {meta.name(c) for c in self.claims_to_serve(pool) if meta.is_deleting(c)}
        else:
            self.update_addresses(pool)
            going = set()
        used = {ip: claim for ip, claim in self.allocations(pool).items() if claim not in going}
        if used:
            raise Invalid(
                f"{len(used)} address(es) still allocated ({', '.join(sorted(used.values())[:5])}...): "
                "release the claims first",
                obj=meta.ref(pool),
                field="status.indexes",
            )
        if check:
            return True
        self.store.delete("IPPool", name, namespace)

        def drop(cur: dict) -> bool:
            return meta.remove_finalizer(cur, names.IPPOOL_FINALIZER)

        try:
            rmw.mutate(self.store, "IPPool", name, namespace, drop)
        except NotFound:
            pass
        return True
