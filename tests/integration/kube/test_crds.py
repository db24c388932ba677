"""The collection's CRDs: generated from the kinds table, applied without replacing anybody else's."""

from __future__ import annotations

import json
import time

import pytest
from kube_helpers import free_port
from kubernetes import client as k
from kubernetes import config as kconfig

from ansible_collections.baremetal.capi.plugins.module_utils.errors import Incompatible, StoreUnavailable
from ansible_collections.baremetal.capi.plugins.module_utils.model import crds, kinds, meta
from ansible_collections.baremetal.capi.plugins.module_utils.store import crds as store_crds
from ansible_collections.baremetal.capi.plugins.module_utils.store.kubernetes import KubernetesStore
from lab.config import REPO
from lab.kube_build import pki
from lab.services import kube as kube_svc

CUSTOM = [kd for kd in kinds.ALL if not kd.core]


def test_committed_yaml_is_what_the_generator_makes():
    committed = {p.name: p.read_text() for p in (REPO / "crds").glob("*.yaml")}
    assert committed == crds.files(), "regenerate: python -m ...plugins.module_utils.model.crds crds/"


def test_one_crd_per_custom_kind_with_names_from_the_kinds_table():
    by_name = {c["metadata"]["name"]: c for c in crds.all_crds()}
    assert set(by_name) == {kd.crd_name for kd in CUSTOM}
    bmh = by_name["baremetalhosts.metal3.io"]["spec"]
    assert bmh["names"]["shortNames"] == ["bmh", "bmhost"]
    assert bmh["versions"][0]["name"] == "v1alpha1" and bmh["versions"][0]["subresources"] == {"status": {}}
    template = by_name["metal3machinetemplates.infrastructure.cluster.x-k8s.io"]["spec"]["versions"][0]
    assert "subresources" not in template  # no status subresource, as in kinds.py
    assert by_name["machines.cluster.x-k8s.io"]["spec"]["names"]["categories"] == ["cluster-api"]


