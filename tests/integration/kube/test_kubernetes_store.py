"""The kubernetes store against the lab's real kube-apiserver: what the contract suite does not show."""

from __future__ import annotations

import secrets

import pytest
from kube_helpers import eventually
from kubernetes import client as k

from ansible_collections.baremetal.capi.plugins.module_utils.errors import Forbidden, NotFound, StoreUnavailable
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta
from ansible_collections.baremetal.capi.plugins.module_utils.store.kubernetes import KubernetesStore
from lab.services import kube as kube_svc


def node_as_kubelet_registers_it(name: str) -> dict:
    node = meta.new("Node", name, None, spec={}, labels={"kubernetes.io/hostname": name})
    node["status"] = {
        "conditions": [
            {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status"}
        ],
        "addresses": [{"type": "InternalIP", "address": "192.168.111.21"}, {"type": "Hostname", "address": name}],
        "nodeInfo": {"kubeletVersion": "v1.34.4", "machineID": "", "systemUUID": "", "bootID": "",
                     "kernelVersion": "", "osImage": "", "containerRuntimeVersion": "", "kubeProxyVersion": "",
                     "operatingSystem": "linux", "architecture": "amd64"},
    }  # fmt: skip
    return node


def test_node_provider_id_set_through_the_store(kube_store, kube_client):
    name = f"node-{secrets.token_hex(4)}"
    try:
        created = kube_store.create(node_as_kubelet_registers_it(name))
        assert created["status"]["conditions"][0]["type"] == "Ready"  # Node keeps the status it registers with
        assert "providerID" not in created["spec"]
        node = kube_store.get("Node", name)
        provider_id = f"metal3://metal3/host-{name}/m3m-{name}"
        node["spec"]["providerID"] = provider_id
        kube_store.update(node)
        # What the API server itself holds, read without the store.
        assert k.CoreV1Api(kube_client).read_node(name).spec.provider_id == provider_id
        assert kube_store.get("Node", name)["spec"]["providerID"] == provider_id
        # The API server refuses to change a providerID once set (a FieldValueForbidden): Forbidden.
        moved = kube_store.get("Node", name)
        moved["spec"]["providerID"] = "metal3://metal3/other/other"
        with pytest.raises(Forbidden, match="may not change providerID"):
            kube_store.update(moved)
    finally:
        k.CoreV1Api(kube_client).delete_node(name)


def test_deleting_an_owner_removes_dependents_on_the_api_server(kube_store, kube_client, kube_namespace):
    ns = kube_namespace
    cluster = kube_store.create(meta.new("Cluster", "prod", ns, spec={}))
    m3c = meta.new(
        "Metal3Cluster", "prod", ns, spec={"controlPlaneEndpoint": {"host": "192.168.111.249", "port": 6443}}
    )
    meta.set_owner(m3c, cluster, controller=True)
    m3c = kube_store.create(m3c)
    secret = meta.new("Secret", "prod-kubeconfig", ns)
    secret["stringData"] = {"value": "apiVersion: v1\nkind: Config\n"}
    meta.set_owner(secret, cluster, controller=True)
    kube_store.create(secret)
    # A grandchild: owned by the Metal3Cluster, not the Cluster.
    cm = meta.new("ConfigMap", "prod-m3c-data", ns)
    meta.set_owner(cm, m3c)
    kube_store.create(cm)

    assert kube_store.delete("Cluster", "prod", ns) is None
    core = k.CoreV1Api(kube_client)
    custom = k.CustomObjectsApi(kube_client)

    def all_gone():
        left = custom.list_namespaced_custom_object("infrastructure.cluster.x-k8s.io", "v1beta2", ns, "metal3clusters")
        return (
            not left["items"]
            and not [s for s in core.list_namespaced_secret(ns).items if s.metadata.name == "prod-kubeconfig"]
            and not [c for c in core.list_namespaced_config_map(ns).items if c.metadata.name == "prod-m3c-data"]
        )

    eventually(all_gone, "the garbage collector removed the dependents")
    with pytest.raises(NotFound):
        kube_store.get("Metal3Cluster", "prod", ns)


def test_connection_options_fall_back_to_k8s_auth_variables(lab, kube, monkeypatch, tmp_path, kube_namespace):
    server, token, ca_file = kube_svc.admin(lab.cfg)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    for var in ("K8S_AUTH_KUBECONFIG", "K8S_AUTH_CONTEXT", "K8S_AUTH_VERIFY_SSL", "K8S_AUTH_SSL_CA_CERT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("K8S_AUTH_HOST", server)
    monkeypatch.setenv("K8S_AUTH_API_KEY", token)
    monkeypatch.setenv("K8S_AUTH_SSL_CA_CERT", str(ca_file))
    store = KubernetesStore()
    assert store.create(meta.new("ConfigMap", "via-env", kube_namespace))["metadata"]["uid"]
    store.close()

    # Without the CA the lab's certificate cannot be verified ...
    monkeypatch.delenv("K8S_AUTH_SSL_CA_CERT")
    store = KubernetesStore()
    with pytest.raises(StoreUnavailable, match="cannot reach"):
        store.get("ConfigMap", "via-env", kube_namespace)
    store.close()
    # ... unless verification is turned off (K8S_AUTH_VERIFY_SSL=false).
    monkeypatch.setenv("K8S_AUTH_VERIFY_SSL", "false")
    store = KubernetesStore()
    assert store.get("ConfigMap", "via-env", kube_namespace)["metadata"]["name"] == "via-env"
    store.close()
    # A wrong token is refused by the API server.
    store = KubernetesStore(api_key="not-a-token")
    with pytest.raises(StoreUnavailable, match="401"):
        store.get("ConfigMap", "via-env", kube_namespace)
    store.close()

    # K8S_AUTH_KUBECONFIG and K8S_AUTH_CONTEXT, with the options above unset.
    for var in ("K8S_AUTH_HOST", "K8S_AUTH_API_KEY", "K8S_AUTH_VERIFY_SSL"):
        monkeypatch.delenv(var)
    monkeypatch.setenv("K8S_AUTH_KUBECONFIG", str(kube_svc.kubeconfig_path(lab.cfg)))
    monkeypatch.setenv("K8S_AUTH_CONTEXT", "kube-apiserver")
    store = KubernetesStore()
    assert store.get("ConfigMap", "via-env", kube_namespace)["metadata"]["name"] == "via-env"
    store.close()
    monkeypatch.setenv("K8S_AUTH_CONTEXT", "no-such-context")
    with pytest.raises(StoreUnavailable, match="no-such-context"):
        KubernetesStore()


def test_no_configuration_at_all_is_store_unavailable(monkeypatch, tmp_path):
    for var in (
        "K8S_AUTH_KUBECONFIG",
        "K8S_AUTH_CONTEXT",
        "K8S_AUTH_HOST",
        "K8S_AUTH_API_KEY",
        "KUBERNETES_SERVICE_HOST",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    with pytest.raises(StoreUnavailable, match="cannot load the Kubernetes client configuration"):
        KubernetesStore()
