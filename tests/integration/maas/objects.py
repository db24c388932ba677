"""Cluster API objects of a MAAS cluster, written to the store as a user (or clusterctl) would write them.

Bootstrap data is CABPK-shaped cloud-config made by hand (tests/integration/nodesim/cabpk.py): kubeadm init on
the first control plane, joins (control plane and worker) with a bootstrap token the test creates in the
workload cluster once it is up, as CABPK would.  Node names default to the MAAS hostname (no
``nodeRegistration.name``) and there is no provider-id: CAPMAAS cannot know the machine when the data is rendered.
"""

from __future__ import annotations

import base64

import yaml

from tests.integration.nodesim import cabpk

INFRA = "infrastructure.cluster.x-k8s.io"
VERSION = "v1.34.4"


def cluster(name: str, ns: str, failure_domains: list[str]) -> list[dict]:
    return [
        {
            "apiVersion": "cluster.x-k8s.io/v1beta2",
            "kind": "Cluster",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"infrastructureRef": {"apiGroup": INFRA, "kind": "MaasCluster", "name": name}},
        },
        {
            "apiVersion": f"{INFRA}/v1beta1",
            "kind": "MaasCluster",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"dnsDomain": "maas", "failureDomains": failure_domains},
        },
    ]


def secret(name: str, ns: str, cluster_name: str, value: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "cluster.x-k8s.io/secret",
        "metadata": {"name": name, "namespace": ns, "labels": {"cluster.x-k8s.io/cluster-name": cluster_name}},
        "data": {
            "value": base64.b64encode(value.encode()).decode(),
            "format": base64.b64encode(b"cloud-config").decode(),
        },
    }


def machine(name: str, ns: str, cluster_name: str, *, control_plane: bool, spec: dict) -> list[dict]:
    labels = {"cluster.x-k8s.io/cluster-name": cluster_name}
    if control_plane:
        labels["cluster.x-k8s.io/control-plane"] = ""
    return [
        {
            "apiVersion": "cluster.x-k8s.io/v1beta2",
            "kind": "Machine",
            "metadata": {"name": name, "namespace": ns, "labels": labels},
            "spec": {
                "clusterName": cluster_name,
                "version": VERSION,
                "bootstrap": {"dataSecretName": f"{name}-bootstrap"},
                "infrastructureRef": {"apiGroup": INFRA, "kind": "MaasMachine", "name": name},
            },
        },
        {
            "apiVersion": f"{INFRA}/v1beta1",
            "kind": "MaasMachine",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"minCPU": 1, "minMemory": 1024, **spec},
        },
    ]


def init_data(cluster_name: str, endpoint: str, ca, etcd_ca=None) -> str:
    return cabpk.init_data(cluster_name, endpoint, ca, version=VERSION, provider_id=None, node_name="", etcd_ca=etcd_ca)


def join_data(endpoint: str, ca, token: str, *, control_plane: bool, etcd_ca=None) -> str:
    text = cabpk.join_data(endpoint, ca[0], token, provider_id=None, node_name="")
    if control_plane:
        # a control-plane join: JoinConfiguration.controlPlane (kubeadm join --control-plane)
        # (inside write_files content, indented six spaces), with the cluster's shared CAs as CABPK writes
        # them: a stacked-etcd member joins with the etcd CA the first control plane was given
        if etcd_ca is None:
            raise ValueError("a control-plane join needs the cluster's etcd CA (init_data(..., etcd_ca=...))")
        text = text.replace(
            "      kind: JoinConfiguration\n",
            "      controlPlane:\n        localAPIEndpoint: {}\n      kind: JoinConfiguration\n",
        )
        certs = "\n".join(cabpk._ca_files(*ca) + cabpk._ca_files(*etcd_ca, "etcd/")) + "\n"
        text = text.replace("write_files:\n", "write_files:\n" + certs, 1)
    return text


def admin_kubeconfig(cluster_name: str, server: str, ca) -> str:
    return cabpk.admin_kubeconfig(cluster_name, server, ca)


def create_token(kubeconfig_text: str, token: str) -> None:
    """The bootstrap token Secret CABPK creates in the workload cluster for joins."""
    from kubernetes import client as k8s
    from kubernetes import config as kconfig

    api = k8s.CoreV1Api(kconfig.new_client_from_config_dict(yaml.safe_load(kubeconfig_text)))
    api.create_namespaced_secret("kube-system", cabpk.token_secret(token, ttl=3600))


def nodes(kubeconfig_text: str) -> dict[str, dict]:
    from kubernetes import client as k8s
    from kubernetes import config as kconfig

    api = k8s.CoreV1Api(kconfig.new_client_from_config_dict(yaml.safe_load(kubeconfig_text)))
    return {n.metadata.name: {"providerID": n.spec.provider_id} for n in api.list_node().items}


def namespace_labels(kubeconfig_text: str, name: str) -> dict:
    from kubernetes import client as k8s
    from kubernetes import config as kconfig

    api = k8s.CoreV1Api(kconfig.new_client_from_config_dict(yaml.safe_load(kubeconfig_text)))
    return api.read_namespace(name).metadata.labels or {}
