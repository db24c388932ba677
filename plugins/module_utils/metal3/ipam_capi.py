"""Cluster API address claims answered by a Metal3 IPPool (ip-address-manager's capiUpdateAddresses).

An ``ipam.cluster.x-k8s.io`` IPAddressClaim whose ``spec.poolRef`` is an ``ipam.metal3.io``
IPPool gets what ip-address-manager gives it: the finalizer ``ipam.metal3.io/ipaddressclaim``,
an ``ipam.cluster.x-k8s.io`` IPAddress ``<namePrefix>-<ip>`` (finalizer ``ipam.metal3.io/ipaddress``,
owned by the claim's owners, the pool and the claim, with the claim's labels), ``status.addressRef``
and the ``ErrorMessage`` condition; the pool's ``status.indexes`` records it like any other claim.
The address comes from the same arithmetic, pre-allocations, ``ipAddress`` annotation and
free-address search as a Metal3 IPClaim's (IPAM._take).  A deleting claim whose only finalizer
left is IPAM's has its IPAddress deleted and lets the address go.

One difference: upstream answers every IPAddressClaim whose poolRef *name* is the pool's, whatever
its group and kind; here only the claims that name a Metal3 IPPool (group ``ipam.metal3.io``, kind
``IPPool``), so a claim for another provider's pool of the same name is left to that provider.
"""

from __future__ import annotations

from ansible_collections.baremetal.capi.plugins.module_utils.errors import CapiError, NotFound
from ansible_collections.baremetal.capi.plugins.module_utils.model import kinds, meta, names

CLAIM_KIND = f"IPAddressClaim.{kinds.CAPI_IPAM_GROUP}"


def names_metal3_pool(claim: dict, pool_name: str | None = None) -> bool:
    ref = (claim.get("spec") or {}).get("poolRef") or {}
    if (ref.get("apiGroup"), ref.get("kind")) != (kinds.M3IPAM_GROUP, "IPPool"):
        return False
    return pool_name is None or ref.get("name") == pool_name


class CapiClaimsMixin:
    """Needs the IPAM engine (``self.store``, ``allocate``, ``release``)."""

    def capi_claims(self, pool: dict) -> list[dict]:
        return [c for c in self.store.list(CLAIM_KIND, meta.namespace(pool)) if names_metal3_pool(c, meta.name(pool))]

    def serve_capi_claim(self, claim: dict, pool: dict | None = None) -> dict | None:
        """Answer (or, deleting, release) one IPAddressClaim.  Returns its IPAddress, or None."""
        ns = meta.namespace(claim)
        if not names_metal3_pool(claim):
            return None
        if meta.is_deleting(claim):
            others = [f for f in meta.finalizers(claim) if f != names.CAPI_IPADDRESSCLAIM_FINALIZER]
            if not others:  # "still in use (has other finalizers)": wait for them
                self.release(claim)
            return None
        if pool is None:
            pool = self.get_pool(claim["spec"]["poolRef"]["name"], ns, meta.ref(claim), "spec.poolRef.name")
        return self.allocate(claim, pool)[1]

    def serve_capi_claims(self, pool: dict) -> dict:
        """UpdateAddresses for the Cluster API side: {claim name: address or error} of the claims served."""
        out = {}
        for claim in self.capi_claims(pool):
            status = claim.get("status") or {}
            if (status.get("addressRef") or {}).get("name") and not meta.is_deleting(claim):
                continue  # answered already
            try:
                addr = self.serve_capi_claim(claim, pool)
            except NotFound:
                continue
            except CapiError as exc:  # AllocationFailed / Requeue: recorded on the claim, the next claim goes on
                out[meta.name(claim)] = {"error": exc.message}
                continue
            out[meta.name(claim)] = {"address": addr["spec"]["address"]} if addr else {"released": True}
        return out
