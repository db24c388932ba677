"""The store contract suite, on the sqlite store in a temp dir.

The same test functions run against the kubernetes store on the lab's real kube-apiserver in
tests/integration/stores (its conftest gives ``spec`` / ``store`` / ``ns`` for that store).
"""

from __future__ import annotations

import uuid

import pytest


@pytest.fixture
def spec(tmp_path) -> dict:
    """Picklable options from which any process can open the same store."""
    return {"kind": "sqlite", "path": str(tmp_path / "state.db")}


@pytest.fixture
def store(spec):
    from ansible_collections.baremetal.capi.plugins.module_utils.store.base import open_store

    s = open_store(spec)
    yield s
    s.close()


@pytest.fixture
def ns(store):
    name = f"t-{uuid.uuid4().hex[:10]}"
    yield name
    from ansible_collections.baremetal.capi.plugins.module_utils.errors import NotFound

    try:
        store.delete("Namespace", name)
    except NotFound:
        pass
