"""The addresses of a Metal3Data: an IP claim per referenced pool, their answers, their release.

CAPM3's getAddressesFromPool / ensureM3IPClaim / ensureIPClaim / addressFromM3Claim /
addressFromClaim / releaseAddressesFromPool (C:baremetal/metal3data_manager.go):
Metal3 IPPools get an IPClaim (answered here, by the IPAM engine), other
providers' pools a Cluster API IPAddressClaim (answered by that provider).
"""

from __future__ import annotations

from ansible_collections.baremetal.capi.plugins.module_utils.errors import AlreadyExists, Invalid, NotFound, Requeue
from ansible_collections.baremetal.capi.plugins.module_utils.metal3 import render
from ansible_collections.baremetal.capi.plugins.module_utils.metal3.ipam import AllocationFailed
from ansible_collections.baremetal.capi.plugins.module_utils.model import kinds, meta, names
from ansible_collections.baremetal.capi.plugins.module_utils.store import mutate as rmw


def get(store, kind, name, ns):
    try:
        return store.get(kind, name, ns)
    except NotFound:
        return None


def update(store, kind, name, ns, change, status=False):
    """Re-read, apply ``change(obj)`` (returns True if it changed anything), write; retry on Conflict."""
    return rmw.mutate(store, kind, name, ns, change, status=status)