def foreign_crd(plural: str, group: str, kind: str, version: str) -> dict:
    """A CRD as an upstream project ships it (no managed-by label of ours)."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": f"{kind}List"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": version,
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {"spec": {"type": "object", "properties": {"online": {"type": "boolean"}}}},
                        }
                    },
                }
            ],
        },
    }


def _established(ext, name: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not any(c.type == "Established" and c.status == "True" for c in _conditions(ext, name)):
        assert time.monotonic() < deadline, f"{name} not Established"
        time.sleep(0.2)


def _conditions(ext, name: str) -> list:
    return ext.read_custom_resource_definition(name).status.conditions or []


def _gone(ext, name: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while name in [c.metadata.name for c in ext.list_custom_resource_definition().items]:
        assert time.monotonic() < deadline, f"{name} not deleted"
        time.sleep(0.2)


@pytest.fixture
def bare_apiserver(lab, kube):
    """A kube-apiserver of its own (own etcd prefix, own CA) with no CRDs at all."""
    ca_cert, ca_key = pki.new_ca("crd-test-ca")
    prefix = f"/test-crds-{int(time.time() * 1000)}"
    name = "test-crds-apiserver"
    info = kube_svc.start_apiserver(
        lab.cfg, name, ca_cert=ca_cert, ca_key=ca_key, port=free_port("127.0.0.1"), etcd_prefix=prefix
    )
    client = kconfig.new_client_from_config(config_file=info["kubeconfig"])
    yield info, client
    client.close()
    kube_svc.stop_apiserver(lab.cfg, name, purge_prefix=prefix)


def test_apply_skips_kinds_the_cluster_already_serves(bare_apiserver):
    info, client = bare_apiserver
    ext = k.ApiextensionsV1Api(client)
    store = KubernetesStore(kubeconfig=info["kubeconfig"])
    # Before: the store says what is missing.
    with pytest.raises(StoreUnavailable, match="does not serve ippools.ipam.metal3.io"):
        store.list("IPPool", "default")

    # Upstream BMO's BareMetalHost CRD is there already; an old CAPM3 serves Metal3Machines at v1beta1 only.
    ext.create_custom_resource_definition(foreign_crd("baremetalhosts", "metal3.io", "BareMetalHost", "v1alpha1"))
    m3m = "metal3machines.infrastructure.cluster.x-k8s.io"
    ext.create_custom_resource_definition(
        foreign_crd("metal3machines", "infrastructure.cluster.x-k8s.io", "Metal3Machine", "v1beta1")
    )
    _established(ext, m3m)

    # The store says which CRD, the versions it serves, the one needed and what to do.
    with pytest.raises(Incompatible) as exc:
        store.list("Metal3Machine", "default")
    msg = str(exc.value)
    assert f"CRD {m3m} was installed by another project" in msg and "serves v1beta1" in msg
    assert "stores Metal3Machine at infrastructure.cluster.x-k8s.io/v1beta2" in msg
    assert "Upgrade CAPM3 (cluster-api-provider-metal3) to a release whose CRDs serve v1beta2" in msg
    assert "another namespace does not help" in msg

    # Applying fails the same way, in check mode too, before anything is written.
    for check in (True, False):
        with pytest.raises(Incompatible, match=f"CRD {m3m} was installed by another project.*serves v1beta1"):
            store_crds.apply_crds(client, check_mode=check)
    assert [c.metadata.name for c in ext.list_custom_resource_definition().items] == ["baremetalhosts.metal3.io", m3m]

    # Without it (the user upgraded CAPM3 or chose another cluster), the rest applies.
    ext.delete_custom_resource_definition(m3m)
    _gone(ext, m3m)
    planned = store_crds.apply_crds(client, check_mode=True)
    assert len(planned["created"]) == len(CUSTOM) - 1
    assert [c.metadata.name for c in ext.list_custom_resource_definition().items] == ["baremetalhosts.metal3.io"]

    first = store_crds.apply_crds(client)
    assert sorted(first["created"]) == sorted(planned["created"])
    assert first["skipped"] == {"baremetalhosts.metal3.io": "already served by the cluster's own CRD"}
    # The foreign CRDs are untouched: no label of ours, their own schema.
    bmh = json.loads(ext.read_custom_resource_definition("baremetalhosts.metal3.io", _preload_content=False).data)
    assert "labels" not in bmh["metadata"]
    assert "x-kubernetes-preserve-unknown-fields" not in json.dumps(bmh["spec"]["versions"][0]["schema"])

    # Every CRD of ours is Established and structural (no NonStructuralSchema condition).
    for name in first["created"]:
        conds = {c.type: c.status for c in ext.read_custom_resource_definition(name).status.conditions or []}
        assert conds.get("Established") == "True" and "NonStructuralSchema" not in conds, (name, conds)

    again = store_crds.apply_crds(client)
    assert again["created"] == [] and again["updated"] == []
    assert sorted(again["unchanged"]) == sorted(first["created"])

    # Our own CRD that drifted is brought back.
    drifted = json.loads(ext.read_custom_resource_definition("ippools.ipam.metal3.io", _preload_content=False).data)
    drifted["spec"]["names"]["shortNames"] = ["old"]
    ext.replace_custom_resource_definition("ippools.ipam.metal3.io", drifted)
    fixed = store_crds.apply_crds(client)
    assert fixed["updated"] == ["ippools.ipam.metal3.io"]
    assert ext.read_custom_resource_definition("ippools.ipam.metal3.io").spec.names.short_names == ["ipp"]

    # The store works on the kinds it created, with the status subresource.
    pool = store.create(meta.new("IPPool", "pool", "default", spec={"namePrefix": "p"}))
    pool["status"] = {"lastUpdated": "2026-01-01T00:00:00Z"}
    assert store.update_status(pool)["status"]["lastUpdated"] == "2026-01-01T00:00:00Z"
    store.close()
