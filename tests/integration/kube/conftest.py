"""Fixtures for tests against the lab's Kubernetes API.

The API server is started once per run (``lab.need("kube")``); each test that
asks for ``kube_namespace`` gets a namespace of its own, deleted afterwards,
so tests do not pay the start-up and do not see each other's objects.
"""

from __future__ import annotations

import re
import secrets

import pytest

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
