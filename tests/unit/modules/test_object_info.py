"""baremetal.capi.object_info against a real store (sqlite, and the lab's kube-apiserver)."""

from __future__ import annotations

import base64

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.model import meta
from ansible_collections.baremetal.capi.plugins.module_utils.module import MASK
from ansible_collections.baremetal.capi.plugins.modules import object_info


@pytest.fixture
def hosts(store, ns, ns2):
    """Three hosts in ns (the task's default namespace), one in ns2."""
    for where, name, labels in (
        (ns, "node-0", {"rack": "r1", "role": "cp"}),
        (ns, "node-1", {"rack": "r1"}),
        (ns, "node-2", {"rack": "r2", "broken": "yes"}),
        (ns2, "node-0", {"rack": "r1"}),
    ):
        store.create(meta.new("BareMetalHost", name, namespace=where, labels=labels, spec={"online": True}))
    return {"ns": ns, "ns2": ns2}


def names(result, hosts):
    """``ns/node-0`` style names, of this test's namespaces only (other tests may share the store)."""
    alias = {v: k for k, v in hosts.items()}
    return [
        f"{alias[o['metadata']['namespace']]}/{o['metadata']['name']}"
        for o in result["objects"]
        if o["metadata"]["namespace"] in alias
    ]


@pytest.mark.parametrize(
    "args, expected",
    [
        ({}, ["ns/node-0", "ns/node-1", "ns/node-2", "ns2/node-0"]),
        ({"namespace": "ns"}, ["ns/node-0", "ns/node-1", "ns/node-2"]),
        ({"name": "node-1"}, ["ns/node-1"]),  # name without namespace: store.namespace
        ({"name": "node-0", "namespace": "ns2"}, ["ns2/node-0"]),
        ({"name": "node-9", "namespace": "ns2"}, []),
        ({"label_selector": "rack=r1,!role"}, ["ns/node-1", "ns2/node-0"]),
        ({"label_selector": ["rack in (r1,r2)", "broken"]}, ["ns/node-2"]),
        ({"label_selector": {"matchLabels": {"rack": "r1"}}, "namespace": "ns"}, ["ns/node-0", "ns/node-1"]),
        (
            {
                "label_selector": {"matchExpressions": [{"key": "broken", "operator": "DoesNotExist"}]},
                "name": "node-0",
                "namespace": "ns",
            },
            ["ns/node-0"],
        ),
        ({"label_selector": "role=cp", "name": "node-1", "namespace": "ns"}, []),
    ],
)
def test_query(run, hosts, args, expected):
    if "namespace" in args:
        args = dict(args, namespace=hosts[args["namespace"]])
    result = run(object_info, dict(kind="BareMetalHost", **args))
    assert result["changed"] is False
    assert sorted(names(result, hosts)) == expected
    found = [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in result["objects"]]
    assert found == sorted(found)


def test_bad_selector_and_kind_fail(run, hosts):
    bad = run(object_info, dict(kind="BareMetalHost", label_selector="rack in r1"))
    assert bad["failed"] and bad["error"] == "InvalidSelector"
    unknown = run(object_info, dict(kind="BareMetalHostz"))
    assert unknown["failed"] and "BareMetalHostz" in unknown["msg"]


def test_secrets_masked_unless_revealed(run, store, ns):
    store.create(
        dict(
            apiVersion="v1",
            kind="Secret",
            metadata=dict(name="bmc", namespace=ns),
            stringData=dict(password="s3cr3t-passw0rd"),
        )
    )
    encoded = base64.b64encode(b"s3cr3t-passw0rd").decode()
    masked = run(object_info, dict(kind="Secret", namespace=ns))
    assert masked["objects"][0]["data"] == {"password": MASK}
    assert encoded not in masked["_stdout"]

    shown = run(object_info, dict(kind="Secret", namespace=ns, reveal_secrets=True))
    assert shown["objects"][0]["data"] == {"password": encoded}


def test_check_mode_reads_the_same(run, hosts):
    result = run(object_info, dict(kind="BareMetalHost", namespace=hosts["ns2"]), check=True)
    assert names(result, hosts) == ["ns2/node-0"]
