"""What both stores do the same way to an object before it is written."""

from __future__ import annotations

import base64
import copy
import json
import random

from ansible_collections.baremetal.capi.plugins.module_utils.errors import CapiError, Conflict, Forbidden, Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta, names, ownership

# The alphabet Kubernetes uses for generateName suffixes (no vowels, no 0/1/3).
_SUFFIX = "bcdfghjklmnpqrstvwxz2456789"

MUTABLE_META = ("labels", "annotations", "finalizers", "ownerReferences")


def generate_name(prefix: str) -> str:
    return prefix + "".join(random.choice(_SUFFIX) for _pos in range(5))


def merge_string_data(obj: dict) -> None:
    """Secrets: stringData is write-only, merged over data as base64."""
    string_data = obj.pop("stringData", None)
    if string_data:
        data = obj.setdefault("data", {}) or {}
        for key, value in string_data.items():
            data[key] = base64.b64encode(str(value).encode()).decode()
        obj["data"] = data


def creatable(obj: dict):
    """A copy of an object about to be created, and its Kind (validated as the API server would)."""
    obj = copy.deepcopy(obj)
    k = meta.validate_object(obj, for_create=True)
    ownership.mark(obj)
    if obj["metadata"].get("resourceVersion"):
        raise Invalid(
            "resourceVersion should not be set on objects to be created",
            obj=meta.ref(obj),
            field="metadata.resourceVersion",
        )
    return obj, k


def updatable(obj: dict, status: bool):
    """The Kind of an object about to be updated (validated as the API server would); ``status``: its status
    subresource, which the kind must have."""
    k = meta.validate_object(obj, for_create=False)
    if status and not k.status_subresource:
        raise Invalid(f"{k.kind} has no status subresource", obj=meta.ref(obj), field="status")
    return k


def guard(stored: dict, action: str, *, adopt: bool, get=None, seen_managers=None) -> bool:
    """Refuse (Forbidden) to ``action`` an object an upstream controller manages (model/ownership.py); else
    whether the write may mark it as the collection's (not while it is only paused for the upstream controller).

    ``get(kind, name, namespace)`` reads the object's Cluster, whose ``spec.paused`` pauses it; it is called
    only for an unmarked object an upstream controller wrote. ``seen_managers``: the stored object's field
    managers when they are not in ``stored`` (the kubernetes store keeps managedFields out of objects).
    """
    found = ownership.upstream(stored, seen_managers)
    if not found or adopt:
        return True
    cluster = None
    name = meta.labels(stored).get(names.CLUSTER_NAME_LABEL) or (stored.get("spec") or {}).get("clusterName")
    if get is not None and name and stored.get("kind") != "Cluster":
        try:
            cluster = get("Cluster", name, meta.namespace(stored))
        except CapiError:
            cluster = None  # no Cluster (or one the store cannot read): only the object's own marks count
    if ownership.paused(stored, cluster):
        return False
    raise Forbidden(ownership.refusal(stored, found, action), obj=meta.ref(stored))


def conflict(kind, name) -> Conflict:
    return Conflict(
        f'Operation cannot be fulfilled on {kind.plural}.{kind.group or "core"} "{name}": the object has been '
        "modified; please apply your changes to the latest version and try again"
    )


def check_resource_version(obj: dict, stored_rv: int, kind) -> None:
    given = (obj.get("metadata") or {}).get("resourceVersion")
    if given in (None, ""):
        return
    try:
        given_i = int(given)
    except (TypeError, ValueError):
        raise Invalid(
            f"invalid resourceVersion {given!r}", obj=meta.ref(obj), field="metadata.resourceVersion"
        ) from None
    if given_i != stored_rv:
        raise conflict(kind, obj["metadata"]["name"])


def spec_part(obj: dict) -> str:
    """Everything but metadata and status, canonically, to decide generation bumps."""
    return json.dumps({k: v for k, v in obj.items() if k not in ("metadata", "status")}, sort_keys=True)


def merged_update(stored: dict, obj: dict, kind) -> dict:
    """The object an update of ``stored`` with ``obj`` produces (before rv/generation)."""
    new = copy.deepcopy(obj)
    new_md = {k: v for k, v in (obj.get("metadata") or {}).items() if k in MUTABLE_META and v not in (None, [], {})}
    for key in ("name", "namespace", "uid", "creationTimestamp", "deletionTimestamp", "generation"):
        if key in stored["metadata"]:
            new_md[key] = stored["metadata"][key]
    new["metadata"] = new_md
    if ownership.marked(stored):  # the marker stays once set: an update that drops it (a replace) keeps it
        ownership.mark(new)
    if kind.status_subresource:
        if "status" in stored:
            new["status"] = copy.deepcopy(stored["status"])
        else:
            new.pop("status", None)
    if kind.kind == "Secret":
        merge_string_data(new)
    old_fins = set(meta.finalizers(stored))
    if meta.is_deleting(stored) and set(meta.finalizers(new)) - old_fins:
        raise Forbidden(
            f"no new finalizers can be added if the object is being deleted, found new finalizers "
            f"{sorted(set(meta.finalizers(new)) - old_fins)}",
            obj=meta.ref(stored),
            field="metadata.finalizers",
        )
    if spec_part(new) != spec_part(stored):
        new["metadata"]["generation"] = stored["metadata"].get("generation", 1) + 1
    return new


