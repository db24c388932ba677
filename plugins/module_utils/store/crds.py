# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Applying the collection's CRDs (model/crds.py) to a management cluster's API server.

Where a cluster already serves a kind (upstream CAPI, CAPM3, BMO CRDs installed), its CRD is never replaced:
that is the user's real controller's. When such a CRD does not serve the version the collection stores (a
v1beta1-only CAPM3), nothing is applied and the error names every such CRD and what to do. A CRD of ours (label
app.kubernetes.io/managed-by=baremetal.capi) whose spec moved is updated.
"""

from __future__ import annotations

import json
import time

from ansible_collections.baremetal.capi.plugins.module_utils import imports
from ansible_collections.baremetal.capi.plugins.module_utils.errors import Incompatible, StoreUnavailable, Timeout
from ansible_collections.baremetal.capi.plugins.module_utils.model import crds as model_crds
from ansible_collections.baremetal.capi.plugins.module_utils.model import kinds
from ansible_collections.baremetal.capi.plugins.module_utils.model.crds import crd


def _served(client, kind: kinds.Kind) -> bool:
    """True when the API server serves ``kind`` at its version (from discovery)."""
    ApiException = imports.load("kubernetes.client.exceptions").ApiException

    from ansible_collections.baremetal.capi.plugins.module_utils.store.kubernetes import DynamicClient, _NoDiscovery

    dyn = DynamicClient(client, discoverer=_NoDiscovery)
    try:
        resp = dyn.request("GET", f"/apis/{kind.group}/{kind.version}", serialize=False)
    except ApiException as exc:
        if exc.status == 404:
            return False
        raise
    return any(r.get("name") == kind.plural for r in json.loads(resp.data).get("resources", []))


def apply_crds(client, kinds_to_apply=None, wait: float = 60.0, check_mode: bool = False, poll: float = 0.2) -> dict:
    """Create the collection's CRDs on a cluster, skipping every kind it already serves.

    ``client`` is a ``kubernetes`` ApiClient or a KubernetesStore.  A CRD of ours
    (label app.kubernetes.io/managed-by=baremetal.capi) whose spec moved is
    updated; one of anybody else is left alone, and when it does not serve the
    version the collection stores, Incompatible is raised before anything is written.
    With ``wait`` (seconds) the CRDs written are read every ``poll`` seconds until Established.
    Returns {created, updated, unchanged, skipped: {name: why}}.
    """
    k8s = imports.load("kubernetes.client")
    ApiException = imports.load("kubernetes.client.exceptions").ApiException

    client = getattr(client, "client", client)
    ext = k8s.ApiextensionsV1Api(client)
    result = {"created": [], "updated": [], "unchanged": [], "skipped": {}}
    wanted = [kinds.resolve(k) for k in kinds_to_apply] if kinds_to_apply else [k for k in kinds.ALL if not k.core]
    try:
        existing = {}
        for kind in wanted:
            try:
                existing[kind] = json.loads(
                    ext.read_custom_resource_definition(kind.crd_name, _preload_content=False).data
                )
            except ApiException as exc:
                if exc.status != 404:
                    raise
                existing[kind] = None
        # Every CRD checked before anything is written: a half-applied set would leave the store half usable.
        problems = [model_crds.version_problem(kind, found) for kind, found in existing.items() if found]
        problems = [p for p in problems if p]
        if problems:
            raise Incompatible("; ".join(problems))
        for kind, found in existing.items():
            body = crd(kind)
            name = kind.crd_name
            if found is None:
                if _served(client, kind):  # served by an aggregated API server, not a CRD
                    result["skipped"][name] = "served by the cluster (not a CRD)"
                    continue
                if not check_mode:
                    ext.create_custom_resource_definition(body)
                result["created"].append(name)
                continue
            if not model_crds.ours(found):
                result["skipped"][name] = "already served by the cluster's own CRD"
                continue
            if found["spec"].get("versions") == body["spec"]["versions"] and (
                found["spec"].get("names") == body["spec"]["names"]
            ):
                result["unchanged"].append(name)
                continue
            if not check_mode:
                body["metadata"]["resourceVersion"] = found["metadata"]["resourceVersion"]
                ext.replace_custom_resource_definition(name, body)
            result["updated"].append(name)
        if wait and not check_mode:
            _wait_established(ext, result["created"] + result["updated"], wait, poll)
    except ApiException as exc:
        raise StoreUnavailable(f"applying CRDs: {exc.status} {exc.reason}: {exc.body}") from None
    return result


def _wait_established(ext, names: list[str], wait: float, poll: float = 0.2) -> None:
    deadline = time.monotonic() + wait
    pending = list(names)
    while pending:
        still = []
        for name in pending:
            conds = (ext.read_custom_resource_definition(name).status.conditions) or []
            if not any(c.type == "Established" and c.status == "True" for c in conds):
                still.append(name)
        pending = still
        if not pending:
            return
        if time.monotonic() > deadline:
            raise Timeout(f"CRDs not Established after {wait:.0f}s: {', '.join(pending)}")
        time.sleep(poll)
