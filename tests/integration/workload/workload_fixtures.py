"""The lab's kube-apiserver as a workload API server: the fixtures of the tests that need one (moved out of
tests/unit, which stays hermetic)."""

from __future__ import annotations

import uuid

import pytest


@pytest.fixture(scope="session")
def workload_kubeconfig(lab) -> str:
    """The admin kubeconfig of the lab's kube-apiserver (lab/services/kube.py writes it to .lab/kubeconfig)."""
    lab.need("kube")
    return (lab.cfg.root / "kubeconfig").read_text()


@pytest.fixture
def workload(workload_kubeconfig):
    """A WorkloadClient on the lab API server; Nodes it creates are deleted afterwards."""
    import yaml
    from kubernetes import client as k8s
    from kubernetes import config as kconfig

    from ansible_collections.baremetal.capi.plugins.module_utils.capi import workload as wl

    client = wl.cached_client(workload_kubeconfig)
    api = k8s.CoreV1Api(kconfig.new_client_from_config_dict(yaml.safe_load(workload_kubeconfig)))
    created: list[str] = []

    def make_node(name=None, labels=None, provider_id=None, taints=None, ready="True"):
        name = name or f"n-{uuid.uuid4().hex[:10]}"
        body = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": labels or {}},
            "spec": {},
        }
        if provider_id:
            body["spec"]["providerID"] = provider_id
        if taints is not None:
            body["spec"]["taints"] = taints
        api.create_node(body)
        created.append(name)
        # The kubelet writes status; a test plays it.
        api.patch_node_status(
            name,
            {
                "status": {
                    "conditions": [{"type": "Ready", "status": ready, "reason": "KubeletReady", "message": ""}],
                    "nodeInfo": {"kubeletVersion": "v1.34.1", "machineID": name},
                }
            },
        )
        return client.get_node(name)

    client.make_node = make_node
    yield client
    for name in created:
        client.delete_node(name)


class Kube:
    """The workload client plus what a kubelet does (register a Node, post Ready) for the tests."""

    def __init__(self, client, api, created):
        self._client, self._api, self._created = client, api, created
        self.version = None  # set to pretend another API server version

    def __getattr__(self, attr):
        return getattr(self._client, attr)

    def server_version(self):
        return self.version or self._client.server_version()

    def create_raw(self, name, labels):
        self._api.create_node({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}})
        self._created.append(name)

    def set_ready(self, name, status):
        cond = {"type": "Ready", "status": status, "reason": "KubeletReady", "message": ""}
        self._api.patch_node_status(name, {"status": {"conditions": [cond]}})


@pytest.fixture
def wkube(workload, workload_kubeconfig):
    import yaml
    from kubernetes import client as k8s
    from kubernetes import config as kconfig

    api = k8s.CoreV1Api(kconfig.new_client_from_config_dict(yaml.safe_load(workload_kubeconfig)))
    created = []
    yield Kube(workload, api, created)
    for name in created:
        workload.delete_node(name)
