"""objects.apply without Ansible: the merge patch, and writers racing on one object."""

from __future__ import annotations

import multiprocessing

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils import objects
from ansible_collections.baremetal.capi.plugins.module_utils.errors import Forbidden
from ansible_collections.baremetal.capi.plugins.module_utils.store.base import open_store


@pytest.mark.parametrize(
    "target, patch, expected",
    [
        # RFC 7386 appendix A examples.
        ({"a": "b"}, {"a": "c"}, {"a": "c"}),
        ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
        ({"a": "b"}, {"a": None}, {}),
        ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
        ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
        ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
        ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
        ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
        (["a", "b"], ["c", "d"], ["c", "d"]),
        ({"a": "b"}, ["c"], ["c"]),
        ({"a": "foo"}, None, None),
        ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
        ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
        ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
    ],
)
def test_merge_patch_rfc7386(target, patch, expected):
    assert objects.merge_patch(target, patch) == expected


def _add_label(spec: dict, ns: str, key: str, queue) -> None:
    store = open_store(spec)
    try:
        obj, kind = objects.build(kind="ConfigMap", name="shared", namespace=ns, labels={key: "yes"})
        changed, _before, after, _method = objects.apply(store, obj, kind)
        queue.put((key, changed, None))
    except Exception as exc:  # reported to the parent, which fails the test
        queue.put((key, False, repr(exc)))
    finally:
        store.close()


def test_racing_patches_lose_nothing(store_spec, store, ns):
    """8 processes patch different labels onto one object at once: every label lands."""
    obj, kind = objects.build(kind="ConfigMap", name="shared", namespace=ns, definition={"data": {"k": "v"}})
    objects.apply(store, obj, kind)
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    keys = [f"writer-{i}" for i in range(8)]
    procs = [ctx.Process(target=_add_label, args=(store_spec, ns, key, queue)) for key in keys]
    for proc in procs:
        proc.start()
    results = [queue.get(timeout=120) for _ in procs]
    for proc in procs:
        proc.join(timeout=60)
    assert [r for r in results if r[2]] == []
    assert all(changed for _key, changed, _err in results)
    stored = store.get("ConfigMap", "shared", ns)
    assert stored["metadata"]["labels"] == {key: "yes" for key in keys}
    assert stored["data"] == {"k": "v"}


def test_new_finalizer_on_deleting_object_is_refused_in_check_mode_too(store, ns):
    fins = {"metadata": {"finalizers": ["example.com/a"]}}
    obj, kind = objects.build(kind="Cluster", name="c", namespace=ns, definition=fins)
    objects.apply(store, obj, kind)
    store.delete("Cluster", "c", ns)
    more = {"metadata": {"finalizers": ["example.com/a", "example.com/b"]}}
    obj, kind = objects.build(kind="Cluster", name="c", namespace=ns, definition=more)
    with pytest.raises(Forbidden):
        objects.apply(store, obj, kind, check=True)
    with pytest.raises(Forbidden):
        objects.apply(store, obj, kind)
    assert store.get("Cluster", "c", ns)["metadata"]["finalizers"] == ["example.com/a"]
    # Let it go, so the namespace can be removed.
    gone, kind = objects.build(kind="Cluster", name="c", namespace=ns, definition={"metadata": {"finalizers": None}})
    assert objects.apply(store, gone, kind)[0] is True
