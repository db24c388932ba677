"""Fixtures for the Metal3 data and IPAM tests: a real sqlite store and the objects the flow reads."""

from __future__ import annotations

import json

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.baremetal.capi.plugins.module_utils.store.sqlite import SqliteStore


@pytest.fixture
def store(tmp_path):
    the_store = SqliteStore(str(tmp_path / "state.db"))
    yield the_store
    the_store.close()


@pytest.fixture
def run(capsys, store):
    """``run(module, args, check=False)``: main() in-process as Ansible runs it; the JSON result."""

    def _run(module, args: dict, *, check: bool = False, diff: bool = False) -> dict:
        args = dict(args)
        args.setdefault("store", {"path": store.path})
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
        return result

    return _run
