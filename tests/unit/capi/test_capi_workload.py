"""The workload client: a kubeconfig Secret in sqlite, and what an unreachable API becomes (no socket opened)."""

from __future__ import annotations

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.capi import workload as wl
from ansible_collections.baremetal.capi.plugins.module_utils.errors import NotFound

# A kubeconfig whose API server is never there (port 1).
UNREACHABLE = """
apiVersion: v1
kind: Config
clusters: [{name: x, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: x, user: u}}]
current-context: x
"""


def test_missing_secret_is_not_found(store):
    with pytest.raises(NotFound):
        wl.client_for(store, "nope", "default")


def test_unreachable_api_requeues(monkeypatch):
    """A refused connection is a requeue naming the server. The refusal is urllib3's own connect failing (what
    ``connection refused`` raises there), so the test opens no socket: tests/unit is hermetic."""
    import urllib3.util.connection

    attempts = []

    def refused(address, *args, **kwargs):
        attempts.append(address)
        raise ConnectionRefusedError(111, "Connection refused")

    monkeypatch.setattr(urllib3.util.connection, "create_connection", refused)
    client = wl.cached_client(UNREACHABLE)
    with pytest.raises(wl.WorkloadUnavailable, match=r"workload API https://127\.0\.0\.1:1 unreachable: .*refused"):
        client.list_nodes()
    assert attempts and all(a == ("127.0.0.1", 1) for a in attempts)


def test_a_refusal_is_typed_forbidden_and_other_answers_are_not():
    """A caller (reboot remediation's Node restore) tells a 403 by its type, never by the message text."""
    from kubernetes.client.exceptions import ApiException

    from ansible_collections.baremetal.capi.plugins.module_utils.errors import CapiError, Forbidden

    client = wl.cached_client(UNREACHABLE)

    def answer(status):
        def fn(**_kw):
            raise ApiException(status=status, reason="no")

        return fn

    with pytest.raises(Forbidden, match="answered 403"):
        client._call("patch Node n", answer(403))
    with pytest.raises(CapiError, match="answered 500") as info:
        client._call("patch Node n", answer(500))
    assert not isinstance(info.value, Forbidden)


def test_bootstrap_tokens_make_the_workload_client_at_the_first_token_call(monkeypatch):
    """A run whose machines all have Nodes touches no bootstrap token, so it builds no workload client (and
    does not import the kubernetes client for it); the first token call builds it, once."""
    from ansible_collections.baremetal.capi.plugins.module_utils.bootstrap import cluster as bootstrap_cluster
    from ansible_collections.baremetal.capi.plugins.module_utils.errors import Requeue

    made = []

    def cached_client(text):
        made.append(text)
        return wl.WorkloadClient(text)

    monkeypatch.setattr(wl, "cached_client", cached_client)
    initialized = {
        "metadata": {"name": "c", "namespace": "ns"},
        "status": {"initialization": {"controlPlaneInitialized": True}},
    }
    assert bootstrap_cluster.workload_tokens(None, {"metadata": initialized["metadata"]}, UNREACHABLE) is None
    tokens = bootstrap_cluster.workload_tokens(None, initialized, UNREACHABLE)
    assert tokens is not None and made == []

    import urllib3.util.connection

    def refused(address, *args, **kwargs):
        raise ConnectionRefusedError(111, "Connection refused")

    monkeypatch.setattr(urllib3.util.connection, "create_connection", refused)
    for _ in range(2):
        with pytest.raises(Requeue, match="workload API unreachable"):
            tokens.expiration("abcdef")
    assert made == [UNREACHABLE]


def test_bootstrap_tokens_over_an_unusable_kubeconfig_fail_instead_of_waiting():
    from ansible_collections.baremetal.capi.plugins.module_utils.bootstrap import cluster as bootstrap_cluster
    from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid

    initialized = {
        "metadata": {"name": "c", "namespace": "ns"},
        "status": {"initialization": {"controlPlaneInitialized": True}},
    }
    tokens = bootstrap_cluster.workload_tokens(None, initialized, "{clusters: []}")
    with pytest.raises(Invalid, match="unusable workload kubeconfig"):
        tokens.expiration("abcdef")
