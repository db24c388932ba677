"""Fixtures for the remediation tests: a sqlite store, the lab's kube-apiserver as the workload API."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "capi"))

import pytest  # noqa: E402
from capi_fixtures import workload, workload_kubeconfig  # noqa: E402, F401


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
def wkube(workload, workload_kubeconfig):  # noqa: F811
    import yaml
    from kubernetes import client as k8s
    from kubernetes import config as kconfig

    api = k8s.CoreV1Api(kconfig.new_client_from_config_dict(yaml.safe_load(workload_kubeconfig)))
    created = []
    yield Kube(workload, api, created)
    for name in created:
        workload.delete_node(name)
