# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""ClusterResourceSet: add-ons applied to a workload cluster, as Cluster API's addons controller does.

Upstream ``exp/addons/internal/controllers`` (clusterresourceset_controller.go, _helpers.go):

* a ClusterResourceSet selects Clusters of its namespace by ``spec.clusterSelector`` (an empty selector selects
  none) and lists ``spec.resources`` - ConfigMaps, or Secrets of type ``addons.cluster.x-k8s.io/resource-set`` -
  whose every data value is YAML (one or more documents) applied to the workload cluster;
* nothing is applied before the Cluster's control plane is initialized (the workload API answers then);
* ``ApplyOnce`` (the webhook default) applies a resource once: each object is created when missing and never
  touched again, even when the resource changes; ``Reconcile`` applies it again whenever its hash changes
  (server-side apply);
* a ClusterResourceSetBinding named like the Cluster, owned by it, records per ClusterResourceSet which
  resources were applied, their hash (``sha256:`` over the data values in key order) and when;
* a ClusterResourceSet that is deleted or no longer selects the Cluster leaves its binding entry (and what it
  applied stays in the workload cluster, as upstream); ``ResourcesApplied`` on the set reports the outcome.

``reconcile_cluster`` is the converge loop's hook (its cluster item); ``reconcile`` the whole report the module returns.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import re

from ansible_collections.baremetal.capi.plugins.module_utils.capi import refs
from ansible_collections.baremetal.capi.plugins.module_utils.errors import (
    CapiError,
    Invalid,
    NotFound,
    StoreUnavailable,
)
from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions, meta, names, selectors

APPLY_ONCE = "ApplyOnce"
RECONCILE = "Reconcile"
STRATEGIES = (APPLY_ONCE, RECONCILE)
RESOURCE_SET_SECRET_TYPE = "addons.cluster.x-k8s.io/resource-set"
RESOURCES_APPLIED = "ResourcesApplied"
# v1beta2 reasons of ResourcesApplied
APPLIED_REASON = "Applied"
NOT_APPLIED_REASON = "NotApplied"
WRONG_SECRET_TYPE_REASON = "WrongSecretType"
RETRIEVING_RESOURCE_FAILED_REASON = "RetrievingResourceFailed"
APPLY_FAILED_REASON = "ApplyFailed"
FIELD_MANAGER = "baremetal-capi-clusterresourceset"
# applied first, so that what lives in them can be created (upstream sorts Namespaces and CRDs ahead)
_FIRST = ("Namespace", "CustomResourceDefinition")


# -- the object and its webhook -------------------------------------------------------------------------------


def default(crs: dict) -> dict:
    out = copy.deepcopy(crs)
    out.setdefault("spec", {}).setdefault("strategy", APPLY_ONCE)
    return out


def validate(crs: dict, old: dict | None = None) -> None:
    where, spec = meta.ref(crs), crs.get("spec") or {}
    strategy = spec.get("strategy") or APPLY_ONCE
    if strategy not in STRATEGIES:
        raise Invalid(f"strategy must be one of {', '.join(STRATEGIES)}", obj=where, field="spec.strategy")
    if old is not None and ((old.get("spec") or {}).get("strategy") or APPLY_ONCE) != strategy:
        raise Invalid("strategy is immutable", obj=where, field="spec.strategy")
    selectors.parse(spec.get("clusterSelector") or {}, where=f"{where}: spec.clusterSelector")
    for i, res in enumerate(spec.get("resources") or []):
        if (res or {}).get("kind") not in ("ConfigMap", "Secret"):
            raise Invalid("kind must be ConfigMap or Secret", obj=where, field=f"spec.resources[{i}].kind")
        if not (res or {}).get("name"):
            raise Invalid("name is required", obj=where, field=f"spec.resources[{i}].name")


# -- resources -> manifests ----------------------------------------------------------------------------------


