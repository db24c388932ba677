"""The store protocol every implementation honours, and ``open_store``.

Objects are plain dicts shaped like Kubernetes objects (apiVersion, kind,
metadata, spec, status).  ``kind`` arguments take a plain kind name when it is
unique ("BareMetalHost"), or a group-qualified one
("IPAddress.ipam.metal3.io"); see model.kinds.resolve.

Semantics (the contract tests in tests/unit/store hold both stores to them):

* ``create`` fills uid, resourceVersion, generation (1), creationTimestamp;
  ``metadata.generateName`` is honoured; a missing namespace is created.
  Custom resources drop ``status`` on create (status subresource); Node keeps it.
  Secrets: ``stringData`` is merged into base64 ``data``.
* ``update`` replaces metadata and spec (everything but status for kinds with
  a status subresource).  With a ``metadata.resourceVersion`` it fails with
  Conflict when the stored object has moved on.  ``generation`` moves when
  anything but metadata and status changes.  An update that changes nothing
  does not move resourceVersion.  Once an object is being deleted no new
  finalizer may be added (Forbidden); removing the last one removes the object.
* ``update_status`` replaces only status (same Conflict rule).
* ``delete`` sets deletionTimestamp while finalizers remain, otherwise removes
  the object; dependents (ownerReferences to its uid) whose owners are all
  gone are deleted the same way (Kubernetes' garbage collector does this in
  the background: callers poll).  Returns the object as it now is, or None
  when it is gone.  Deleting a missing object raises NotFound.
* ``list`` returns objects sorted by namespace and name; ``namespace=None``
  means all namespaces; ``label_selector`` takes any form model.selectors.parse does; ``fields`` are the
  field filters of store/common.py (equality, one of, UNSET, ABSENT on any path).
* ``list_keys`` takes the same arguments and returns (namespace, name) of what ``list`` would return.
"""

from __future__ import annotations

import os
from typing import Iterable, Protocol

from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid


class Store(Protocol):
    kind_name: str  # "sqlite" or "kubernetes"

    def get(self, kind: str, name: str, namespace: str | None = None) -> dict:
        """The object; NotFound when there is none."""

    def list(self, kind: str, namespace: str | None = None, label_selector=None, fields=None) -> list[dict]:
        """Objects of a kind, by namespace and name; ``fields``: {dotted path: value or None} equalities."""

    def list_keys(self, kind: str, namespace: str | None = None, label_selector=None, fields=None) -> list[tuple]:
        """(namespace, name) of the objects ``list`` would return, in its order ("" for cluster-scoped kinds);
        the sqlite store answers it without decoding them."""

    def create(self, obj: dict) -> dict:
        """The object created (see the module's docstring), as stored."""

    def update(self, obj: dict) -> dict:
        """The object with its metadata and spec replaced, as stored."""

    def update_status(self, obj: dict) -> dict:
        """The object with its status replaced, as stored."""

    def delete(self, kind: str, name: str, namespace: str | None = None) -> dict | None:
        """The object as it now is (being deleted), or None once it is gone."""

    def close(self) -> None:
        """Closes the store's connection."""


STORE_OPTION_KEYS = (
    "kind",
    "path",
    "kubeconfig",
    "context",
    "host",
    "api_key",
    "ca_cert",
    "validate_certs",
    "namespace",
    "adopt",
)


def default_sqlite_path() -> str:
    """``$XDG_STATE_HOME/baremetal-capi/state.db`` (``~/.local/state/...``)."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "baremetal-capi", "state.db")


def open_store(options: dict | None = None) -> Store:
    """A store from the module option ``store: {kind, path, kubeconfig, ...}``."""
    options = dict(options or {})
    unknown = set(options) - set(STORE_OPTION_KEYS)
    if unknown:
        raise Invalid(f"unknown option(s) {', '.join(sorted(unknown))}", field="store")
    kind = options.pop("kind", None) or "sqlite"
    options.pop("namespace", None)
    adopt = bool(options.pop("adopt", None))
    if kind == "sqlite":
        from ansible_collections.baremetal.capi.plugins.module_utils.store.sqlite import SqliteStore

        extra = {k for k, v in options.items() if v is not None and k != "path"}
        if extra:
            raise Invalid(f"option(s) {', '.join(sorted(extra))} apply to the kubernetes store only", field="store")
        return SqliteStore(options.get("path") or default_sqlite_path(), adopt=adopt)
    if kind == "kubernetes":
        from ansible_collections.baremetal.capi.plugins.module_utils.store.kubernetes import KubernetesStore

        if options.get("path"):
            raise Invalid("path applies to the sqlite store only", field="store.path")
        options.pop("path", None)
        return KubernetesStore(**{k: v for k, v in options.items() if v is not None}, adopt=adopt)
    raise Invalid(f"unknown store kind {kind!r}: sqlite or kubernetes", field="store.kind")


def first(items: Iterable[dict]) -> dict | None:
    for item in items:
        return item
    return None
