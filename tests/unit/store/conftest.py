"""The store contract suite runs unchanged against every store implementation.

``BMCAPI_STORES`` (default ``sqlite``; tests/run_integration.sh runs the suite again with
``kubernetes``) picks the implementations.
The kubernetes store runs against the lab's real kube-apiserver; each test
gets its own namespace there, deleted afterwards.
"""

from __future__ import annotations

import os
import uuid

import pytest

STORES = [s for s in os.environ.get("BMCAPI_STORES", "sqlite").split(",") if s]


def store_spec(kind: str, tmp_path, lab) -> dict:
    """Picklable options from which any process can open the same store."""
    if kind == "sqlite":
        return {"kind": "sqlite", "path": str(tmp_path / "state.db")}
    lab.need("kube")
    from lab.services import kube

    return {"kind": "kubernetes", "kubeconfig": str(kube.kubeconfig_path(lab.cfg))}


@pytest.fixture(params=STORES)
def spec(request, tmp_path):
    if request.param == "kubernetes":
        request.getfixturevalue("kube")  # starts the API server and prints its version
        return store_spec("kubernetes", tmp_path, request.getfixturevalue("lab"))
    return store_spec("sqlite", tmp_path, None)


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
