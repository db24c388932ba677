"""Fixtures for module tests: a real store, and main() run in-process as Ansible runs it.

Like the store contract suite, the tests run against every store named in
``BMCAPI_STORES`` (default ``sqlite``; tests/run_integration.sh runs them again with ``kubernetes``):
sqlite in a temp dir, and the kubernetes store against the lab's kube-apiserver.  Each test works in
namespaces of its own (``ns``, ``ns2``), removed afterwards, and the module's
``store.namespace`` is ``ns`` so a task that names no namespace stays in it.
"""

from __future__ import annotations

import os
import uuid

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.errors import NotFound
from ansible_collections.baremetal.capi.plugins.module_utils.store.base import open_store

STORES = [s for s in os.environ.get("BMCAPI_STORES", "sqlite").split(",") if s]


@pytest.fixture(params=STORES)
def store_spec(request, tmp_path) -> dict:
    """The module's ``store`` option (without namespace): picklable, any process can open it."""
    if request.param == "kubernetes":
        lab = request.getfixturevalue("lab")
        lab.need("kube")
        from lab.services import kube

        return {"kind": "kubernetes", "kubeconfig": str(kube.kubeconfig_path(lab.cfg))}
    return {"kind": "sqlite", "path": str(tmp_path / "state.db")}


@pytest.fixture
def store(store_spec):
    """The same store the module writes to, to check the real state with."""
    the_store = open_store(store_spec)
    yield the_store
    the_store.close()


def _namespace(store):
    name = f"t-{uuid.uuid4().hex[:10]}"
    yield name
    try:
        store.delete("Namespace", name)
    except NotFound:
        pass


@pytest.fixture
def ns(store):
    yield from _namespace(store)


@pytest.fixture
def ns2(store):
    yield from _namespace(store)


@pytest.fixture
def module_store(store_spec, ns) -> dict:
    """Modules run on this test's store, in its namespace (``run`` is tests/conftest.py's)."""
    return dict(store_spec, namespace=ns)
