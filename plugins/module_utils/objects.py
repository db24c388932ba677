# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Apply and remove objects of any model kind: what baremetal.capi.object does.

``apply`` is a JSON merge patch (RFC 7386, ``kubectl patch --type merge``) of
the given object over the stored one: mappings merge key by key, a ``null``
value removes the key, lists and scalars replace what was there.  With
``force`` the given object replaces the stored one instead.  The write carries
the resourceVersion that was read, so a concurrent writer makes it retry from a
fresh read rather than overwrite; nothing is written when nothing differs.
"""

from __future__ import annotations

import copy
import time

from ansible_collections.baremetal.capi.plugins.module_utils.errors import (
    AlreadyExists,
    Conflict,
    Invalid,
    NotFound,
    Timeout,
)
from ansible_collections.baremetal.capi.plugins.module_utils.model import kinds, meta, selectors
from ansible_collections.baremetal.capi.plugins.module_utils.store import common
from ansible_collections.baremetal.capi.plugins.module_utils.store import mutate as rmw

# Metadata the store owns: ignored when given (an object read back from
# object_info can be fed to object unchanged).  resourceVersion is a
# precondition instead: see apply.
SERVER_FIELDS = (
    "uid",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
)

# How many fresh reads to try when another writer keeps moving the object, and
# the pause between two (client-go's retry.RetryOnConflict: 10 ms, jittered).
_ATTEMPTS = 10
_BACKOFF = 0.01


def merge_patch(target, patch):
    """RFC 7386 JSON merge patch of ``patch`` over ``target`` (neither is modified)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def build(
    definition=None,
    *,
    api_version=None,
    kind=None,
    name=None,
    namespace=None,
    labels=None,
    annotations=None,
    spec=None,
    status=None,
    default_namespace="default",
):
    """The object a task describes: ``definition`` with the single options merged over it.

    Returns ``(object, Kind)``.  Secret ``stringData`` is folded into base64
    ``data`` here, so the comparison with the stored Secret is like for like.
    """
    if definition is not None and not isinstance(definition, dict):
        raise Invalid("definition must be a mapping", field="definition")
    obj = copy.deepcopy(definition or {})
    if kind:
        obj["kind"] = kind
    if api_version:
        obj["apiVersion"] = api_version
    if not obj.get("kind"):
        raise Invalid("kind is required (the kind option or definition.kind)", field="kind")
    k = kinds.resolve(obj["kind"], obj.get("apiVersion"))
    obj["kind"], obj["apiVersion"] = k.kind, k.api_version
    md = obj.setdefault("metadata", {})
    if not isinstance(md, dict):
        raise Invalid("metadata must be a mapping", field="definition.metadata")
    if name:
        md["name"] = name
    if not md.get("name"):
        # generateName would make a new object on every run: not idempotent.
        raise Invalid("name is required (the name option or definition.metadata.name)", obj=k.kind, field="name")
    if namespace:
        md["namespace"] = namespace
    if k.namespaced:
        md.setdefault("namespace", default_namespace or "default")
    elif md.get("namespace"):
        raise Invalid(f"{k.kind} is cluster-scoped: no namespace", obj=meta.ref(obj), field="namespace")
    for field, value in (("labels", labels), ("annotations", annotations)):
        if value is not None:
            md[field] = merge_patch(md.get(field), value) if md.get(field) else value
    for field, value in (("spec", spec), ("status", status)):
        if value is not None:
            obj[field] = merge_patch(obj.get(field), value) if obj.get(field) else value
    for field in SERVER_FIELDS:
        md.pop(field, None)
    if k.kind == "Secret":
        common.merge_string_data(obj)
    return obj, k


def _split_status(obj: dict, k: kinds.Kind):
    """(object without status, status patch or None) for kinds whose status is a subresource."""
    obj = copy.deepcopy(obj)
    if k.status_subresource:
        return obj, obj.pop("status", None)
    return obj, None


def apply(store, obj: dict, k: kinds.Kind, *, force: bool = False, check: bool = False, admit=None):
    """Create or patch ``obj``; returns ``(changed, before, after, method)``.

    ``admit(want, before)`` (webhooks.admit) may convert, default and validate the object the write
    would make, before anything is written.

    ``method`` is ``create``, ``update`` or ``None`` (nothing to do).  In check
    mode nothing is written and ``after`` is the object the write would make
    (without the fields only the store can fill, such as uid on create).
    """
    body, status = _split_status(obj, k)
    md = body["metadata"]
    expected_rv = md.pop("resourceVersion", None)
    name, ns = md["name"], md.get("namespace")

    def attempt():
        try:
            before = store.get(k.key, name, ns)
        except NotFound:
            before = None
        if before is None:
            if expected_rv:
                raise NotFound("resourceVersion given but the object does not exist", obj=meta.ref(body))
            want = merge_patch({}, body)
            meta.validate_object(want, for_create=True)
            if admit is not None:
                want = admit(want, None)
            if check:
                after = want
                if status:
                    after["status"] = merge_patch({}, status)
                return True, None, after, "create"
            try:
                return True, None, store.create(want), "create"
            except AlreadyExists as exc:  # someone else created it meanwhile: patch theirs
                raise Conflict(exc.message, obj=exc.obj) from None
        if expected_rv and str(expected_rv) != before["metadata"].get("resourceVersion"):
            raise common.conflict(k, name)
        changed, after = _update(store, before, body, status, k, force, check, admit)
        return changed, before, after, ("update" if changed else None)

    def exhausted(last: Conflict) -> Conflict:
        if expected_rv:  # the caller's own resourceVersion is stale: not retried
            return last
        return Conflict(f"the object kept changing while being updated ({_ATTEMPTS} attempts)", obj=meta.ref(body))

    changed, before, after, method = rmw.on_conflict(
        attempt,
        what=meta.ref(body),
        attempts=1 if expected_rv else _ATTEMPTS,
        backoff=_BACKOFF,
        exhausted=exhausted,
    )
    if method == "create" and status and not check:  # outside the retries: a lost race here is the caller's
        after = _write_status(store, after, merge_patch({}, status))
    return changed, before, after, method


