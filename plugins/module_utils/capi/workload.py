# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The workload cluster's API, as Cluster API reaches it.

Cluster API talks to a workload cluster with the kubeconfig in the
``<cluster>-kubeconfig`` Secret (key ``value``) next to the Cluster; a module
option can hand an override instead.  Only Nodes are needed: list by label
selector, get, patch (providerID, labels, taints, annotations), delete, and
the server version.  Nodes come back as plain dicts shaped like the API's JSON,
the same shape as every other object of the collection.

Clients are cached per kubeconfig (its text), so the many machines of a batch
reconcile share one connection pool.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading

from ansible_collections.baremetal.capi.plugins.module_utils import imports
from ansible_collections.baremetal.capi.plugins.module_utils.errors import (
    CapiError,
    Conflict,
    Forbidden,
    Invalid,
    NotFound,
    Requeue,
)
from ansible_collections.baremetal.capi.plugins.module_utils.model import names

MERGE_PATCH = "application/merge-patch+json"

# Seconds for one request to the workload API; a workload API that is not up
# yet is normal while its first control plane machine boots.
REQUEST_TIMEOUT = 15

_CACHE: dict[str, WorkloadClient] = {}
_CACHE_LOCK = threading.Lock()


class WorkloadUnavailable(Requeue):
    """The workload API cannot be reached (yet): try again later."""


def kubeconfig_secret_name(cluster_name: str) -> str:
    return f"{cluster_name}{names.KUBECONFIG_SECRET_SUFFIX}"


def kubeconfig_from_store(store, cluster_name: str, namespace: str) -> str:
    """The kubeconfig text in the ``<cluster>-kubeconfig`` Secret.  NotFound when there is none yet."""
    secret = store.get("Secret", kubeconfig_secret_name(cluster_name), namespace)
    data = secret.get("data") or {}
    value = data.get(names.KUBECONFIG_SECRET_KEY)
    if not value:
        raise Invalid(
            f"Secret {namespace}/{kubeconfig_secret_name(cluster_name)} has no key {names.KUBECONFIG_SECRET_KEY!r}",
            field="data",
        )
    try:
        return base64.b64decode(value).decode()
    except (ValueError, UnicodeDecodeError) as exc:
        raise Invalid(
            f"Secret {namespace}/{kubeconfig_secret_name(cluster_name)}: data.value is not base64 text: {exc}",
            field="data.value",
        ) from None


def client_for(store, cluster_name: str, namespace: str, kubeconfig: str | None = None) -> WorkloadClient:
    """A (cached) client for a Cluster's workload API.

    ``kubeconfig`` overrides the Secret: kubeconfig text, or a path to a file.
    Raises NotFound when the Secret does not exist (the control plane is not up yet).
    """
    return cached_client(kubeconfig_text(store, cluster_name, namespace, kubeconfig))


def kubeconfig_text(store, cluster_name: str, namespace: str, kubeconfig: str | None = None) -> str:
    """The kubeconfig :func:`client_for` would use, read without building a client (no ``kubernetes`` import).

    Raises NotFound when the Secret does not exist (the control plane is not up yet).
    """
    if not kubeconfig:
        return kubeconfig_from_store(store, cluster_name, namespace)
    if "\n" in kubeconfig or kubeconfig.lstrip().startswith("{"):
        return kubeconfig
    try:
        with open(kubeconfig, encoding="utf-8") as fh:
            return fh.read()
    except OSError as exc:
        raise Invalid(f"cannot read kubeconfig {kubeconfig}: {exc}", field="kubeconfig") from None


def cached_client(kubeconfig_text: str) -> WorkloadClient:
    key = hashlib.sha256(kubeconfig_text.encode()).hexdigest()
    with _CACHE_LOCK:
        client = _CACHE.get(key)
        if client is None:
            client = _CACHE[key] = WorkloadClient(kubeconfig_text)
        return client


def clear_cache() -> None:
    with _CACHE_LOCK:
        _CACHE.clear()


def _selector_string(selector) -> str | None:
    if selector is None or isinstance(selector, str):
        return selector or None
    if isinstance(selector, dict) and set(selector) <= {"matchLabels", "matchExpressions"}:
        from ansible_collections.baremetal.capi.plugins.module_utils.model import selectors

        return str(selectors.parse(selector)) or None
    if isinstance(selector, dict):  # a plain label map
        return ",".join(f"{k}={v}" for k, v in selector.items()) or None
    return str(selector) or None


