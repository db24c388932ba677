# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The ``store`` option and its environment fallbacks, in one place.

Modules (``CapiModule``), the action plugins, the inventory plugin and the kubernetes store itself resolve the
option here, so a variable means the same everywhere:

- the kind: ``store.kind``; else sqlite when ``store.path`` is named; else ``BAREMETAL_CAPI_STORE_KIND``; else
  kubernetes when both variables AWX's Kubernetes bearer token credential injects are set; else sqlite;
- the sqlite file: ``store.path``, else ``BAREMETAL_CAPI_STORE_PATH`` (else the store's default path);
- the kubernetes connection: each option, else its ``K8S_AUTH_*`` variable (as kubernetes.core) - read only when
  the store is kubernetes, so that a K8S_AUTH_* variable in the environment does not break the sqlite store.
"""

from __future__ import annotations

import os

STORE_KIND_ENV = "BAREMETAL_CAPI_STORE_KIND"
STORE_PATH_ENV = "BAREMETAL_CAPI_STORE_PATH"
# store sub-option -> the variable AWX's Kubernetes credential (and kubernetes.core) sets.
K8S_ENV = {
    "kubeconfig": "K8S_AUTH_KUBECONFIG",
    "context": "K8S_AUTH_CONTEXT",
    "host": "K8S_AUTH_HOST",
    "api_key": "K8S_AUTH_API_KEY",
    "ca_cert": "K8S_AUTH_SSL_CA_CERT",
    "validate_certs": "K8S_AUTH_VERIFY_SSL",
}
# AWX's built-in Kubernetes credential ("OpenShift or Kubernetes API Bearer Token") injects these two: with
# both set and no kind named, the store is kubernetes (AWX's job container is thrown away, and a sqlite store
# with it). One of them alone, or a K8S_AUTH_KUBECONFIG, selects nothing.
K8S_CREDENTIAL_ENV = ("K8S_AUTH_HOST", "K8S_AUTH_API_KEY")


def truthy(value) -> bool:
    """A boolean option or variable (``yes``/``no``, ``true``/``false``, ``1``/``0``, ``on``/``off``)."""
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in ("1", "true", "yes", "on", "y", "t")


def default_kind() -> str:
    """The store kind when the task names none: BAREMETAL_CAPI_STORE_KIND, AWX's Kubernetes credential, sqlite."""
    if os.environ.get(STORE_KIND_ENV):
        return os.environ[STORE_KIND_ENV]
    if all(os.environ.get(env) for env in K8S_CREDENTIAL_ENV):
        return "kubernetes"
    return "sqlite"


def kubernetes_connection(given: dict) -> dict:
    """The kubernetes connection options, each empty one filled from its K8S_AUTH_* variable."""
    opts = dict(given)
    for option, env in K8S_ENV.items():
        if opts.get(option) in (None, "") and os.environ.get(env):
            value = os.environ[env]
            opts[option] = truthy(value) if option == "validate_certs" else value
    return opts


def resolve(given: dict | None) -> dict:
    """The ``store`` option with its kind resolved and the environment fallbacks of that kind applied."""
    opts = dict(given or {})
    # a sqlite path named in the task is the sqlite store, whatever credential the environment carries
    kind = opts.get("kind") or ("sqlite" if opts.get("path") else default_kind())
    opts["kind"] = kind
    if kind == "sqlite":
        opts["path"] = opts.get("path") or os.environ.get(STORE_PATH_ENV) or None
    elif kind == "kubernetes":
        opts = kubernetes_connection(opts)
    return opts
