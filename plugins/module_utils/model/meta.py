"""Object metadata: names, references, owner references, finalizers, validation."""

from __future__ import annotations

import copy
import re

from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.model import kinds
from ansible_collections.baremetal.capi.plugins.module_utils.model.selectors import label_key_error, label_value_error

DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")

_META_FIELDS = {
    "name",
    "generateName",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "finalizers",
    "ownerReferences",
    "managedFields",
    "selfLink",
}


def ref(obj: dict) -> str:
    """``Kind namespace/name`` for messages."""
    md = obj.get("metadata") or {}
    ns = md.get("namespace")
    return f"{obj.get('kind')} {ns + '/' if ns else ''}{md.get('name') or md.get('generateName') or '?'}"


def name(obj: dict) -> str:
    return obj["metadata"]["name"]


def namespace(obj: dict) -> str | None:
    return (obj.get("metadata") or {}).get("namespace")


def labels(obj: dict) -> dict:
    return (obj.get("metadata") or {}).get("labels") or {}


def annotations(obj: dict) -> dict:
    return (obj.get("metadata") or {}).get("annotations") or {}


def finalizers(obj: dict) -> list:
    return (obj.get("metadata") or {}).get("finalizers") or []


def is_deleting(obj: dict) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def add_finalizer(obj: dict, finalizer: str) -> bool:
    fins = obj.setdefault("metadata", {}).setdefault("finalizers", [])
    if finalizer in fins:
        return False
    fins.append(finalizer)
    return True


def remove_finalizer(obj: dict, finalizer: str) -> bool:
    fins = (obj.get("metadata") or {}).get("finalizers") or []
    if finalizer not in fins:
        return False
    obj["metadata"]["finalizers"] = [f for f in fins if f != finalizer]
    return True


def owner_reference(owner: dict, controller: bool = False, block_owner_deletion: bool | None = None) -> dict:
    md = owner["metadata"]
    out = {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": md["name"], "uid": md["uid"]}
    if controller:
        out["controller"] = True
    if block_owner_deletion is not None:
        out["blockOwnerDeletion"] = block_owner_deletion
    return out


def set_owner(obj: dict, owner: dict, controller: bool = False) -> bool:
    """Add (or refresh) an owner reference to ``owner``.  True if changed."""
    refs = obj.setdefault("metadata", {}).setdefault("ownerReferences", [])
    new = owner_reference(owner, controller=controller)
    for i, r in enumerate(refs):
        if r.get("uid") == new["uid"] or (
            r.get("kind") == new["kind"]
            and r.get("name") == new["name"]
            and r.get("apiVersion", "").split("/")[0] == new["apiVersion"].split("/")[0]
        ):
            if r == new:
                return False
            refs[i] = new
            return True
    refs.append(new)
    return True


def owners_of_kind(obj: dict, kind: str) -> list[dict]:
    return [r for r in (obj.get("metadata") or {}).get("ownerReferences") or [] if r.get("kind") == kind]


def object_ref(obj: dict) -> dict:
    """A corev1.ObjectReference-shaped reference (consumerRef and friends)."""
    md = obj["metadata"]
    out = {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": md["name"]}
    if md.get("namespace"):
        out["namespace"] = md["namespace"]
    if md.get("uid"):
        out["uid"] = md["uid"]
    return out


def new(kind: str, name: str, namespace: str | None = "default", spec=None, **metadata) -> dict:
    """A fresh object dict of a model kind."""
    k = kinds.resolve(kind)
    md = {"name": name}
    if k.namespaced:
        md["namespace"] = namespace or "default"
    for key, value in metadata.items():
        if value is not None:
            md[key] = value
    obj = {"apiVersion": k.api_version, "kind": k.kind, "metadata": md}
    if spec is not None:
        obj["spec"] = spec
    return obj


def validate_object(obj: dict, *, for_create: bool) -> kinds.Kind:
    """Check what every store needs from an object before writing it; return its Kind.

    Raises Invalid naming the object and the field.
    """
    k = kinds.of(obj)
    where = ref(obj)
    md = obj.get("metadata")
    if not isinstance(md, dict):
        raise Invalid("metadata is required", obj=where, field="metadata")
    unknown = set(md) - _META_FIELDS
    if unknown:
        raise Invalid(f"unknown field(s) {', '.join(sorted(unknown))}", obj=where, field="metadata")
    nm = md.get("name")
    if not nm and not (for_create and md.get("generateName")):
        raise Invalid("name is required", obj=where, field="metadata.name")
    check = (nm or md.get("generateName") + "x") if (nm or md.get("generateName")) else ""
    pattern = DNS1123_LABEL if k.kind == "Namespace" else DNS1123_SUBDOMAIN
    if not isinstance(check, str) or len(check) > (63 if k.kind == "Namespace" else 253) or not pattern.match(check):
        raise Invalid(
            f"invalid name {nm!r}: must be a lowercase RFC 1123 {'label' if k.kind == 'Namespace' else 'subdomain'}",
            obj=where,
            field="metadata.name",
        )
    if k.namespaced:
        ns = md.get("namespace")
        if not ns:
            raise Invalid("namespace is required for a namespaced kind", obj=where, field="metadata.namespace")
        if not isinstance(ns, str) or len(ns) > 63 or not DNS1123_LABEL.match(ns):
            raise Invalid(f"invalid namespace {ns!r}", obj=where, field="metadata.namespace")
    elif md.get("namespace"):
        raise Invalid(f"{k.kind} is cluster-scoped: no namespace", obj=where, field="metadata.namespace")
    for field in ("labels", "annotations"):
        value = md.get(field)
        if value is None:
            continue
        if not isinstance(value, dict):
            raise Invalid(f"{field} must be a mapping", obj=where, field=f"metadata.{field}")
        for key, val in value.items():
            err = label_key_error(key)
            if err:
                raise Invalid(err, obj=where, field=f"metadata.{field}")
            if field == "labels":
                err = label_value_error(val)
            elif not isinstance(val, str):
                err = f"annotation {key!r} must be a string"
            if err:
                raise Invalid(err, obj=where, field=f"metadata.{field}[{key}]")
    fins = md.get("finalizers")
    if fins is not None and (not isinstance(fins, list) or not all(isinstance(f, str) and f for f in fins)):
        raise Invalid("finalizers must be a list of strings", obj=where, field="metadata.finalizers")
    refs = md.get("ownerReferences")
    if refs is not None:
        if not isinstance(refs, list):
            raise Invalid("ownerReferences must be a list", obj=where, field="metadata.ownerReferences")
        for i, r in enumerate(refs):
            if not isinstance(r, dict) or not all(r.get(f) for f in ("apiVersion", "kind", "name", "uid")):
                raise Invalid(
                    "each owner reference needs apiVersion, kind, name and uid",
                    obj=where,
                    field=f"metadata.ownerReferences[{i}]",
                )
    if k.kind == "Secret":
        for field in ("data", "stringData"):
            if obj.get(field) is not None and not isinstance(obj[field], dict):
                raise Invalid(f"{field} must be a mapping", obj=where, field=field)
    return k


def deepcopy(obj):
    return copy.deepcopy(obj)
