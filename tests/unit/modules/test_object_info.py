"""baremetal.capi.object_info against a real sqlite store."""

from __future__ import annotations

import base64

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.model import meta
from ansible_collections.baremetal.capi.plugins.module_utils.module import MASK
from ansible_collections.baremetal.capi.plugins.modules import object_info


@pytest.fixture
def hosts(store):
    for ns, name, labels in (
        ("metal3", "node-0", {"rack": "r1", "role": "cp"}),
        ("metal3", "node-1", {"rack": "r1"}),
        ("metal3", "node-2", {"rack": "r2", "broken": "yes"}),
        ("other", "node-0", {"rack": "r1"}),
    ):
        store.create(meta.new("BareMetalHost", name, namespace=ns, labels=labels, spec={"online": True}))


def names(result):
    return [f"{o['metadata']['namespace']}/{o['metadata']['name']}" for o in result["objects"]]


@pytest.mark.parametrize(
    "args, expected",
    [
        ({}, ["metal3/node-0", "metal3/node-1", "metal3/node-2", "other/node-0"]),
        ({"namespace": "metal3"}, ["metal3/node-0", "metal3/node-1", "metal3/node-2"]),
        ({"name": "node-0"}, []),  # name without namespace: looked up in "default", where there is none
        ({"name": "node-0", "namespace": "other"}, ["other/node-0"]),
        ({"label_selector": "rack=r1,!role"}, ["metal3/node-1", "other/node-0"]),
        ({"label_selector": ["rack in (r1,r2)", "broken"]}, ["metal3/node-2"]),
        (
            {"label_selector": {"matchLabels": {"rack": "r1"}}, "namespace": "metal3"},
            ["metal3/node-0", "metal3/node-1"],
        ),
        (
            {
                "label_selector": {"matchExpressions": [{"key": "broken", "operator": "DoesNotExist"}]},
                "name": "node-0",
                "namespace": "metal3",
            },
            ["metal3/node-0"],
        ),
        ({"label_selector": "role=cp", "name": "node-1", "namespace": "metal3"}, []),
    ],
)
def test_query(run, hosts, args, expected):
    result = run(object_info, dict(kind="BareMetalHost", **args))
    assert result["changed"] is False
    assert names(result) == expected


def test_name_uses_store_namespace(run, store, hosts):
    args = dict(kind="BareMetalHost", name="node-2", store={"path": store.path, "namespace": "metal3"})
    result = run(object_info, args)
    assert names(result) == ["metal3/node-2"]


def test_bad_selector_and_kind_fail(run, hosts):
    bad = run(object_info, dict(kind="BareMetalHost", label_selector="rack in r1"))
    assert bad["failed"] and bad["error"] == "InvalidSelector"
    unknown = run(object_info, dict(kind="BareMetalHostz"))
    assert unknown["failed"] and "BareMetalHostz" in unknown["msg"]


def test_secrets_masked_unless_revealed(run, store):
    store.create(
        dict(
            apiVersion="v1",
            kind="Secret",
            metadata=dict(name="bmc", namespace="metal3"),
            stringData=dict(password="s3cr3t-passw0rd"),
        )
    )
    encoded = base64.b64encode(b"s3cr3t-passw0rd").decode()
    masked = run(object_info, dict(kind="Secret", namespace="metal3"))
    assert masked["objects"][0]["data"] == {"password": MASK}
    assert encoded not in masked["_stdout"]

    shown = run(object_info, dict(kind="Secret", namespace="metal3", reveal_secrets=True))
    assert shown["objects"][0]["data"] == {"password": encoded}


def test_check_mode_reads_the_same(run, hosts):
    assert names(run(object_info, dict(kind="BareMetalHost", namespace="other"), check=True)) == ["other/node-0"]