def same(a: dict, b: dict) -> bool:
    strip = ("resourceVersion",)
    ma = {k: v for k, v in a.get("metadata", {}).items() if k not in strip}
    mb = {k: v for k, v in b.get("metadata", {}).items() if k not in strip}
    if ma != mb:
        return False
    ra = {k: v for k, v in a.items() if k != "metadata"}
    rb = {k: v for k, v in b.items() if k != "metadata"}
    return ra == rb


# Field filters of ``list(..., fields=...)`` and ``list_keys``: a path into the object -> what it must hold.
# A path is dotted ("spec.consumerRef.name") or a tuple of keys, for keys with dots or slashes
# (("metadata", "annotations", "baremetalhost.metal3.io/paused")).  What it must hold:
#   a string, number or boolean: equal to it; None: absent or null;
#   a tuple of those: any one of them;
#   UNSET: absent, null or empty ("", 0, false, {}, []): what Python's falsiness and Go's zero value mean;
#   ABSENT: the key is not there at all (a map key such as an annotation, whatever its value).
# Like a Kubernetes field selector, but on any path (CRDs serve field selectors only on metadata.name/namespace).
# The sqlite store answers them in SQL, and indexes the paths in INDEXED_FIELDS.
CONSUMER_NAME = "spec.consumerRef.name"
INDEXED_FIELDS = (CONSUMER_NAME,)


class _Marker:
    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name


UNSET = _Marker("UNSET")
ABSENT = _Marker("ABSENT")
_MISSING = _Marker("missing")


# What chooseHost asks of an "available" host (cluster-api-provider-metal3 baremetal/metal3machine_manager.go
# chooseHost;
# metal3/choose.py classify), as field filters: no
# consumerRef, not deleting, no errorMessage, none of the paused / unhealthy annotations (whatever their value),
# provisioning state ready or available.  The sqlite store answers exactly this set from one index
# (objects_free_hosts), without reading the hosts.
FREE_HOST_FIELDS = {
    "spec.consumerRef": UNSET,
    "metadata.deletionTimestamp": UNSET,
    "status.errorMessage": UNSET,
    ("metadata", "annotations", names.BMH_PAUSED_ANNOTATION): ABSENT,
    ("metadata", "annotations", names.UNHEALTHY_ANNOTATION): ABSENT,
    ("metadata", "annotations", names.UNHEALTHY_ANNOTATION_DEPRECATED): ABSENT,
    "status.provisioning.state": (names.BMH_STATE_READY, names.BMH_STATE_AVAILABLE),
}
# (index name, kind, filters) the sqlite store keeps an index for
FILTER_INDEXES = (("objects_free_hosts", "BareMetalHost", FREE_HOST_FIELDS),)


def _scalar(value) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def field_path(path) -> tuple:
    """A filter path as a tuple of keys; Invalid for anything else."""
    from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid

    if isinstance(path, str):
        parts = tuple(path.split("."))
        if not path or any(not p.isidentifier() for p in parts):
            raise Invalid(f"field filter path {path!r} is not a dotted path of field names", field="fields")
        return parts
    if (
        isinstance(path, tuple)
        and path
        and all(isinstance(p, str) and p and '"' not in p and p.isprintable() for p in path)
    ):
        return path
    raise Invalid(f"field filter path {path!r}: a dotted string or a tuple of keys (no quotes)", field="fields")


def check_fields(fields: dict | None) -> dict:
    """The filters as {tuple of keys: wanted}, checked (Invalid naming the filter otherwise)."""
    from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid

    out = {}
    for path, value in dict(fields or {}).items():
        keys = field_path(path)
        ok = (
            value is UNSET
            or value is ABSENT
            or (_scalar(value) and not isinstance(value, float))
            or (isinstance(value, tuple) and value and all(_scalar(v) and not isinstance(v, float) for v in value))
        )
        if not ok:
            raise Invalid(
                f"field filter {'.'.join(keys)}: a string, number, boolean, None, a tuple of those, UNSET or "
                f"ABSENT, not {value!r}",
                field="fields",
            )
        out[keys] = value
    return out


def field_value(obj: dict, path):
    """The value at a path (dotted or a tuple of keys); None when it is absent."""
    value = _lookup(obj, field_path(path) if not isinstance(path, tuple) else path)
    return None if value is _MISSING else value


def _lookup(obj, keys: tuple):
    value = obj
    for part in keys:
        if not isinstance(value, dict) or part not in value:
            return _MISSING
        value = value[part]
    return value


def field_matches(obj: dict, keys: tuple, want) -> bool:
    value = _lookup(obj, keys)
    if want is ABSENT:
        return value is _MISSING
    if value is _MISSING:
        value = None
    if want is UNSET:
        return not value
    if isinstance(want, tuple):
        return any(value == w if w is not None else value is None for w in want)
    return value == want if want is not None else value is None


def fields_match(obj: dict, fields: dict) -> bool:
    """``fields`` as check_fields returns them."""
    return all(field_matches(obj, keys, want) for keys, want in fields.items())