class AddressesMixin:
    """Needs ``self.store``, ``self.ipam``, ``self.bmh_names`` and ``self.context`` (DataManager)."""

    def _ipclaim(self, data: dict, pool: str, bmh_name: str) -> tuple[str, dict | None]:
        """(the name to create, the existing IPClaim): ``<m3data>-<pool>``, else ``<bmh>-<pool>`` (ensureM3IPClaim)."""
        ns = meta.namespace(data)
        for cname in (f"{meta.name(data)}-{pool}", f"{bmh_name}-{pool}"):
            claim = get(self.store, "IPClaim", cname, ns)
            if claim is not None:
                return cname, claim
        return (f"{bmh_name}-{pool}" if self.bmh_names else f"{meta.name(data)}-{pool}"), None

    def _answers(self, data, pools, pool_objs, peek: bool, bmh_name: str) -> dict:
        """{pool: address answer or None} from the claims that exist (and, with peek, the would-be address)."""
        out = {}
        ns = meta.namespace(data)
        for pool, ref in pools.items():
            cname = f"{meta.name(data)}-{pool}"
            if render.is_metal3_pool(ref):
                cname, claim = self._ipclaim(data, pool, bmh_name)
                addr = self.ipam._current_address(claim) if claim else None
                if addr is None and peek:
                    addr = self.ipam.peek(pool_objs[pool], claim or meta.new("IPClaim", cname, ns))
                out[pool] = _answer(addr, dns=True) if addr else None
            else:
                out[pool] = self._capi_answer(get(self.store, "IPAddressClaim", cname, ns))
        return out

    def _capi_answer(self, claim: dict | None) -> dict | None:
        name = ((claim or {}).get("status") or {}).get("addressRef", {}).get("name")
        addr = get(self.store, kinds.CAPI_IPADDRESS, name, meta.namespace(claim)) if name else None
        return _answer(addr, dns=False) if addr else None

    def _claim_addresses(self, data: dict, pools: dict, pool_objs: dict, bmh_name: str) -> dict:
        ns, answers = meta.namespace(data), {}
        for pool, ref in pools.items():
            cname = f"{meta.name(data)}-{pool}"
            metal3 = render.is_metal3_pool(ref)
            kind = "IPClaim" if metal3 else "IPAddressClaim"
            if metal3:
                cname, claim = self._ipclaim(data, pool, bmh_name)
            else:
                claim = get(self.store, kind, cname, ns)
            if claim is not None and not any(
                r.get("uid") == data["metadata"]["uid"] for r in claim["metadata"].get("ownerReferences") or []
            ):
                if meta.is_deleting(claim):
                    update(self.store, kind, cname, ns, lambda c: meta.remove_finalizer(c, names.METAL3_DATA_FINALIZER))
                raise Requeue(
                    f"{kind} {ns}/{cname} belongs to an older Metal3Data; waiting for it to go", obj=meta.ref(data)
                )
            if claim is None:
                spec = (
                    {"pool": {"name": pool, "namespace": ns}}
                    if metal3
                    else {"poolRef": {"apiGroup": ref["apiGroup"], "kind": ref["kind"], "name": pool}}
                )
                labels = dict(meta.labels(data))
                if metal3 and self.bmh_names:
                    labels.update({names.DATA_NAME_LABEL: meta.name(data), names.POOL_NAME_LABEL: pool})
                claim = meta.new(
                    kind, cname, ns, spec=spec, labels=labels or None, finalizers=[names.METAL3_DATA_FINALIZER]
                )
                claim["metadata"]["ownerReferences"] = [meta.owner_reference(data, controller=True)]
                try:
                    claim = self.store.create(claim)
                except AlreadyExists:
                    claim = self.store.get(kind, cname, ns)
            if metal3:
                try:
                    answers[pool] = _answer(self.ipam.allocate(claim, pool_objs[pool])[1], dns=True)
                except AllocationFailed as exc:
                    exc.pool = pool
                    raise
            else:
                answers[pool] = self._capi_answer(claim)
                if answers[pool] is None:
                    raise Requeue(
                        f"waiting for an IPAM provider to answer IPAddressClaim {ns}/{cname}", obj=meta.ref(data)
                    )
        return answers

    def _release(self, data: dict) -> None:
        ns, dname = meta.namespace(data), meta.name(data)
        template = get(self.store, "Metal3DataTemplate", data["spec"]["template"]["name"], ns)
        objects = None
        m3m = list(meta.owners_of_kind(data, "Metal3Machine"))
        if template is not None and m3m:
            try:
                m3m_obj = self.store.get("Metal3Machine", m3m[0]["name"], ns)
                _m3m, machine, bmh = self.context(m3m_obj)
                objects = {"metal3machine": m3m_obj, "machine": machine, "baremetalhost": bmh}
            except (NotFound, Invalid):
                objects = None  # upstream's release path: annotation pools are not resolved without them
        pools = render.referenced_pools(template, objects) if template is not None else {}
        for pool, ref in pools.items():
            kind = "IPClaim" if render.is_metal3_pool(ref) else "IPAddressClaim"
            if kind == "IPClaim":  # the <bmh>-<pool> claims this Metal3Data made (releaseAddressFromM3Pool)
                selector = {names.DATA_NAME_LABEL: dname, names.POOL_NAME_LABEL: pool}
                for labelled in self.store.list("IPClaim", ns, label_selector={"matchLabels": selector}):
                    update(
                        self.store,
                        kind,
                        meta.name(labelled),
                        ns,
                        lambda c: meta.remove_finalizer(c, names.METAL3_DATA_FINALIZER),
                    )
                    self.ipam.delete_claim(meta.name(labelled), ns)
            cname = f"{dname}-{pool}"
            if get(self.store, kind, cname, ns) is None:
                continue
            update(self.store, kind, cname, ns, lambda c: meta.remove_finalizer(c, names.METAL3_DATA_FINALIZER))
            if kind == "IPClaim":
                self.ipam.delete_claim(cname, ns)
            elif get(self.store, kind, cname, ns):
                self.store.delete(kind, cname, ns)
        if get(self.store, "Metal3Data", dname, ns):
            update(
                self.store,
                "Metal3Data",
                dname,
                ns,
                lambda d: meta.remove_finalizer(d, names.METAL3_DATA_CLAIM_FINALIZER),
            )
            self.store.delete("Metal3Data", dname, ns)
        if get(self.store, "Metal3Data", dname, ns):
            update(self.store, "Metal3Data", dname, ns, lambda d: meta.remove_finalizer(d, names.METAL3_DATA_FINALIZER))


def _answer(addr: dict, dns: bool) -> dict:
    spec = addr.get("spec") or {}
    return {
        "address": spec.get("address"),
        "prefix": spec.get("prefix") or 0,
        "gateway": spec.get("gateway") or "",
        "dnsServers": list(spec.get("dnsServers") or []) if dns else [],
    }
