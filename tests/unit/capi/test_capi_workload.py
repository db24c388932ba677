"""The workload client against the lab's real kube-apiserver, reached through a kubeconfig Secret in sqlite."""

from __future__ import annotations

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.capi import workload as wl
from ansible_collections.baremetal.capi.plugins.module_utils.errors import NotFound


def test_missing_secret_is_not_found(store):
    with pytest.raises(NotFound):
        wl.client_for(store, "nope", "default")


def test_unreachable_api_requeues():
    text = """
apiVersion: v1
kind: Config
clusters: [{name: x, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: x, user: u}}]
current-context: x
"""
    client = wl.cached_client(text)
    with pytest.raises(wl.WorkloadUnavailable):
        client.list_nodes()