class WorkloadClient:
    """Nodes of one workload cluster, through the ``kubernetes`` client's ApiClient (its configuration, auth,
    TLS and REST layer). The calls go through :meth:`request` rather than the generated ``CoreV1Api``: that one
    module takes longer to import than the rest of the client, in every process that talks to a workload API,
    and every answer is read as JSON here anyway (no model objects)."""

    def __init__(self, kubeconfig_text: str):
        import yaml

        kconfig = imports.load("kubernetes.config")

        try:
            loaded = yaml.safe_load(kubeconfig_text)
            api_client = kconfig.new_client_from_config_dict(loaded)
        except Exception as exc:  # the kubernetes loader raises many kinds
            raise Invalid(f"unusable workload kubeconfig: {exc}", field="kubeconfig") from None
        self.server = api_client.configuration.host
        self._api = api_client
        self._core = None

    def core_v1(self):
        """The kubernetes CoreV1Api of this workload cluster (bootstrap tokens live in its kube-system)."""
        if self._core is None:
            k8s = imports.load("kubernetes.client")

            self._core = k8s.CoreV1Api(self._api)
        return self._core

    # -- the error mapping ------------------------------------------------------

    def _call(self, what: str, fn, *args, **kwargs):
        ApiException = imports.load("kubernetes.client.exceptions").ApiException

        kwargs.setdefault("_request_timeout", REQUEST_TIMEOUT)
        kwargs.setdefault("_preload_content", False)
        try:
            resp = fn(*args, **kwargs)
        except ApiException as exc:
            body = exc.body.decode() if isinstance(exc.body, bytes) else (exc.body or "")
            try:
                message = json.loads(body).get("message") or body
            except ValueError:
                message = body or str(exc.reason)
            if exc.status == 404:
                raise NotFound(f"{what}: {message}") from None
            if exc.status == 409:
                raise Conflict(f"{what}: {message}") from None
            if exc.status == 403:  # typed, so that a caller tells a refusal from a failure without reading text
                raise Forbidden(f"{what}: workload API {self.server} answered 403: {message}") from None
            if exc.status in (502, 503, 504) or exc.status == 0:
                raise WorkloadUnavailable(f"workload API {self.server} unavailable: {message}", after=5) from None
            raise CapiError(f"{what}: workload API {self.server} answered {exc.status}: {message}") from None
        except Exception as exc:  # urllib3 connection errors and timeouts
            raise WorkloadUnavailable(
                f"workload API {self.server} unreachable: {type(exc).__name__}: {exc}", after=5
            ) from None
        data = resp.data
        return json.loads(data) if data else {}

    # -- Nodes --------------------------------------------------------------------

    def list_nodes(self, label_selector=None) -> list[dict]:
        """Nodes matching a label selector (string, LabelSelector mapping or label map)."""
        sel = _selector_string(label_selector)
        out = self._get("list Nodes", "/api/v1/nodes", query={"labelSelector": sel} if sel else None)
        return sorted(out.get("items") or [], key=lambda n: n["metadata"]["name"])

    def get_node(self, name: str) -> dict | None:
        """The Node, or None when it does not exist."""
        try:
            return self._get(f"Node {name}", f"/api/v1/nodes/{_seg(name)}")
        except NotFound:
            return None

    def patch_node(self, name: str, patch: dict, resource_version: str | None = None) -> dict:
        """A JSON merge patch; with ``resource_version`` it applies only to that version (Conflict otherwise).

        Lists (taints) are replaced whole by a merge patch, so callers that
        rewrite one pass the version they read.
        """
        body = json.loads(json.dumps(patch))
        if resource_version:
            body.setdefault("metadata", {})["resourceVersion"] = str(resource_version)
        return self._send(f"Node {name}", "PATCH", f"/api/v1/nodes/{_seg(name)}", body, content_type=MERGE_PATCH)

    def label_namespace(self, name: str, labels: dict, check: bool = False) -> bool:
        """Merge ``labels`` into a Namespace's labels (CAPMAAS marks kube-system); True if that changes it."""
        ns = self._get(f"Namespace {name}", f"/api/v1/namespaces/{_seg(name)}")
        have = (ns.get("metadata") or {}).get("labels") or {}
        if all(have.get(k) == v for k, v in labels.items()):
            return False
        if not check:
            patch = {"metadata": {"labels": labels}}
            self._send(f"Namespace {name}", "PATCH", f"/api/v1/namespaces/{_seg(name)}", patch,
                       content_type=MERGE_PATCH)  # fmt: skip
        return True

    def set_provider_id(self, name: str, provider_id: str) -> dict:
        return self.patch_node(name, {"spec": {"providerID": provider_id}})

    def has_kubeadm_config(self) -> bool:
        """kube-system/kubeadm-config exists: kubeadm init has uploaded its configuration (KCP's
        ClusterStatus.HasKubeadmConfig, what marks the control plane initialized)."""
        try:
            self._get(
                "ConfigMap kube-system/kubeadm-config", "/api/v1/namespaces/kube-system/configmaps/kubeadm-config"
            )
        except NotFound:
            return False
        return True

    def delete_node(self, name: str) -> bool:
        """Delete the Node; False if it was already gone."""
        try:
            self._send(f"Node {name}", "DELETE", f"/api/v1/nodes/{_seg(name)}")
        except NotFound:
            return False
        return True

    def server_version(self) -> str:
        return self._get("version", "/version").get("gitVersion", "")

    # -- drain: the Node's pods and volume attachments ------------------------------------------

    def pods_on_node(self, node_name: str) -> list[dict]:
        """Every Pod bound to the Node, all namespaces."""
        out = self._get(
            f"Pods on Node {node_name}", "/api/v1/pods", query={"fieldSelector": f"spec.nodeName={node_name}"}
        )
        return out.get("items") or []

    def evict_pod(self, namespace: str, name: str, grace_period_seconds: int | None = None) -> bool:
        """Evict through the Eviction API (PodDisruptionBudgets hold); False if the Pod was already gone.

        A budget that forbids it is a CapiError naming the Pod and what the API server said (429).
        """
        body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": namespace}}
        if grace_period_seconds is not None:
            body["deleteOptions"] = {"gracePeriodSeconds": grace_period_seconds}
        try:
            path = f"/api/v1/namespaces/{_seg(namespace)}/pods/{_seg(name)}/eviction"
            self._send(f"evict Pod {namespace}/{name}", "POST", path, body)
        except NotFound:
            return False
        return True

    def volume_attachments(self, node_name: str) -> list[str]:
        """The names of the VolumeAttachments to the Node."""
        out = self._get("list VolumeAttachments", "/apis/storage.k8s.io/v1/volumeattachments")
        return sorted(
            va["metadata"]["name"]
            for va in out.get("items") or []
            if (va.get("spec") or {}).get("nodeName") == node_name
        )

    # -- any object: what ClusterResourceSet applies ----------------------------------------------

    def request(self, method: str, path: str, body=None, *, content_type: str = "application/json", query=None):
        """One REST call on the workload API; the JSON answer (errors mapped as for the other calls)."""
        return self._send(f"{method} {path}", method, path, body, content_type=content_type, query=query)

    def _get(self, what: str, path: str, query=None):
        return self._send(what, "GET", path, query=query)

    def _send(self, what: str, method: str, path: str, body=None, *, content_type: str = "application/json",
              query=None):  # fmt: skip
        ApiException = imports.load("kubernetes.client.exceptions").ApiException

        api = self._api

        def send(_request_timeout=None, _preload_content=False):
            # the generated API methods' two halves: serialize (auth, query), then send; errors raised as theirs
            method_, url, headers, body_, post = api.param_serialize(
                method=method,
                resource_path=path,
                query_params=list((query or {}).items()),
                header_params={"Content-Type": content_type, "Accept": "application/json"},
                body=body,
                auth_settings=["BearerToken"],
            )
            resp = api.call_api(method_, url, header_params=headers, body=body_, post_params=post,
                                _request_timeout=_request_timeout)  # fmt: skip
            resp.read()
            if not 200 <= resp.status <= 299:
                raise ApiException(http_resp=resp)
            return resp

        return self._call(what, send)


def _seg(name: str) -> str:
    """One path segment of a REST URL (object names are DNS names, quoted anyway)."""
    from urllib.parse import quote

    return quote(str(name), safe="")


def node_ready(node: dict) -> str:
    """The status of the Node's Ready condition: "True", "False" or "Unknown"."""
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return cond.get("status") or "Unknown"
    return "Unknown"


def node_ready_message(node: dict | None) -> str | None:
    """``reason: message`` of a Node's Ready condition when it is not True (what the kubelet says is missing)."""
    for cond in ((node or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready" and cond.get("status") != "True":
            return ": ".join(x for x in (cond.get("reason"), cond.get("message")) if x) or None
    return None


__all__ = [
    "WorkloadClient",
    "WorkloadUnavailable",
    "cached_client",
    "clear_cache",
    "client_for",
    "kubeconfig_from_store",
    "kubeconfig_secret_name",
    "node_ready",
    "node_ready_message",
]
