"""Fixtures for module tests: a real store, and main() run in-process as Ansible runs it.

Like the store contract suite, the tests run against every store named in
``BMCAPI_STORES`` (default ``sqlite,kubernetes``): sqlite in a temp dir, and the
kubernetes store against the lab's kube-apiserver.  Each test works in
namespaces of its own (``ns``, ``ns2``), removed afterwards, and the module's
``store.namespace`` is ``ns`` so a task that names no namespace stays in it.
"""

from __future__ import annotations

import json
import os
import uuid

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.baremetal.capi.plugins.module_utils.errors import NotFound
from ansible_collections.baremetal.capi.plugins.module_utils.store.base import open_store

STORES = [s for s in os.environ.get("BMCAPI_STORES", "sqlite,kubernetes").split(",") if s]


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
def run(capsys, store_spec, ns):
    """``run(module, args, check=False, diff=False)``: the module's JSON result (``failed`` set if it failed)."""

    def _run(module, args: dict, *, check: bool = False, diff: bool = False) -> dict:
        args = dict(args)
        args.setdefault("store", dict(store_spec, namespace=ns))
        if check:
            args["_ansible_check_mode"] = True
        if diff:
            args["_ansible_diff"] = True
        capsys.readouterr()
        with patch_module_args(args), pytest.raises(SystemExit) as exited:
            module.main()
        out = capsys.readouterr().out
        result = json.loads(out)
        assert (exited.value.code == 0) == (not result.get("failed")), out
        result["_stdout"] = out
        return result

    return _run