def compute_hash(values: list[bytes]) -> str:
    """upstream computeHash: sha256 over the data values, in key order."""
    digest = hashlib.sha256()
    for value in values:
        digest.update(value)
    return f"sha256:{digest.hexdigest()}"


def resource_values(store, ns: str, res: dict) -> list[bytes]:
    """The data values of a listed resource, in key order (a Secret's decoded)."""
    obj = refs.get_or_none(store, res["kind"], res["name"], ns)
    if obj is None:
        raise NotFound(f"{res['kind']} {ns}/{res['name']} not found")
    if res["kind"] == "Secret":
        if obj.get("type") != RESOURCE_SET_SECRET_TYPE:
            raise Invalid(
                f"Secret {ns}/{res['name']} has type {obj.get('type')!r}, not {RESOURCE_SET_SECRET_TYPE}",
                field="type",
            )
        data = obj.get("data") or {}
        return [base64.b64decode(data[k]) for k in sorted(data)]
    data = obj.get("data") or {}
    return [str(data[k]).encode() for k in sorted(data)]


def yaml_error(exc) -> str:
    """Where and what PyYAML found wrong, never the text around it: a manifest may hold a password, and the
    task failure goes to the job output.  PyYAML's own message quotes the offending lines (``str(exc)``)."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else "somewhere"
    context_mark = getattr(exc, "context_mark", None)
    what = " ".join(str(p) for p in (getattr(exc, "context", None), getattr(exc, "problem", None)) if p) or "not YAML"
    # the words PyYAML chose, without what they quote (a tag such as '!vault' may be a secret's first word)
    # (a character or a token name such as '<block end>' is kept: it says what is wrong and is not the user's)
    what = re.sub(r"'([^']*)'", lambda m: m[0] if len(m[1]) <= 2 or m[1].startswith("<") else "'...'", what)
    started = (context_mark.line, context_mark.column) if context_mark is not None else None
    if started is not None and mark is not None and started != (mark.line, mark.column):
        what += f" (started at line {context_mark.line + 1}, column {context_mark.column + 1})"
    return f"{where}: {what}"


def objects_of(values: list[bytes], where: str) -> list[dict]:
    """Every object of the YAML documents (``kind: List`` expanded), Namespaces and CRDs first."""
    import yaml

    out = []
    for value in values:
        try:
            docs = list(yaml.safe_load_all(value.decode()))
        except yaml.YAMLError as exc:
            raise Invalid(f"{where}: not YAML: {yaml_error(exc)}", field="data") from None
        for doc in docs:
            if doc is None:
                continue
            items = doc.get("items") if isinstance(doc, dict) and doc.get("kind") == "List" else [doc]
            for obj in items or []:
                if not isinstance(obj, dict) or not obj.get("apiVersion") or not obj.get("kind"):
                    raise Invalid(f"{where}: a document without apiVersion and kind", field="data")
                if not (obj.get("metadata") or {}).get("name"):
                    raise Invalid(f"{where}: {obj['kind']} without metadata.name", field="data")
                out.append(obj)
    return sorted(out, key=lambda o: 0 if o["kind"] in _FIRST else 1)


# -- the workload API ----------------------------------------------------------------------------------------


class Applier:
    """Objects created or server-side applied through a WorkloadClient; discovery cached per group/version."""

    def __init__(self, client):
        self.client = client
        self._resources: dict[str, dict] = {}

    def _resource(self, api_version: str, kind: str) -> dict:
        if api_version not in self._resources:
            path = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
            listed = self.client.request("GET", path).get("resources") or []
            self._resources[api_version] = {r["kind"]: r for r in listed if "/" not in r["name"]}
        found = self._resources[api_version].get(kind)
        if found is None:
            self._resources.pop(api_version, None)  # a CRD applied meanwhile may serve it next time
            raise NotFound(f"the workload API serves no {kind} in {api_version}")
        return found

    def path(self, obj: dict) -> str:
        res = self._resource(obj["apiVersion"], obj["kind"])
        base = "/api/v1" if obj["apiVersion"] == "v1" else f"/apis/{obj['apiVersion']}"
        if res.get("namespaced"):
            ns = obj["metadata"].get("namespace") or "default"
            obj["metadata"]["namespace"] = ns
            return f"{base}/namespaces/{ns}/{res['name']}"
        return f"{base}/{res['name']}"

    def create_if_missing(self, obj: dict) -> bool:
        """ApplyOnce: create; an object that exists is left as it is. True if created."""
        obj = copy.deepcopy(obj)
        path = self.path(obj)
        try:
            self.client.request("GET", f"{path}/{obj['metadata']['name']}")
            return False
        except NotFound:
            pass
        self.client.request("POST", path, obj)
        return True

    def apply(self, obj: dict) -> None:
        """Reconcile: server-side apply, taking the fields over (force)."""
        obj = copy.deepcopy(obj)
        path = self.path(obj)
        self.client.request(
            "PATCH",
            f"{path}/{obj['metadata']['name']}",
            json.dumps(obj),  # JSON is YAML; a text body goes out as it is
            content_type="application/apply-patch+yaml",
            query={"fieldManager": FIELD_MANAGER, "force": "true"},
        )


# -- reconcile -----------------------------------------------------------------------------------------------


def selects(crs: dict, cluster: dict) -> bool:
    sel = (crs.get("spec") or {}).get("clusterSelector") or {}
    if not sel.get("matchLabels") and not sel.get("matchExpressions"):
        return False  # upstream: an empty selector selects no Cluster
    return selectors.parse(sel, where=f"{meta.ref(crs)}: spec.clusterSelector").matches(meta.labels(cluster))


def cluster_sets(store, cluster: dict) -> list[dict]:
    return [
        s
        for s in store.list("ClusterResourceSet", meta.namespace(cluster))
        if not meta.is_deleting(s) and selects(s, cluster)
    ]


def _binding(store, cluster: dict) -> dict:
    found = refs.get_or_none(store, "ClusterResourceSetBinding", meta.name(cluster), meta.namespace(cluster))
    if found is not None:
        return found
    obj = meta.new(
        "ClusterResourceSetBinding",
        meta.name(cluster),
        meta.namespace(cluster),
        spec={"clusterName": meta.name(cluster), "bindings": []},
        labels={names.CLUSTER_NAME_LABEL: meta.name(cluster)},
    )
    if cluster["metadata"].get("uid"):
        meta.set_owner(obj, cluster)
    return obj


def _entry(binding: dict, crs_name: str) -> dict:
    for b in binding["spec"].setdefault("bindings", []):
        if b.get("clusterResourceSetName") == crs_name:
            return b
    entry = {"clusterResourceSetName": crs_name, "resources": []}
    binding["spec"]["bindings"].append(entry)
    return entry


def _record(entry: dict, res: dict) -> dict | None:
    for r in entry.setdefault("resources", []):
        if r.get("kind") == res["kind"] and r.get("name") == res["name"]:
            return r
    return None


def reconcile(store, cluster: dict, client, *, clock=None, check: bool = False) -> dict:
    """Apply every ClusterResourceSet selecting ``cluster``; per set and resource what happened."""
    ns = meta.namespace(cluster)
    report = {"changed": False, "sets": [], "waiting": None}
    if not (cluster.get("status") or {}).get("initialization", {}).get("controlPlaneInitialized"):
        report["waiting"] = "the control plane is not initialized"
        return report
    before = _binding(store, cluster)
    binding = copy.deepcopy(before)
    applier = Applier(client) if client is not None else None
    selected = cluster_sets(store, cluster)
    for crs in selected:
        crs = default(crs)
        validate(crs)
        strategy = crs["spec"]["strategy"]
        entry = _entry(binding, meta.name(crs))
        out = {"name": meta.name(crs), "strategy": strategy, "resources": []}
        failures = []
        for res in crs["spec"].get("resources") or []:
            res = {"kind": res["kind"], "name": res["name"]}
            line = {**res, "action": "unchanged"}
            out["resources"].append(line)
            try:
                values = resource_values(store, ns, res)
            except (NotFound, Invalid) as exc:
                reason = WRONG_SECRET_TYPE_REASON if isinstance(exc, Invalid) else RETRIEVING_RESOURCE_FAILED_REASON
                line.update(action="failed", error=str(exc))
                failures.append((reason, str(exc)))
                continue
            digest = compute_hash(values)
            rec = _record(entry, res)
            if rec is not None and rec.get("applied"):
                if strategy == APPLY_ONCE or rec.get("hash") == digest:
                    continue
            line["hash"] = digest
            if applier is None:
                applied, why = False, "the workload API cannot be reached"
                line.update(action="waiting", error=why)
                failures.append((APPLY_FAILED_REASON, why))
            else:
                line["previously_applied"] = bool(rec and rec.get("applied"))
                applied = _apply_resource(applier, values, res, ns, strategy, line, failures, check)
            if rec is None:
                rec = dict(res)
                entry["resources"].append(rec)
            rec.update(hash=digest, applied=applied)
            if applied:
                rec["lastAppliedTime"] = conditions.now_rfc3339(clock)
        report["sets"].append(out)
        _set_condition(store, crs, failures, clock, check)
    # a set deleted, or no longer selecting the Cluster, leaves the binding (its objects stay applied)
    chosen = {meta.name(s) for s in selected}
    binding["spec"]["bindings"] = [b for b in binding["spec"]["bindings"] if b.get("clusterResourceSetName") in chosen]
    if binding != before:
        report["changed"] = True
        if not check:
            if binding["metadata"].get("uid"):
                store.update(binding)
            elif binding["spec"]["bindings"]:
                store.create(binding)
    return report


def _apply_resource(applier, values, res, ns, strategy, line, failures, check) -> bool:
    """Apply one resource's objects (ApplyOnce: create what is missing; Reconcile: server-side apply)."""
    try:
        objs = objects_of(values, f"{res['kind']} {ns}/{res['name']}")
        if not check:
            for obj in objs:
                if strategy == RECONCILE:
                    applier.apply(obj)
                else:
                    applier.create_if_missing(obj)
    except CapiError as exc:
        line.pop("previously_applied", None)
        line.update(action="failed", error=str(exc))
        failures.append((APPLY_FAILED_REASON, f"{res['kind']} {res['name']}: {exc}"))
        return False
    line["action"] = "reapplied" if line.get("previously_applied") else "applied"
    line.pop("previously_applied", None)
    line["objects"] = [f"{o['kind']} {o['metadata']['name']}" for o in objs]
    return True


