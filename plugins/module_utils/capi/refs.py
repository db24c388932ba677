# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""References between Cluster API objects: resolve, own, pause, and who may delete a Node.

A v1beta2 reference is ``{apiGroup, kind, name}``; a v1beta1 one is an
ObjectReference ``{apiVersion, kind, name, namespace}``.  Both are accepted.
"""

from __future__ import annotations

import copy

from ansible_collections.baremetal.capi.plugins.module_utils.errors import NotFound
from ansible_collections.baremetal.capi.plugins.module_utils.model import kinds, meta, names


def ref_kind(ref: dict) -> str:
    """The model kind a reference names (qualified by its group when it has one)."""
    kind = ref.get("kind")
    if ref.get("apiGroup"):
        return kinds.resolve(f"{kind}.{ref['apiGroup']}").key
    if ref.get("apiVersion"):
        return kinds.resolve(kind, ref["apiVersion"]).key
    return kinds.resolve(kind).key


def get_or_none(store, kind: str, name: str | None, namespace: str | None) -> dict | None:
    if not name:
        return None
    try:
        return store.get(kind, name, namespace)
    except NotFound:
        return None


def get_ref(store, ref: dict | None, namespace: str) -> dict | None:
    """The object a reference points at (in ``namespace`` unless the ref names one), or None."""
    if not ref or not ref.get("name") or not ref.get("kind"):
        return None
    return get_or_none(store, ref_kind(ref), ref["name"], ref.get("namespace") or namespace)


def controller_owner(obj: dict) -> dict | None:
    for owner in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if owner.get("controller"):
            return owner
    return None


def owner_of_kind(obj: dict, kind: str) -> dict | None:
    for owner in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if owner.get("kind") == kind:
            return owner
    return None


def referrer(store, kind: str, obj: dict) -> dict | None:
    """The ``kind`` object in ``obj``'s namespace whose ``spec.infrastructureRef`` names ``obj``, or None."""
    for candidate in store.list(kind, meta.namespace(obj)):
        ref = (candidate.get("spec") or {}).get("infrastructureRef") or {}
        if ref.get("kind") == obj.get("kind") and ref.get("name") == meta.name(obj):
            return candidate
    return None


def owner_or_referrer(store, kind: str, obj: dict) -> dict | None:
    """The ``kind`` owner of an infrastructure object, or (not owned yet) the one whose infrastructureRef names it."""
    ref = owner_of_kind(obj, kind)
    if ref:
        return get_or_none(store, kind, ref["name"], meta.namespace(obj))
    return referrer(store, kind, obj)


def is_paused(cluster: dict | None, obj: dict) -> bool:
    """``cluster.spec.paused`` pauses everything of the Cluster; the annotation pauses one object."""
    if cluster is not None and (cluster.get("spec") or {}).get("paused"):
        return True
    return names.PAUSED_ANNOTATION in meta.annotations(obj)


def take_ownership(store, machine: dict, ref: dict | None, *, check: bool = False) -> dict | None:
    """The referenced object, made controlled by the Machine and labelled with its cluster (cluster-api
    machine_controller_phases.go ensureExternalOwnershipAndWatch).

    A controller owner reference from the Machine replaces any other
    controller reference (the MachineSet's or KubeadmControlPlane's clone).
    The Machine must already have a uid (it is stored).
    """
    obj = get_ref(store, ref, meta.namespace(machine))
    if obj is None or not machine["metadata"].get("uid"):
        return obj
    after = copy.deepcopy(obj)
    md = after["metadata"]
    owners = [
        o
        for o in md.get("ownerReferences") or []
        if not o.get("controller") or o.get("uid") == machine["metadata"]["uid"]
    ]
    md["ownerReferences"] = owners
    meta.set_owner(after, machine, controller=True)
    md.setdefault("labels", {})[names.CLUSTER_NAME_LABEL] = machine["spec"]["clusterName"]
    if md != obj["metadata"] and not check:
        return store.update(after)
    return after if check else obj


def active_control_plane_machines(store, cluster_name: str, namespace: str) -> list[dict]:
    selector = f"{names.CLUSTER_NAME_LABEL}={cluster_name},{names.CONTROL_PLANE_LABEL}"
    machines = store.list("Machine", namespace, selector)
    return [m for m in machines if not meta.is_deleting(m)]


def node_deletion_allowed(store, machine: dict, cluster: dict | None) -> tuple[bool, str]:
    """cluster-api internal/controllers/machine/machine_controller.go isDeleteNodeAllowed: (allowed, why not)."""
    ns = meta.namespace(machine)
    if cluster is not None and meta.is_deleting(cluster):
        return False, "the Cluster is being deleted"
    if not ((machine.get("status") or {}).get("nodeRef") or {}).get("name"):
        return False, "the Machine has no nodeRef"
    if cluster is not None:
        cp = get_ref(store, (cluster.get("spec") or {}).get("controlPlaneRef"), ns)
        if cp is not None and meta.is_deleting(cp):
            return False, "the control plane is being deleted"
    active_cp = active_control_plane_machines(store, machine["spec"]["clusterName"], ns)
    if not active_cp:
        return False, "no control plane Machine is left"
    is_cp = names.CONTROL_PLANE_LABEL in meta.labels(machine)
    if len(active_cp) == 1 and is_cp and meta.name(active_cp[0]) == meta.name(machine):
        return False, "this is the last control plane Machine"
    return True, ""


def save(store, before: dict, after: dict, check: bool) -> dict:
    """``write`` unless in check mode or nothing changed; the object as it is (or would be) now."""
    if check or after == before:
        return after
    return write(store, before, after)


def write(store, before: dict, after: dict) -> dict:
    """Write spec/metadata then status, each only when it changed; return the stored object."""
    current = before
    if {k: v for k, v in after.items() if k != "status"} != {k: v for k, v in before.items() if k != "status"}:
        current = store.update({k: v for k, v in after.items() if k != "status"})
    status = copy.deepcopy(after.get("status") or {})
    generation = current["metadata"].get("generation")
    for cond in status.get("conditions") or []:
        # The spec write may have moved the generation the conditions were computed for.
        if "observedGeneration" in cond:
            cond["observedGeneration"] = generation
    if status != (current.get("status") or {}):
        body = copy.deepcopy(current)
        body["status"] = status
        current = store.update_status(body)
    return current
