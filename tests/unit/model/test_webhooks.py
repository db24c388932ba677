"""The object module's writes pass the upstream conversion, defaulting and validation first."""

from __future__ import annotations

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils import objects
from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.model import kinds, meta
from ansible_collections.baremetal.capi.plugins.module_utils.webhooks import admit


def write(store, obj):
    return objects.apply(store, obj, kinds.of(obj), admit=admit)


def test_metal3_cluster_is_defaulted_and_validated(store):
    changed, _before, after, _method = write(
        store, meta.new("Metal3Cluster", "c", "ns", spec={"controlPlaneEndpoint": {"host": "10.0.0.1"}})
    )
    assert changed and after["spec"]["controlPlaneEndpoint"]["port"] == 6443
    with pytest.raises(Invalid, match=r"Metal3Cluster ns/bad: .*controlPlaneEndpoint"):
        write(store, meta.new("Metal3Cluster", "bad", "ns", spec={}))
    assert [meta.name(o) for o in store.list("Metal3Cluster", "ns")] == ["c"]


def test_v1beta1_field_names_are_converted_on_input(store):
    m3m = meta.new(
        "Metal3Machine",
        "m",
        "ns",
        spec={
            "image": {
                "url": "http://x/i.img",
                "checksum": "http://x/i.sha",
                "checksumType": "sha256",
                "format": "qcow2",
            }
        },
    )
    m3m["apiVersion"] = "infrastructure.cluster.x-k8s.io/v1beta1"
    after = write(store, m3m)[2]
    assert after["apiVersion"] == "infrastructure.cluster.x-k8s.io/v1beta2"
    assert after["spec"]["image"]["diskFormat"] == "qcow2" and "format" not in after["spec"]["image"]


def test_bad_machine_image_fails_before_anything_is_written(store):
    with pytest.raises(Invalid, match=r"Metal3Machine ns/m: spec.image"):
        write(store, meta.new("Metal3Machine", "m", "ns", spec={}))
    assert store.list("Metal3Machine", "ns") == []


def test_immutable_data_template_fields_are_refused_on_update(store):
    tmpl = meta.new("Metal3DataTemplate", "t", "ns", spec={"metaData": {"strings": [{"key": "a", "value": "1"}]}})
    write(store, tmpl)
    tmpl["spec"]["metaData"]["strings"][0]["value"] = "2"
    with pytest.raises(Invalid, match=r"spec.metaData: metaData is immutable"):
        write(store, tmpl)


def test_even_control_plane_replicas_refused(store):
    kcp = meta.new(
        "KubeadmControlPlane",
        "cp",
        "ns",
        spec={
            "replicas": 2,
            "version": "v1.34.1",
            "machineTemplate": {"spec": {"infrastructureRef": {"kind": "Metal3MachineTemplate", "name": "t"}}},
        },
    )
    with pytest.raises(Invalid, match="spec.replicas"):
        write(store, kcp)