def _set_condition(store, crs: dict, failures: list, clock, check: bool) -> None:
    if not crs["metadata"].get("uid") or check:
        return
    fresh = store.get("ClusterResourceSet", meta.name(crs), meta.namespace(crs))
    after = copy.deepcopy(fresh)
    if failures:
        reason, message = failures[0][0], "; ".join(m for _r, m in failures)
        conditions.set_condition(after, RESOURCES_APPLIED, False, reason, message, clock=clock)
    else:
        conditions.set_condition(after, RESOURCES_APPLIED, True, APPLIED_REASON, clock=clock)
    after.setdefault("status", {})["observedGeneration"] = fresh["metadata"].get("generation")
    if after != fresh:
        store.update_status(after)


def reconcile_cluster(store, cluster: dict, *, workload=None, clock=None, check: bool = False) -> bool:
    """The converge loop's hook (its cluster item): apply what is due once the workload API answers; True if changed."""
    try:
        if workload is None or not store.list("ClusterResourceSet", meta.namespace(cluster)):
            return False
    except StoreUnavailable:
        return False  # a management cluster without the ClusterResourceSet CRD holds no add-ons
    try:
        return reconcile(store, cluster, workload, clock=clock, check=check)["changed"]
    except Invalid:
        raise
    except CapiError:
        return False  # the workload API went away mid-step: the next step tries again
