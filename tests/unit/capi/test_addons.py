"""ClusterResourceSet: the description's add-ons in the store, hashes, manifests, the webhook, the binding's
bookkeeping up to the workload API (applying is tests/integration/addons, against real API servers)."""

from __future__ import annotations

import base64

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils import webhooks
from ansible_collections.baremetal.capi.plugins.module_utils.capi import addon_sets, addons
from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions, meta, names

NS = "addons"
CNI = """\
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: cni, namespace: kube-system}
spec: {}
---
apiVersion: v1
kind: Namespace
metadata: {name: cni-system}
"""


@pytest.fixture
def files(tmp_path):
    (tmp_path / "cni.yaml").write_text(CNI)
    (tmp_path / "extra.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    return tmp_path


def test_description_addons_become_config_maps_and_sets(store, files):
    report = addon_sets.ensure(
        store,
        "c1",
        NS,
        [
            {"name": "cni", "manifests": ["cni.yaml"], "strategy": "Reconcile"},
            {"name": "x", "manifests": ["extra.yaml"]},
        ],
        base_dir=str(files),
    )
    assert report["changed"] and sorted(report["sets"]) == ["c1-cni", "c1-x"]
    crs = store.get("ClusterResourceSet", "c1-cni", NS)
    assert crs["spec"] == {
        "clusterSelector": {"matchLabels": {names.CLUSTER_NAME_LABEL: "c1"}},
        "resources": [{"kind": "ConfigMap", "name": "c1-addon-cni"}],
        "strategy": "Reconcile",
    }
    assert store.get("ConfigMap", "c1-addon-cni", NS)["data"] == {"cni.yaml": CNI}
    assert store.get("ClusterResourceSet", "c1-x", NS)["spec"]["strategy"] == "ApplyOnce"  # the webhook default
    again = addon_sets.ensure(
        store,
        "c1",
        NS,
        [
            {"name": "cni", "manifests": ["cni.yaml"], "strategy": "Reconcile"},
            {"name": "x", "manifests": ["extra.yaml"]},
        ],
        base_dir=str(files),
    )
    assert not again["changed"]
    # x no longer described: its set and ConfigMap go; cni stays
    gone = addon_sets.ensure(
        store, "c1", NS, [{"name": "cni", "manifests": ["cni.yaml"], "strategy": "Reconcile"}], base_dir=str(files)
    )
    assert sorted(gone["deleted"]) == ["ClusterResourceSet c1-x", "ConfigMap c1-addon-x"]
    assert [meta.name(s) for s in store.list("ClusterResourceSet", NS)] == ["c1-cni"]


def test_changed_strategy_replaces_the_set_and_check_mode_writes_nothing(store, files):
    addon_sets.ensure(store, "c1", NS, [{"name": "cni", "manifests": ["cni.yaml"]}], base_dir=str(files))
    uid = store.get("ClusterResourceSet", "c1-cni", NS)["metadata"]["uid"]
    plan = addon_sets.ensure(
        store,
        "c1",
        NS,
        [{"name": "cni", "manifests": ["cni.yaml"], "strategy": "Reconcile"}],
        base_dir=str(files),
        check=True,
    )
    assert plan["changed"] and store.get("ClusterResourceSet", "c1-cni", NS)["metadata"]["uid"] == uid
    addon_sets.ensure(
        store, "c1", NS, [{"name": "cni", "manifests": ["cni.yaml"], "strategy": "Reconcile"}], base_dir=str(files)
    )
    after = store.get("ClusterResourceSet", "c1-cni", NS)
    assert after["metadata"]["uid"] != uid and after["spec"]["strategy"] == "Reconcile"


@pytest.mark.parametrize(
    ("addon", "field"),
    [
        ({"manifests": ["cni.yaml"]}, "name"),
        ({"name": "a", "manifests": ["missing.yaml"]}, r"manifests\[0\]"),
        ({"name": "a", "manifests": ["cni.yaml"], "strategy": "Sometimes"}, "strategy"),
        ({"name": "a"}, "manifests"),
        ({"name": "a", "resources": [{"kind": "Pod", "name": "p"}]}, r"resources\[0\]"),
    ],
)
def test_bad_addons_are_refused_before_anything_is_written(store, files, addon, field):
    with pytest.raises(Invalid, match=rf"capi_cluster\.addons\[0\].*{field}"):
        addon_sets.ensure(store, "c1", NS, [addon], base_dir=str(files))
    assert store.list("ClusterResourceSet", NS) == [] and store.list("ConfigMap", NS) == []


def test_not_yaml_objects_are_refused(store, tmp_path):
    (tmp_path / "bad.yaml").write_text("just: text\n")
    with pytest.raises(Invalid, match="without apiVersion and kind"):
        addon_sets.ensure(store, "c1", NS, [{"name": "a", "manifests": ["bad.yaml"]}], base_dir=str(tmp_path))


def test_hash_is_upstreams_over_values_in_key_order(store):
    cm = meta.new("ConfigMap", "m", NS)
    cm["data"] = {"b.yaml": "B", "a.yaml": "A"}
    store.create(cm)
    values = addons.resource_values(store, NS, {"kind": "ConfigMap", "name": "m"})
    assert values == [b"A", b"B"]
    import hashlib

    assert addons.compute_hash(values) == "sha256:" + hashlib.sha256(b"AB").hexdigest()


def test_secret_resources_must_have_the_resource_set_type(store):
    sec = meta.new("Secret", "s", NS)
    sec["type"] = "Opaque"
    sec["data"] = {"x.yaml": base64.b64encode(CNI.encode()).decode()}
    store.create(sec)
    with pytest.raises(Invalid, match=addons.RESOURCE_SET_SECRET_TYPE):
        addons.resource_values(store, NS, {"kind": "Secret", "name": "s"})
    sec = store.get("Secret", "s", NS)
    sec["type"] = addons.RESOURCE_SET_SECRET_TYPE
    store.update(sec)
    assert addons.resource_values(store, NS, {"kind": "Secret", "name": "s"}) == [CNI.encode()]


def test_objects_namespaces_first_and_lists_expanded():
    objs = addons.objects_of([CNI.encode()], "cm")
    assert [o["kind"] for o in objs] == ["Namespace", "DaemonSet"]
    listed = b"apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n"
    assert [o["metadata"]["name"] for o in addons.objects_of([listed], "cm")] == ["a"]


def test_webhook_defaults_apply_once_and_keeps_strategy_immutable():
    crs = meta.new("ClusterResourceSet", "s", NS, spec={"resources": [{"kind": "ConfigMap", "name": "m"}]})
    admitted = webhooks.admit(crs)
    assert admitted["spec"]["strategy"] == "ApplyOnce"
    changed = {**admitted, "spec": {**admitted["spec"], "strategy": "Reconcile"}}
    with pytest.raises(Invalid, match=r"spec\.strategy.*immutable|immutable"):
        webhooks.admit(changed, admitted)
    with pytest.raises(Invalid, match=r"spec\.resources\[0\]\.kind"):
        webhooks.admit(meta.new("ClusterResourceSet", "s", NS, spec={"resources": [{"kind": "Pod", "name": "p"}]}))


def test_selector_empty_selects_nothing():
    cluster = {"metadata": {"name": "c1", "labels": {names.CLUSTER_NAME_LABEL: "c1", "cni": "lab"}}}
    assert not addons.selects({"spec": {"clusterSelector": {}}}, cluster)
    assert addons.selects({"spec": {"clusterSelector": {"matchLabels": {"cni": "lab"}}}}, cluster)
    assert not addons.selects({"spec": {"clusterSelector": {"matchLabels": {"cni": "calico"}}}}, cluster)


def test_nothing_is_applied_before_the_control_plane_is_initialized(store, files):
    cluster = store.create(meta.new("Cluster", "c1", NS, labels={names.CLUSTER_NAME_LABEL: "c1"}, spec={}))
    addon_sets.ensure(store, "c1", NS, [{"name": "cni", "manifests": ["cni.yaml"]}], base_dir=str(files))
    out = addons.reconcile(store, cluster, None)
    assert out["waiting"] and not out["changed"]
    assert store.list("ClusterResourceSetBinding", NS) == []


def test_unreachable_workload_api_records_nothing_applied(store, files):
    cluster = store.create(meta.new("Cluster", "c1", NS, labels={names.CLUSTER_NAME_LABEL: "c1"}, spec={}))
    cluster["status"] = {"initialization": {"controlPlaneInitialized": True}}
    cluster = store.update_status(cluster)
    addon_sets.ensure(store, "c1", NS, [{"name": "cni", "manifests": ["cni.yaml"]}], base_dir=str(files))
    out = addons.reconcile(store, cluster, None)
    assert out["sets"][0]["resources"][0]["action"] == "waiting"
    crs = store.get("ClusterResourceSet", "c1-cni", NS)
    cond = conditions.get(crs, addons.RESOURCES_APPLIED)
    assert (cond["status"], cond["reason"]) == ("False", addons.APPLY_FAILED_REASON)
    binding = store.get("ClusterResourceSetBinding", "c1", NS)
    assert binding["spec"]["bindings"][0]["resources"][0]["applied"] is False
    assert binding["metadata"]["ownerReferences"][0]["kind"] == "Cluster"
