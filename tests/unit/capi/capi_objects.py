"""Builders for the Cluster API and Metal3 objects the machine tests put into a store."""

from __future__ import annotations

import base64

INFRA = "infrastructure.cluster.x-k8s.io"


def cluster(name="c1", ns="default", paused=False, infra_kind="Metal3Cluster", cp_ref=None) -> dict:
    spec = {"infrastructureRef": {"apiGroup": INFRA, "kind": infra_kind, "name": name}}
    if paused:
        spec["paused"] = True
    if cp_ref:
        spec["controlPlaneRef"] = cp_ref
    return {
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "Cluster",
        "metadata": {"name": name, "namespace": ns},
        "spec": spec,
    }


def metal3_cluster(name="c1", ns="default", host="192.0.2.10", port=None) -> dict:
    endpoint = {"host": host}
    if port:
        endpoint["port"] = port
    return {
        "apiVersion": f"{INFRA}/v1beta2",
        "kind": "Metal3Cluster",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"controlPlaneEndpoint": endpoint},
    }


def machine(
    name,
    cluster_name="c1",
    ns="default",
    control_plane=False,
    secret="bootstrap",
    infra_kind="Metal3Machine",
    labels=None,
) -> dict:
    md_labels = {"cluster.x-k8s.io/cluster-name": cluster_name, **(labels or {})}
    if control_plane:
        md_labels["cluster.x-k8s.io/control-plane"] = ""
    spec = {
        "clusterName": cluster_name,
        "bootstrap": {"dataSecretName": secret} if secret else {},
        "infrastructureRef": {"apiGroup": INFRA, "kind": infra_kind, "name": name},
    }
    return {
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "Machine",
        "metadata": {"name": name, "namespace": ns, "labels": md_labels},
        "spec": spec,
    }


def bootstrap_secret(name="bootstrap", ns="default", text="#cloud-config\n") -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": ns},
        "type": "cluster.x-k8s.io/secret",
        "data": {
            "value": base64.b64encode(text.encode()).decode(),
            "format": base64.b64encode(b"cloud-config").decode(),
        },
    }


def metal3_machine(
    name, ns="default", image=None, host_selector=None, data_template=None, failure_domain=None, **spec
) -> dict:
    body = {
        "image": image
        if image is not None
        else {
            "url": "http://192.0.2.1/img.qcow2",
            "checksum": "abc123",
            "checksumType": "sha256",
            "diskFormat": "qcow2",
        },
    }
    if host_selector is not None:
        body["hostSelector"] = host_selector
    if data_template:
        body["dataTemplate"] = {"name": data_template}
    if failure_domain:
        body["failureDomain"] = failure_domain
    body.update(spec)
    return {
        "apiVersion": f"{INFRA}/v1beta2",
        "kind": "Metal3Machine",
        "metadata": {"name": name, "namespace": ns},
        "spec": body,
    }


def bmh(name, ns="default", state="available", labels=None, annotations=None, online=False, **spec) -> dict:
    md = {"name": name, "namespace": ns}
    if labels:
        md["labels"] = labels
    if annotations:
        md["annotations"] = annotations
    body = {
        "online": online,
        "bootMACAddress": "52:54:00:00:00:01",
        "bmc": {"address": f"redfish://192.0.2.1/redfish/v1/Systems/{name}", "credentialsName": f"{name}-bmc"},
    }
    body.update(spec)
    return {
        "apiVersion": "metal3.io/v1alpha1",
        "kind": "BareMetalHost",
        "metadata": md,
        "spec": body,
        "status": {"provisioning": {"state": state}},
    }


def put(store, obj: dict) -> dict:
    """Create ``obj`` with its status (custom resources drop status on create)."""
    status = obj.get("status")
    created = store.create({k: v for k, v in obj.items() if k != "status"})
    if status is not None:
        created["status"] = status
        created = store.update_status(created)
    return created


def set_status(store, kind, name, ns, **fields) -> dict:
    obj = store.get(kind, name, ns)
    status = obj.setdefault("status", {})
    status.update(fields)
    return store.update_status(obj)


def kubeconfig_secret(cluster: str, namespace: str, kubeconfig: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": f"{cluster}-kubeconfig", "namespace": namespace},
        "type": "cluster.x-k8s.io/secret",
        "data": {"value": base64.b64encode(kubeconfig.encode()).decode()},
    }