def _update(store, before, body, status, k, force, check, admit=None):
    base = {key: value for key, value in before.items() if key != "status" or not k.status_subresource}
    want = merge_patch({}, body) if force else merge_patch(base, body)
    changed = False
    # a body that changes nothing of the stored object (a re-run's): nothing to validate, admit or write; the
    # stored object was admitted when it was written
    if force or not common.same(want, base):
        meta.validate_object(want, for_create=False)
        if admit is not None:
            want = admit(want, before)
        predicted = common.merged_update(before, want, k)  # raises Forbidden as the store would
        predicted["metadata"]["resourceVersion"] = before["metadata"].get("resourceVersion")
        changed = not common.same(predicted, before)
    after = before
    if changed:
        if check:
            after = predicted
        else:
            want["metadata"]["resourceVersion"] = before["metadata"]["resourceVersion"]
            after = store.update(want)
    if status is not None:
        want_status = merge_patch({}, status) if force else merge_patch(after.get("status") or {}, status)
        if want_status != (after.get("status") or {}):
            changed = True
            if check:
                after = copy.deepcopy(after)
                after["status"] = want_status
            else:
                after = _write_status(store, after, want_status)
    return changed, after


def _write_status(store, obj: dict, status: dict) -> dict:
    obj = copy.deepcopy(obj)
    obj["status"] = status
    return store.update_status(obj)


def remove(
    store,
    k: kinds.Kind,
    name: str,
    namespace: str | None,
    *,
    check: bool = False,
    wait: bool = False,
    timeout: float = 300,
    sleep: float = 2,
):
    """Delete an object; returns ``(changed, before, after)``.

    ``after`` is None once the object is gone, or the object still held by its
    finalizers.  With ``wait`` it polls until the object is gone and raises
    Timeout naming the finalizers still holding it.
    """
    ns = namespace if k.namespaced else None
    try:
        before = store.get(k.key, name, ns)
    except NotFound:
        return False, None, None
    if meta.is_deleting(before):
        changed, after = False, before
    elif check:
        after = None
        if meta.finalizers(before):
            after = copy.deepcopy(before)
            after["metadata"]["deletionTimestamp"] = "(set by the store)"
        return True, before, after
    else:
        changed = True
        try:
            after = store.delete(k.key, name, ns)
        except NotFound:
            return False, None, None
    if not wait or after is None or check:
        return changed, before, after
    deadline = time.monotonic() + timeout
    while True:
        try:
            after = store.get(k.key, name, ns)
        except NotFound:
            return changed, before, None
        if time.monotonic() >= deadline:
            raise Timeout(
                f"still present after {timeout:g}s: being deleted, waiting for finalizers "
                f"{', '.join(meta.finalizers(after)) or '(none)'}",
                obj=meta.ref(after),
            )
        time.sleep(sleep)


def selected_kind(params: dict) -> kinds.Kind:
    """The kind of a delete by label selector (the object module's ``label_selector``), refusing what would make
    it ambiguous: a name or a definition (one object), state=present, no kind."""
    for other in ("name", "definition"):
        if params.get(other):
            raise Invalid(f"label_selector deletes every matching object: not with {other}", field=other)
    if params.get("state") != "absent":
        raise Invalid("label_selector is for state=absent (deleting the matching objects)", field="state")
    if not params.get("kind"):
        raise Invalid("label_selector needs the kind of the objects to delete", field="kind")
    k = kinds.resolve(params["kind"], params.get("api_version"))
    everything = not selectors.parse(params.get("label_selector"), where="label_selector").requirements
    # kubectl delete asks for --all before it deletes every object of a kind, and refuses --all with -l
    if everything and not params.get("all"):
        raise Invalid(
            f"an empty selector matches every {k.kind}: give all=true to delete them all",
            field="label_selector",
        )
    if params.get("all") and not everything:
        raise Invalid("all=true deletes every object of the kind: not with a label_selector", field="all")
    return k


def remove_selected(store, k: kinds.Kind, namespace, selector, check: bool = False, **wait) -> list[dict]:
    """Delete every object of ``k`` in ``namespace`` whose labels match ``selector`` (a string, a list of strings
    all of which must match, or a LabelSelector mapping), each as :func:`remove` deletes one.
    Returns the objects deleted (that would be, with ``check``), as they were before."""
    deleted = []
    for ns, name in store.list_keys(k.key, namespace, selector):
        changed, before, _after = remove(store, k, name, ns or None, check=check, **wait)
        if changed:
            deleted.append(before)
    return deleted
