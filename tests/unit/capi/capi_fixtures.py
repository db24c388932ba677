"""Fixtures shared by the Cluster API core and Metal3Machine tests (imported by their conftest.py)."""

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
