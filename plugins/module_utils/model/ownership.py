# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Who manages an object in a shared management cluster: the collection's marker and the upstream controllers'.

Every object the collection writes carries MANAGED_BY_ANNOTATION. An existing object without it that an
upstream controller (Cluster API, CAPM3, BMO) writes to is someone else's: the stores refuse to update or delete
it (``refusal``) unless it is paused as clusterctl move pauses objects, or the store's ``adopt`` option is set.

The sign of a running upstream controller is its field manager in ``metadata.managedFields``, which the API
server records on every write: an Update's manager is the writer's User-Agent up to the first "/" (apiserver
handlers/create.go managerOrUserAgent), and a server-side apply names its own. The finalizers are not a sign:
the collection adds the same upstream strings (model/names.py).
"""

from __future__ import annotations

from ansible_collections.baremetal.capi.plugins.module_utils.model import meta, names

# Ours: on every object the collection creates or updates (never on status-only writes, which keep metadata).
MANAGED_BY_ANNOTATION = "capi.baremetal.io/managed-by"
MANAGED_BY = "baremetal.capi"
# The fieldManager the kubernetes store writes with, so managedFields tell the collection's writes apart.
FIELD_MANAGER = "baremetal.capi"

# Field managers of the upstream controllers, verified in their sources.
UPSTREAM_MANAGERS = {
    # The binary of the CAPI core, KCP, CABPK and CAPM3 images is /manager (their Dockerfiles: -o manager),
    # and controller-runtime's User-Agent starts with the binary's name (CAPI: util/remote DefaultClusterAPIUserAgent).
    "manager": "a Cluster API or CAPM3 controller",
    # BMO's image runs /baremetal-operator (its Dockerfile).
    "baremetal-operator": "the baremetal-operator",
    # Server-side apply managers of CAPI (machineset_controller.go, kubeadmcontrolplane controller.go,
    # internal/topology ssa: TopologyManagerName).
    "capi-machineset": "Cluster API's MachineSet controller",
    "capi-machineset-metadata": "Cluster API's MachineSet controller",
    "capi-kubeadmcontrolplane": "Cluster API's KubeadmControlPlane controller",
    "capi-kubeadmcontrolplane-metadata": "Cluster API's KubeadmControlPlane controller",
    "capi-topology": "Cluster API's topology controller",
}


def mark(obj: dict) -> dict:
    """``obj`` with the marker set (in place)."""
    md = obj.setdefault("metadata", {})
    md["annotations"] = {**(md.get("annotations") or {}), MANAGED_BY_ANNOTATION: MANAGED_BY}
    return obj


def marked(obj: dict) -> bool:
    return meta.annotations(obj).get(MANAGED_BY_ANNOTATION) == MANAGED_BY


def managers(obj: dict) -> list[str]:
    """The field managers of ``metadata.managedFields`` (the API server's record of who wrote the object)."""
    entries = (obj.get("metadata") or {}).get("managedFields") or []
    return sorted({e.get("manager") for e in entries if isinstance(e, dict) and e.get("manager")})


def paused(obj: dict, cluster: dict | None = None) -> bool:
    """Paused for the upstream controllers, as clusterctl move pauses: the Cluster's ``spec.paused`` (for the
    Cluster and, through ``cluster``, everything of it) or the paused annotation of CAPI or of BMO."""
    ann = meta.annotations(obj)
    if names.PAUSED_ANNOTATION in ann or names.BMH_PAUSED_ANNOTATION in ann:
        return True
    for c in (obj if obj.get("kind") == "Cluster" else None, cluster):
        if c is not None and (c.get("spec") or {}).get("paused") is True:
            return True
    return False


def upstream(obj: dict, seen_managers=None) -> list[str]:
    """The upstream field managers that wrote ``obj`` (``seen_managers``: its managedFields' managers when the
    store read them apart from the object); empty when it carries the marker."""
    if marked(obj):
        return []
    found = seen_managers if seen_managers is not None else managers(obj)
    return [m for m in found if m in UPSTREAM_MANAGERS]


def refusal(obj: dict, upstream_managers: list[str], action: str) -> str:
    """Why the collection will not ``action`` ``obj``, and what to do instead."""
    who = ", ".join(f'{UPSTREAM_MANAGERS[m]} (field manager "{m}")' for m in upstream_managers)
    fins = meta.finalizers(obj)
    return (
        f"refusing to {action} it: it is managed by {who}"
        f"{f', finalizers {fins}' if fins else ''} and not by baremetal.capi (no annotation "
        f"{MANAGED_BY_ANNOTATION}={MANAGED_BY}). Pause it as clusterctl move does (Cluster spec.paused: true, or "
        f"the annotation {names.PAUSED_ANNOTATION} on the object), use a namespace or management cluster the "
        "upstream controller does not watch, or take it over explicitly with the store option adopt: true "
        "(and stop that controller)"
    )
