"""Shared test set-up: the collection on sys.path, and the lab on demand.

The collection is importable as ``ansible_collections.baremetal.capi`` through
a link ``build/ansible_collections/baremetal/capi`` -> the work tree.

Integration tests ask for lab services with ``lab.need("kube")``; a service
this test run started is stopped (by PID) when the run ends, one that was
already running is left as it was.
"""

from __future__ import annotations

import os
import re
import secrets
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
_COLL = REPO / "build" / "ansible_collections" / "baremetal" / "capi"
if not _COLL.exists():
    _COLL.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.symlink(REPO, _COLL)
    except FileExistsError:
        pass
for path in (str(REPO / "build"), str(REPO)):
    if path not in sys.path:
        sys.path.insert(0, path)


class Lab:
    def __init__(self):
        from lab import config

        self.cfg = config.load()
        self.started: list[str] = []
        self.info: dict[str, dict] = {}

    def need(self, *names: str) -> Lab:
        from lab import bringup

        bringup.prepare(self.cfg)
        for name in names:
            if name in self.info:
                continue
            _info, started = bringup.start(self.cfg, name)
            if started:  # ours to stop at the end
                self.started.append(name)
            self.info[name] = bringup.service(name).status(self.cfg)
        return self

    def stop_started(self):
        import importlib

        for name in reversed(self.started):
            importlib.import_module(f"lab.services.{name}").down(self.cfg)
        self.started.clear()


@pytest.fixture
def store(tmp_path):
    """A fresh sqlite store of this test's own (tests of both stores define their own ``store``)."""
    from ansible_collections.baremetal.capi.plugins.module_utils.store.sqlite import SqliteStore

    the_store = SqliteStore(str(tmp_path / "state.db"))
    yield the_store
    the_store.close()


@pytest.fixture
def module_store(store) -> dict:
    """The ``store`` option ``run`` gives modules (a test directory may point it elsewhere)."""
    return {"path": store.path}


@pytest.fixture
def run(capsys, module_store):
    """``run(module, args, check=False, diff=False)``: main() in-process as Ansible runs it; the JSON result,
    with what the module printed in ``_stdout``."""
    import json

    from ansible.module_utils.testing import patch_module_args

    def _run(module, args: dict, *, check: bool = False, diff: bool = False) -> dict:
        args = dict(args)
        args.setdefault("store", dict(module_store))
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


@pytest.fixture(scope="session")
def lab():
    the_lab = Lab()
    try:
        yield the_lab
    finally:
        if os.environ.get("BMCAPI_KEEP_LAB") != "1":
            the_lab.stop_started()


# --- the lab's Kubernetes API (management cluster) -----------------------------------
# The API server is started once per run; each test that asks for ``kube_namespace``
# gets a namespace of its own, deleted afterwards.

_SEEN: dict[str, str] = {}


@pytest.fixture(scope="session")
def kube(lab, request):
    """The lab's Kubernetes API: its status dict (server, version, kubeconfig); prints the version once."""
    lab.need("kube")
    info = lab.info["kube"]
    _SEEN["kube"] = f"kube-apiserver {info['version']} at {info['server']} (kubeconfig {info['kubeconfig']})"
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if capture is not None and reporter is not None:
        with capture.global_and_fixture_disabled():
            reporter.write_line(f"\n{_SEEN['kube']}")
    return info


def pytest_terminal_summary(terminalreporter):
    if "kube" in _SEEN:
        terminalreporter.write_line(f"ran against {_SEEN['kube']}")


@pytest.fixture(scope="session")
def kube_client(lab, kube):
    """A ``kubernetes`` ApiClient for the lab's admin user."""
    from lab.services import kube as kube_svc

    client = kube_svc.api_client(lab.cfg)
    yield client
    client.close()


@pytest.fixture
def kube_namespace(kube_client, request):
    """A fresh namespace for this test, deleted (with whatever the test left in it) afterwards."""
    from kubernetes import client as k

    from lab.services import kube as kube_svc

    base = re.sub(r"[^a-z0-9-]+", "-", request.node.name.lower()).strip("-")[:40].strip("-")
    name = f"t-{base}-{secrets.token_hex(3)}"
    k.CoreV1Api(kube_client).create_namespace({"metadata": {"name": name, "labels": {"baremetal.capi/test": "true"}}})
    yield name
    # Not waited for: the namespace controller finishes it in the background.
    kube_svc.delete_namespace(kube_client, name)


@pytest.fixture
def kube_store(lab, kube):
    """The kubernetes store on the lab's API server (admin kubeconfig)."""
    from ansible_collections.baremetal.capi.plugins.module_utils.store.kubernetes import KubernetesStore
    from lab.services import kube as kube_svc

    store = KubernetesStore(kubeconfig=str(kube_svc.kubeconfig_path(lab.cfg)))
    yield store
    store.close()
