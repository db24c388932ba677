"""The store protocol's contract (store/base.py), for every implementation."""

from __future__ import annotations

import base64
import multiprocessing
import time

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.errors import (
    AlreadyExists,
    Conflict,
    Forbidden,
    Invalid,
    InvalidSelector,
    NotFound,
    UnknownKind,
)
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta
from ansible_collections.baremetal.capi.plugins.module_utils.store import common


def eventually(fn, timeout=60.0, interval=0.25):
    """Poll ``fn`` until it returns a truthy value (Kubernetes' GC runs in the background)."""
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(interval)


def gone(store, kind, name, ns):
    def check():
        try:
            store.get(kind, name, ns)
        except NotFound:
            return True
        return False

    return check


def test_create_fills_metadata_and_get_returns_it(store, ns):
    created = store.create(meta.new("Cluster", "c1", ns, spec={"paused": False}, labels={"a": "1"}))
    md = created["metadata"]
    assert md["uid"] and md["resourceVersion"] and md["creationTimestamp"]
    assert md["generation"] == 1
    assert created["apiVersion"] == "cluster.x-k8s.io/v1beta2"
    got = store.get("Cluster", "c1", ns)
    assert got["metadata"]["uid"] == md["uid"]
    assert got["spec"] == {"paused": False}
    assert got["metadata"]["labels"] == {"a": "1"}


def test_create_twice_is_already_exists_and_missing_is_not_found(store, ns):
    store.create(meta.new("ConfigMap", "cm", ns))
    with pytest.raises(AlreadyExists):
        store.create(meta.new("ConfigMap", "cm", ns))
    with pytest.raises(NotFound):
        store.get("ConfigMap", "nope", ns)
    with pytest.raises(NotFound):
        store.delete("ConfigMap", "nope", ns)


def test_generate_name(store, ns):
    obj = meta.new("ConfigMap", None, ns)
    del obj["metadata"]["name"]
    obj["metadata"]["generateName"] = "gen-"
    created = store.create(obj)
    assert created["metadata"]["name"].startswith("gen-") and len(created["metadata"]["name"]) == 9


