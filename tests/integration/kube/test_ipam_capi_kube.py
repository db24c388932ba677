"""Cluster API IPAddressClaims answered by a Metal3 IPPool on the real kube-apiserver (the kubernetes store),
next to a Metal3 IPClaim of the same pool: answered, recorded, released, the IPAddress objects gone."""

from __future__ import annotations

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.errors import NotFound
from ansible_collections.baremetal.capi.plugins.module_utils.metal3.ipam import IPAM
from ansible_collections.baremetal.capi.plugins.module_utils.metal3.ipam_capi import CLAIM_KIND
from ansible_collections.baremetal.capi.plugins.module_utils.model import kinds, meta, names

M3_REF = {"apiGroup": "ipam.metal3.io", "kind": "IPPool", "name": "p"}


def test_capi_and_metal3_claims_on_the_kubernetes_store(kube_store, kube_namespace):
    store, ns = kube_store, kube_namespace
    ipam = IPAM(store)
    ipam.apply_pool(
        meta.new(
            "IPPool",
            "p",
            ns,
            spec={"namePrefix": "pfx", "pools": [{"subnet": "10.77.0.10/29", "gateway": "10.77.0.9"}], "prefix": 29},
        )
    )
    _, _, m3 = ipam.apply_claim(meta.new("IPClaim", "m3", ns, spec={"pool": {"name": "p"}}))
    assert m3["spec"]["address"] == "10.77.0.11"  # subnet with host bits: after the address as written
    store.create(meta.new(CLAIM_KIND, "capi", ns, spec={"poolRef": dict(M3_REF)}))
    ipam.apply_pool(store.get("IPPool", "p", ns))  # the pool reconcile answers it

    claim = store.get(CLAIM_KIND, "capi", ns)
    assert claim["status"]["addressRef"] == {"name": "pfx-10-77-0-12"}
    assert names.CAPI_IPADDRESSCLAIM_FINALIZER in meta.finalizers(claim)
    [cond] = claim["status"]["deprecated"]["v1beta1"]["conditions"]
    assert (cond["type"], cond["status"], cond["reason"]) == ("ErrorMessage", "False", "ErrorMessage")
    addr = store.get(kinds.CAPI_IPADDRESS, "pfx-10-77-0-12", ns)
    assert addr["spec"]["address"] == "10.77.0.12" and addr["spec"]["poolRef"] == M3_REF
    assert addr["spec"]["gateway"] == "10.77.0.9" and addr["spec"]["prefix"] == 29
    assert store.get("IPPool", "p", ns)["status"]["indexes"] == {"m3": "10.77.0.11", "capi": "10.77.0.12"}

    # released: the claims go, their IPAddresses with them, the record empties
    store.delete(CLAIM_KIND, "capi", ns)
    ipam.apply_pool(store.get("IPPool", "p", ns))
    ipam.delete_claim("m3", ns)
    for kind, name in (
        (kinds.CAPI_IPADDRESS, "pfx-10-77-0-12"),
        (kinds.M3_IPADDRESS, "pfx-10-77-0-11"),
        (CLAIM_KIND, "capi"),
        ("IPClaim", "m3"),
    ):
        with pytest.raises(NotFound):
            store.get(kind, name, ns)
    assert "indexes" not in (store.get("IPPool", "p", ns).get("status") or {})
