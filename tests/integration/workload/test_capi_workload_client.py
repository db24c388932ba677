"""The workload client against the lab's real kube-apiserver, reached through a kubeconfig Secret in sqlite."""

from __future__ import annotations

import uuid

import pytest
from capi_objects import kubeconfig_secret, put

from ansible_collections.baremetal.capi.plugins.module_utils.capi import workload as wl
from ansible_collections.baremetal.capi.plugins.module_utils.errors import Conflict


def test_client_from_secret_is_cached(store, workload_kubeconfig):
    put(store, kubeconfig_secret("c1", "default", workload_kubeconfig))
    a = wl.client_for(store, "c1", "default")
    b = wl.client_for(store, "c1", "default")
    assert a is b
    assert a.server_version().startswith("v1.")


def test_nodes_list_get_patch_delete(workload):
    tag = uuid.uuid4().hex[:8]
    a = workload.make_node(labels={"metal3.io/uuid": tag, "t": tag})
    workload.make_node(labels={"t": tag})
    found = workload.list_nodes({"matchLabels": {"metal3.io/uuid": tag}})
    assert [n["metadata"]["name"] for n in found] == [a["metadata"]["name"]]
    assert len(workload.list_nodes(f"t={tag}")) == 2
    assert len(workload.list_nodes({"t": tag})) == 2

    name = a["metadata"]["name"]
    workload.set_provider_id(name, "metal3://default/h/m")
    assert workload.get_node(name)["spec"]["providerID"] == "metal3://default/h/m"
    with pytest.raises(Conflict):
        workload.patch_node(name, {"metadata": {"labels": {"x": "y"}}}, resource_version="1")
    workload.patch_node(name, {"metadata": {"labels": {"t": None}}})
    assert "t" not in workload.get_node(name)["metadata"]["labels"]

    assert workload.delete_node(name) is True
    assert workload.get_node(name) is None
    assert workload.delete_node(name) is False
