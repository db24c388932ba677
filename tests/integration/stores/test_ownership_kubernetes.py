"""tests/unit/store/test_ownership.py on the kubernetes store (this folder's conftest), with real managedFields."""

import json

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.errors import Forbidden
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta, ownership
from tests.unit.store.test_ownership import *  # noqa: F403 - the same tests, collected here with the kubernetes fixtures
from tests.unit.store.test_ownership import upstream_writes


def test_the_guard_of_an_object_read_before_costs_no_request(store, ns):
    store.create(meta.new("ConfigMap", "cm", ns, annotations={"a": "1"}))
    sent = []
    send = store._send

    def counting(method, url, *args, **kwargs):
        sent.append(method)
        return send(method, url, *args, **kwargs)

    store._send = counting
    cm = store.get("ConfigMap", "cm", ns)
    cm["data"] = {"k": "v"}
    store.update(cm)
    assert sent == ["GET", "PUT"]
    # The API server records the collection's writes under its own field manager.
    raw = json.loads(store.dyn.request("GET", f"/api/v1/namespaces/{ns}/configmaps/cm", serialize=False).data)
    assert ownership.FIELD_MANAGER in ownership.managers(raw)

    # An object this store has not read: one read for the guard, then the refusal; nothing written.
    upstream_writes(store, "ConfigMap", "cm", ns)
    store._seen.clear()
    sent.clear()
    with pytest.raises(Forbidden, match=f"ConfigMap {ns}/cm: refusing to delete it"):
        store.delete("ConfigMap", "cm", ns)
    assert sent == ["GET"]
