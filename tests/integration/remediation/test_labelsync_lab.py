"""Label sync through playbooks/sync_labels.yml against the lab's kube-apiserver (as the workload API).

Host labels with a listed prefix are added, changed and removed on the Node; unprefixed Node labels and labels
of other prefixes are never touched; a second run changes nothing; check mode writes nothing.
"""

from __future__ import annotations

import base64
import uuid
from pathlib import Path

import pytest
import yaml
from kubernetes import client as k8s
from kubernetes import config as kconfig

from ansible_collections.baremetal.capi.plugins.module_utils.store.sqlite import SqliteStore

from .conftest import run_playbook

INFRA = "infrastructure.cluster.x-k8s.io"


@pytest.fixture
def world(lab, tmp_path):
    lab.need("kube")
    text = (lab.cfg.root / "kubeconfig").read_text()
    core = k8s.CoreV1Api(kconfig.new_client_from_config_dict(yaml.safe_load(text)))
    node = f"ls-{uuid.uuid4().hex[:8]}"
    core.create_node(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": node,
                "labels": {
                    "kubernetes.io/hostname": node,
                    "plain": "keep",
                    "rack.example.com/manual": "stale",
                    "other.example.com/x": "mine",
                },
            },
        }
    )
    store = SqliteStore(str(tmp_path / "state.db"))
    ns = "default"
    objs = [
        {
            "apiVersion": "cluster.x-k8s.io/v1beta2",
            "kind": "Cluster",
            "metadata": {"name": "c", "namespace": ns},
            "spec": {"infrastructureRef": {"apiGroup": INFRA, "kind": "Metal3Cluster", "name": "c"}},
        },
        {
            "apiVersion": f"{INFRA}/v1beta2",
            "kind": "Metal3Cluster",
            "metadata": {
                "name": "c",
                "namespace": ns,
                "annotations": {"metal3.io/metal3-label-sync-prefixes": "rack.example.com, zone.example.com"},
            },
            "spec": {"controlPlaneEndpoint": {"host": "127.0.0.1", "port": 6443}},
        },
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "c-kubeconfig", "namespace": ns},
            "data": {"value": base64.b64encode(text.encode()).decode()},
        },
    ]
    for obj in objs:
        store.create(obj)
    machine = store.create(
        {
            "apiVersion": "cluster.x-k8s.io/v1beta2",
            "kind": "Machine",
            "metadata": {"name": "m", "namespace": ns},
            "spec": {
                "clusterName": "c",
                "infrastructureRef": {"apiGroup": INFRA, "kind": "Metal3Machine", "name": "m"},
            },
        }
    )
    machine["status"] = {"nodeRef": {"name": node}}
    store.update_status(machine)
    store.create(
        {
            "apiVersion": f"{INFRA}/v1beta2",
            "kind": "Metal3Machine",
            "metadata": {
                "name": "m",
                "namespace": ns,
                "ownerReferences": [
                    {
                        "apiVersion": "cluster.x-k8s.io/v1beta2",
                        "kind": "Machine",
                        "name": "m",
                        "uid": machine["metadata"]["uid"],
                    }
                ],
            },
            "spec": {},
        }
    )
    store.create(
        {
            "apiVersion": "metal3.io/v1alpha1",
            "kind": "BareMetalHost",
            "metadata": {
                "name": "h",
                "namespace": ns,
                "labels": {"cluster.x-k8s.io/cluster-name": "c", "rack.example.com/row": "1", "unprefixed": "u"},
            },
            "spec": {
                "consumerRef": {"apiVersion": f"{INFRA}/v1beta2", "kind": "Metal3Machine", "name": "m", "namespace": ns}
            },
        }
    )
    yield store, core, node, tmp_path
    core.delete_node(node)
    store.close()


def _sync(store, tmp: Path, check: bool = False) -> dict:
    extra = {"capi_cluster": "c", "capi_store": {"path": store.path}}
    _proc, read = run_playbook("sync_labels.yml", tmp, extra, ["capi_labelsync"], *(["--check"] if check else []))
    rc, results, output = read(timeout=600)
    assert rc == 0, output
    return results["capi_labelsync"]


def test_sync_labels_playbook_add_change_remove(world):
    store, core, node, tmp = world
    untouched = {"kubernetes.io/hostname": node, "plain": "keep", "other.example.com/x": "mine"}

    def labels():
        return core.read_node(node).metadata.labels

    preview = _sync(store, tmp, check=True)
    assert (
        preview["changed"] and labels()["rack.example.com/manual"] == "stale" and "rack.example.com/row" not in labels()
    )

    first = _sync(store, tmp)
    assert first["changed"] and first["hosts"][0]["removed"] == ["rack.example.com/manual"]
    assert labels() == {**untouched, "rack.example.com/row": "1"}  # added; the stale prefixed one gone

    host = store.get("BareMetalHost", "h", "default")
    host["metadata"]["labels"].update({"rack.example.com/row": "2", "zone.example.com/az": "a"})
    store.update(host)
    second = _sync(store, tmp)
    assert second["changed"]
    assert labels() == {**untouched, "rack.example.com/row": "2", "zone.example.com/az": "a"}  # changed and added

    host = store.get("BareMetalHost", "h", "default")
    del host["metadata"]["labels"]["rack.example.com/row"]
    store.update(host)
    third = _sync(store, tmp)
    assert third["changed"] and third["hosts"][0]["removed"] == ["rack.example.com/row"]
    assert labels() == {**untouched, "zone.example.com/az": "a"}  # removed

    again = _sync(store, tmp)
    assert again["changed"] is False
    assert labels() == {**untouched, "zone.example.com/az": "a"}
