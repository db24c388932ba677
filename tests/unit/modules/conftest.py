"""Fixtures for module tests: a real sqlite store in a temp dir, and main() run in-process as Ansible runs it.

Each test works in namespaces of its own (``ns``, ``ns2``), removed afterwards, and the module's
``store.namespace`` is ``ns`` so a task that names no namespace stays in it.  The same test functions run
against the kubernetes store on the lab's kube-apiserver in tests/integration/stores.
"""

from __future__ import annotations

import uuid

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.errors import NotFound
from ansible_collections.baremetal.capi.plugins.module_utils.store.base import open_store


@pytest.fixture
def store_spec(tmp_path) -> dict:
    """The module's ``store`` option (without namespace): picklable, any process can open it."""
    return {"kind": "sqlite", "path": str(tmp_path / "state.db")}


@pytest.fixture
def store(store_spec):
    """The same store the module writes to, to check the real state with."""
    the_store = open_store(store_spec)
    yield the_store
    the_store.close()


def namespace(store):
    """A namespace name of this test's own, deleted (with what is in it) afterwards."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    yield name
    try:
        store.delete("Namespace", name)
    except NotFound:
        pass


@pytest.fixture
def ns(store):
    yield from namespace(store)


@pytest.fixture
def ns2(store):
    yield from namespace(store)


@pytest.fixture
def module_store(store_spec, ns) -> dict:
    """Modules run on this test's store, in its namespace (``run`` is tests/conftest.py's)."""
    return dict(store_spec, namespace=ns)
