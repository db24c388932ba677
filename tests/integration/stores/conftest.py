"""The store contract suite and the module suites of tests/unit, run again on the kubernetes store against
the lab's real kube-apiserver: the same test functions (imported by this folder's test files), these fixtures.
"""

from __future__ import annotations

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.store.base import open_store
from tests.unit.modules.conftest import namespace


@pytest.fixture
def spec(lab, kube) -> dict:
    """Picklable options from which any process can open the same store (the admin kubeconfig)."""
    from lab.services import kube as kube_svc

    return {"kind": "kubernetes", "kubeconfig": str(kube_svc.kubeconfig_path(lab.cfg))}


@pytest.fixture
def store_spec(spec) -> dict:
    """The modules' ``store`` option (without namespace)."""
    return dict(spec)


@pytest.fixture
def store(spec):
    the_store = open_store(spec)
    yield the_store
    the_store.close()


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