def test_custom_resource_drops_status_on_create_node_keeps_it(store, ns):
    created = store.create(dict(meta.new("BareMetalHost", "h1", ns, spec={"online": False}), status={"x": 1}))
    assert "status" not in created or not created["status"].get("x")
    node = meta.new("Node", f"{ns}-node", None, spec={})
    node["status"] = {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ok"}]}
    created_node = store.create(node)
    try:
        assert created_node["status"]["conditions"][0]["type"] == "Ready"
    finally:
        store.delete("Node", f"{ns}-node")


def test_secret_string_data_is_stored_as_base64_data(store, ns):
    secret = meta.new("Secret", "s", ns)
    secret["stringData"] = {"value": "hello"}
    secret["type"] = "Opaque"
    store.create(secret)
    got = store.get("Secret", "s", ns)
    assert base64.b64decode(got["data"]["value"]) == b"hello"
    assert "stringData" not in got


SELECTOR_CASES = [
    ({"matchLabels": {"role": "cp"}}, ["a", "b"]),
    ({"matchExpressions": [{"key": "role", "operator": "In", "values": ["cp", "worker"]}]}, ["a", "b", "c"]),
    ({"matchExpressions": [{"key": "role", "operator": "NotIn", "values": ["cp"]}]}, ["c", "d"]),
    ({"matchExpressions": [{"key": "zone", "operator": "Exists"}]}, ["a", "c"]),
    ({"matchExpressions": [{"key": "zone", "operator": "DoesNotExist"}]}, ["b", "d"]),
    ({"matchExpressions": [{"key": "role", "operator": "in", "values": ["worker"]}]}, ["c"]),
    ({"matchExpressions": [{"key": "role", "operator": "notin", "values": ["worker"]}]}, ["a", "b", "d"]),
    ({"matchExpressions": [{"key": "role", "operator": "=", "values": ["cp"]}]}, ["a", "b"]),
    ({"matchExpressions": [{"key": "role", "operator": "==", "values": ["cp"]}]}, ["a", "b"]),
    ({"matchExpressions": [{"key": "role", "operator": "!=", "values": ["cp"]}]}, ["c", "d"]),
    ({"matchExpressions": [{"key": "zone", "operator": "exists"}]}, ["a", "c"]),
    ({"matchExpressions": [{"key": "zone", "operator": "!"}]}, ["b", "d"]),
    ({"matchExpressions": [{"key": "cpus", "operator": "gt", "values": ["8"]}]}, ["b", "c"]),
    ({"matchExpressions": [{"key": "cpus", "operator": "lt", "values": ["16"]}]}, ["a", "b"]),
    ({"matchLabels": {"role": "cp"}, "matchExpressions": [{"key": "zone", "operator": "Exists"}]}, ["a"]),
    ("role=cp", ["a", "b"]),
    ("role==cp,zone", ["a"]),
    ("role!=cp", ["c", "d"]),
    ("role in (cp, worker),!zone", ["b"]),
    ("role notin (cp),zone", ["c"]),
    ("cpus gt 8,cpus lt 32", ["b", "c"]),
    ("", ["a", "b", "c", "d"]),
    (None, ["a", "b", "c", "d"]),
]


@pytest.fixture
def labelled(store, ns):
    for name, labels in {
        "a": {"role": "cp", "zone": "z1", "cpus": "8"},
        "b": {"role": "cp", "cpus": "12"},
        "c": {"role": "worker", "zone": "z2", "cpus": "16"},
        "d": {"other": "x"},
    }.items():
        store.create(meta.new("BareMetalHost", name, ns, spec={}, labels=labels))
    return ns


@pytest.mark.parametrize("selector,expected", SELECTOR_CASES, ids=[str(c[0]) for c in SELECTOR_CASES])
def test_list_with_every_selector_form(store, labelled, selector, expected):
    got = [o["metadata"]["name"] for o in store.list("BareMetalHost", labelled, selector)]
    assert got == expected


def test_list_with_field_filters_and_selectors_together(store, labelled):
    ns = labelled
    for name, consumer in (("a", "m1"), ("c", "m2")):
        host = store.get("BareMetalHost", name, ns)
        host["spec"]["consumerRef"] = {"kind": "Metal3Machine", "name": consumer, "namespace": ns}
        store.update(host)

    def names(selector=None, fields=None):
        return [o["metadata"]["name"] for o in store.list("BareMetalHost", ns, selector, fields=fields)]

    assert names(fields={"spec.consumerRef.name": None}) == ["b", "d"]
    assert names(fields={"spec.consumerRef.name": "m2"}) == ["c"]
    assert names("role=cp", fields={"spec.consumerRef.name": None}) == ["b"]
    assert names("zone", fields={"spec.consumerRef.name": "m1", "spec.consumerRef.kind": "Metal3Machine"}) == ["a"]
    assert names(fields={"spec.consumerRef.name": "nobody"}) == []
    with pytest.raises(Invalid) as exc:
        names(fields={"spec..name": None})
    assert exc.value.field == "fields"


@pytest.fixture
def varied(store, ns):
    """Hosts whose fields hold what the field filters tell apart: absent, null-like, empty and set values."""
    bodies = {
        "h-absent": ({}, {}, {}),
        "h-empty-ref": ({"consumerRef": {}}, {"errorMessage": ""}, {"x.io/a": "v"}),
        "h-ref": (
            {"consumerRef": {"kind": "Metal3Machine", "name": "m1"}},
            {"provisioning": {"state": "provisioned"}},
            {},
        ),
        "h-error": ({}, {"errorMessage": "boom", "provisioning": {"state": "ready"}}, {"x.io/paused": ""}),
        "h-ready": ({"online": False}, {"provisioning": {"state": "ready"}}, {"x.io/b": "v"}),
        "h-avail": ({"online": True}, {"provisioning": {"state": "available"}, "errorMessage": ""}, {}),
    }
    for name, (spec, status, notes) in bodies.items():
        obj = store.create(meta.new("BareMetalHost", name, ns, spec=spec, labels={"n": name[2:]}))
        if notes:
            obj["metadata"]["annotations"] = notes
            obj = store.update(obj)
        if status:
            obj["status"] = status
            store.update_status(obj)
    return ns


FIELD_CASES = [
    ({"spec.consumerRef": common.UNSET}, ["h-absent", "h-avail", "h-empty-ref", "h-error", "h-ready"]),
    ({"status.errorMessage": common.UNSET}, ["h-absent", "h-avail", "h-empty-ref", "h-ready", "h-ref"]),
    ({"spec.online": common.UNSET}, ["h-absent", "h-empty-ref", "h-error", "h-ready", "h-ref"]),
    ({"status.errorMessage": None}, ["h-absent", "h-ready", "h-ref"]),
    ({"status.errorMessage": ""}, ["h-avail", "h-empty-ref"]),
    ({"status.provisioning.state": ("ready", "available")}, ["h-avail", "h-error", "h-ready"]),
    ({"status.provisioning.state": ("ready", None)}, ["h-absent", "h-empty-ref", "h-error", "h-ready"]),
    (
        {("metadata", "annotations", "x.io/paused"): common.ABSENT},
        ["h-absent", "h-avail", "h-empty-ref", "h-ready", "h-ref"],
    ),
    ({("metadata", "annotations", "x.io/paused"): ""}, ["h-error"]),
    # every object carries the collection's marker annotation (model/ownership.py), so a map key absent is shown
    # on consumerRef: h-empty-ref's empty consumerRef is there (UNSET matches it, ABSENT does not)
    ({("spec", "consumerRef"): common.ABSENT}, ["h-absent", "h-avail", "h-error", "h-ready"]),
    ({"spec.online": True}, ["h-avail"]),
    (
        {
            "spec.consumerRef": common.UNSET,
            "status.errorMessage": common.UNSET,
            "status.provisioning.state": ("ready", "available"),
        },
        ["h-avail", "h-ready"],
    ),  # fmt: skip
]


@pytest.mark.parametrize("fields,expected", FIELD_CASES, ids=[str(c[0]) for c in FIELD_CASES])
def test_list_and_list_keys_with_field_filters(store, varied, fields, expected):
    """Equality, one of, UNSET (absent, null or empty: Go's zero value) and ABSENT (the key is not there), on
    dotted paths and on tuples of keys (annotation names have dots); list_keys names what list returns."""
    got = [o["metadata"]["name"] for o in store.list("BareMetalHost", varied, fields=fields)]
    assert got == expected
    assert store.list_keys("BareMetalHost", varied, fields=fields) == [(varied, n) for n in expected]


@pytest.mark.parametrize("selector,expected", SELECTOR_CASES, ids=[str(c[0]) for c in SELECTOR_CASES])
def test_list_keys_with_every_selector_form(store, labelled, selector, expected):
    assert store.list_keys("BareMetalHost", labelled, selector) == [(labelled, n) for n in expected]


def test_list_keys_across_namespaces_and_of_cluster_scoped_kinds(store, ns):
    other = ns + "-b"
    try:
        for namespace in (other, ns):
            for name in ("y", "x"):
                store.create(meta.new("ConfigMap", name, namespace, labels={"t": ns}))
        assert store.list_keys("ConfigMap", None, {"matchLabels": {"t": ns}}) == [
            (ns, "x"), (ns, "y"), (other, "x"), (other, "y")
        ]  # fmt: skip
        assert (ns, "") not in store.list_keys("Namespace")
        assert ("", ns) in store.list_keys("Namespace")
    finally:
        store.delete("Namespace", other)


def test_bad_field_filters_are_refused_naming_the_filter(store, ns):
    for fields in (
        {("metadata", 'a"b'): None},
        {(): None},
        {"spec.x": 1.5},
        {"spec.x": ()},
        {"spec.x": ({"a": 1},)},
        {"spec.x": ["a"]},
    ):
        with pytest.raises(Invalid) as exc:
            store.list_keys("BareMetalHost", ns, fields=fields)
        assert exc.value.field == "fields"


def test_a_list_longer_than_a_page_comes_whole_and_in_order(store, ns):
    if hasattr(store, "list_page"):
        store.list_page = 2  # the kubernetes store reads in pages (limit/continue), as kubectl does
    for i in (4, 0, 3, 1, 2):
        store.create(meta.new("ConfigMap", f"cm-{i}", ns, labels={"n": str(i % 2)}))
    assert [o["metadata"]["name"] for o in store.list("ConfigMap", ns)] == [f"cm-{i}" for i in range(5)]
    assert [o["metadata"]["name"] for o in store.list("ConfigMap", ns, "n=0")] == ["cm-0", "cm-2", "cm-4"]


def test_list_by_namespace_and_across_namespaces(store, ns):
    other = ns + "-b"
    try:
        store.create(meta.new("ConfigMap", "x", ns))
        store.create(meta.new("ConfigMap", "y", other))
        assert [o["metadata"]["name"] for o in store.list("ConfigMap", ns)] == ["x"]
        both = {(o["metadata"]["namespace"], o["metadata"]["name"]) for o in store.list("ConfigMap", None)}
        assert {(ns, "x"), (other, "y")} <= both
    finally:
        store.delete("Namespace", other)


def test_update_with_stale_resource_version_conflicts(store, ns):
    first = store.create(meta.new("Metal3Machine", "m", ns, spec={"a": 1}))
    stale = meta.deepcopy(first)
    first["spec"]["a"] = 2
    second = store.update(first)
    assert int(second["metadata"]["resourceVersion"]) > int(first["metadata"]["resourceVersion"])
    stale["spec"]["a"] = 3
    with pytest.raises(Conflict):
        store.update(stale)
    assert store.get("Metal3Machine", "m", ns)["spec"]["a"] == 2


def test_generation_moves_with_spec_not_metadata_and_no_op_keeps_version(store, ns):
    obj = store.create(meta.new("Metal3Machine", "m", ns, spec={"a": 1}))
    same = store.update(meta.deepcopy(obj))
    assert same["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"]
    obj["metadata"]["labels"] = {"x": "y"}
    obj = store.update(obj)
    assert obj["metadata"]["generation"] == 1
    obj["spec"]["a"] = 2
    obj = store.update(obj)
    assert obj["metadata"]["generation"] == 2


def test_status_and_spec_are_written_separately(store, ns):
    obj = store.create(meta.new("Metal3Machine", "m", ns, spec={"a": 1}))
    obj["status"] = {"ready": True}
    obj["spec"]["a"] = 99
    after = store.update_status(obj)
    assert after["status"] == {"ready": True}
    assert after["spec"] == {"a": 1}
    after["spec"]["a"] = 2
    after["status"] = {"ready": False}
    again = store.update(after)
    assert again["spec"] == {"a": 2}
    assert again["status"] == {"ready": True}
    stale = meta.deepcopy(obj)
    stale["status"] = {"ready": "stale"}
    with pytest.raises(Conflict):
        store.update_status(stale)


def test_delete_with_finalizers_sets_deletion_timestamp_until_last_goes(store, ns):
    store.create(meta.new("Metal3Machine", "m", ns, spec={}, finalizers=["a.example.com/f", "b.example.com/f"]))
    deleting = store.delete("Metal3Machine", "m", ns)
    assert deleting["metadata"]["deletionTimestamp"]
    got = store.get("Metal3Machine", "m", ns)
    assert got["metadata"]["deletionTimestamp"]
    got["metadata"]["finalizers"].append("c.example.com/new")
    with pytest.raises(Forbidden):
        store.update(got)
    got = store.get("Metal3Machine", "m", ns)
    meta.remove_finalizer(got, "a.example.com/f")
    got = store.update(got)
    assert store.get("Metal3Machine", "m", ns)["metadata"]["finalizers"] == ["b.example.com/f"]
    meta.remove_finalizer(got, "b.example.com/f")
    store.update(got)
    eventually(gone(store, "Metal3Machine", "m", ns))


def test_deleting_an_owner_deletes_its_dependents(store, ns):
    owner = store.create(meta.new("Cluster", "c", ns, spec={}))
    other = store.create(meta.new("Cluster", "other", ns, spec={}))
    only = meta.new("Machine", "only-owned", ns, spec={"clusterName": "c"})
    meta.set_owner(only, owner, controller=True)
    store.create(only)
    shared = meta.new("Machine", "shared", ns, spec={"clusterName": "c"})
    meta.set_owner(shared, owner)
    meta.set_owner(shared, other)
    store.create(shared)
    grandchild = meta.new("Secret", "grandchild", ns)
    meta.set_owner(grandchild, store.get("Machine", "only-owned", ns))
    store.create(grandchild)

    store.delete("Cluster", "c", ns)
    eventually(gone(store, "Cluster", "c", ns))
    eventually(gone(store, "Machine", "only-owned", ns))
    eventually(gone(store, "Secret", "grandchild", ns))

    def shared_lost_dangling_owner():
        refs = store.get("Machine", "shared", ns)["metadata"].get("ownerReferences") or []
        return [r["name"] for r in refs] == ["other"]

    eventually(shared_lost_dangling_owner)


def _race_worker(spec, ns, rv, me, barrier, results):
    from ansible_collections.baremetal.capi.plugins.module_utils.store.base import open_store

    store = open_store(spec)
    obj = store.get("BareMetalHost", "contested", ns)
    obj["metadata"]["resourceVersion"] = rv
    obj["spec"]["consumerRef"] = {"kind": "Metal3Machine", "name": f"m{me}", "namespace": ns}
    barrier.wait()
    try:
        store.update(obj)
        results.put((me, "won"))
    except Conflict:
        results.put((me, "conflict"))
    except Exception as exc:  # reported, and fails the test below
        results.put((me, f"error: {type(exc).__name__}: {exc}"))
    finally:
        store.close()


@pytest.mark.parametrize("processes", [8, 16])
def test_processes_racing_at_one_resource_version_exactly_one_wins(store, spec, ns, processes):
    created = store.create(meta.new("BareMetalHost", "contested", ns, spec={"online": True}))
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(processes)
    results = ctx.Queue()
    procs = [
        ctx.Process(target=_race_worker, args=(spec, ns, created["metadata"]["resourceVersion"], i, barrier, results))
        for i in range(processes)
    ]
    for p in procs:
        p.start()
    outcomes = dict(results.get(timeout=180) for _ in procs)
    for p in procs:
        p.join(timeout=60)
    winners = [me for me, what in outcomes.items() if what == "won"]
    assert sorted(outcomes.values()).count("conflict") == processes - 1, outcomes
    assert len(winners) == 1
    final = store.get("BareMetalHost", "contested", ns)
    assert final["spec"]["consumerRef"]["name"] == f"m{winners[0]}"


def test_bad_input_raises_typed_errors_with_clear_messages(store, ns):
    with pytest.raises(UnknownKind, match="unknown kind 'Gizmo'"):
        store.get("Gizmo", "x", ns)
    with pytest.raises(UnknownKind, match="ambiguous"):
        store.list("IPAddress", ns)
    nameless = meta.new("ConfigMap", "x", ns)
    del nameless["metadata"]["name"]
    with pytest.raises(Invalid, match="metadata.name: name is required"):
        store.create(nameless)
    with pytest.raises(Invalid, match="metadata.name"):
        store.create(meta.new("ConfigMap", "Not_A_Name", ns))
    with pytest.raises(InvalidSelector, match="label_selector"):
        store.list("BareMetalHost", ns, "role in (cp")
    with pytest.raises(InvalidSelector):
        store.list("BareMetalHost", ns, {"matchExpressions": [{"key": "a", "operator": "Sometimes"}]})
    with pytest.raises(Invalid, match=r"metadata.labels\[bad\]"):
        store.create(meta.new("ConfigMap", "y", ns, labels={"bad": "no spaces allowed"}))
    with pytest.raises(NotFound):
        store.get("ConfigMap", "y", ns)
