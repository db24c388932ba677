"""CustomResourceDefinitions for every non-core kind of the model, and applying them.

The schemas are structural (what apiextensions.k8s.io/v1 requires) and keep
spec and status open (``x-kubernetes-preserve-unknown-fields``): the
collection validates objects itself (model/), and the CRDs must also hold
objects written by the upstream controllers' field sets.  Where a cluster
already serves a kind (upstream CAPI, CAPM3, BMO CRDs installed), its CRD is
never replaced: that is the user's real controller's.

    python -m ansible_collections.baremetal.capi.plugins.module_utils.model.crds crds/
writes one YAML file per CRD (the committed copies live in ``crds/``).
"""

from __future__ import annotations

import json
import time

from ansible_collections.baremetal.capi.plugins.module_utils.errors import StoreUnavailable, Timeout
from ansible_collections.baremetal.capi.plugins.module_utils.model import kinds

# Marks CRDs this collection made, so it may update its own and never anyone else's.
MANAGED_BY = {"app.kubernetes.io/managed-by": "baremetal.capi"}
# Upstream puts the Cluster API contract kinds in the "cluster-api" category (kubectl get cluster-api).
_CAPI_CATEGORY_GROUPS = {
    kinds.CAPI_GROUP,
    kinds.CONTROLPLANE_GROUP,
    kinds.BOOTSTRAP_GROUP,
    kinds.INFRA_GROUP,
    kinds.CAPI_IPAM_GROUP,
}

_OPEN = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def crd(kind: kinds.Kind) -> dict:
    """The CustomResourceDefinition of one custom kind."""
    if kind.core:
        raise ValueError(f"{kind.kind} is a core kind: the API server serves it")
    names = {
        "kind": kind.kind,
        "listKind": f"{kind.kind}List",
        "plural": kind.plural,
        "singular": kind.kind.lower(),
    }
    if kind.short_names:
        names["shortNames"] = list(kind.short_names)
    if kind.group in _CAPI_CATEGORY_GROUPS:
        names["categories"] = ["cluster-api"]
    version = {
        "name": kind.version,
        "served": True,
        "storage": True,
        "schema": {
            "openAPIV3Schema": {
                "description": f"{kind.kind} ({kind.api_version}), as defined upstream.",
                "type": "object",
                "properties": {
                    "apiVersion": {"type": "string"},
                    "kind": {"type": "string"},
                    "metadata": {"type": "object"},
                    "spec": dict(_OPEN),
                    "status": dict(_OPEN),
                },
            }
        },
        "additionalPrinterColumns": [
            {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        ],
    }
    if kind.status_subresource:
        version["subresources"] = {"status": {}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": kind.crd_name, "labels": dict(MANAGED_BY)},
        "spec": {
            "group": kind.group,
            "names": names,
            "scope": "Namespaced" if kind.namespaced else "Cluster",
            "versions": [version],
        },
    }


def all_crds() -> list[dict]:
    return [crd(k) for k in kinds.ALL if not k.core]


def _served(client, kind: kinds.Kind) -> bool:
    """True when the API server serves ``kind`` at its version (from discovery)."""
    from kubernetes.client.exceptions import ApiException

    from ansible_collections.baremetal.capi.plugins.module_utils.store.kubernetes import DynamicClient, _NoDiscovery

    dyn = DynamicClient(client, discoverer=_NoDiscovery)
    try:
        resp = dyn.request("GET", f"/apis/{kind.group}/{kind.version}", serialize=False)
    except ApiException as exc:
        if exc.status == 404:
            return False
        raise
    return any(r.get("name") == kind.plural for r in json.loads(resp.data).get("resources", []))


def apply_crds(client, kinds_to_apply=None, wait: float = 60.0, check_mode: bool = False) -> dict:
    """Create the collection's CRDs on a cluster, skipping every kind it already serves.

    ``client`` is a ``kubernetes`` ApiClient or a KubernetesStore.  A CRD of ours
    (label app.kubernetes.io/managed-by=baremetal.capi) whose spec moved is
    updated; one of anybody else is left alone even when it lacks our version.
    Returns {created, updated, unchanged, skipped: {name: why}}.
    """
    from kubernetes import client as k8s
    from kubernetes.client.exceptions import ApiException

    client = getattr(client, "client", client)
    ext = k8s.ApiextensionsV1Api(client)
    result = {"created": [], "updated": [], "unchanged": [], "skipped": {}}
    wanted = [kinds.resolve(k) for k in kinds_to_apply] if kinds_to_apply else [k for k in kinds.ALL if not k.core]
    try:
        for kind in wanted:
            body = crd(kind)
            name = kind.crd_name
            try:
                existing = json.loads(ext.read_custom_resource_definition(name, _preload_content=False).data)
            except ApiException as exc:
                if exc.status != 404:
                    raise
                existing = None
            if existing is None:
                if _served(client, kind):  # served by an aggregated API server, not a CRD
                    result["skipped"][name] = "served by the cluster (not a CRD)"
                    continue
                if not check_mode:
                    ext.create_custom_resource_definition(body)
                result["created"].append(name)
                continue
            labels = existing["metadata"].get("labels") or {}
            if any(labels.get(key) != value for key, value in MANAGED_BY.items()):
                versions = [v["name"] for v in existing["spec"]["versions"] if v.get("served")]
                why = "already served by the cluster's own CRD"
                if kind.version not in versions:
                    why += f" (serves {', '.join(versions)}, not {kind.version})"
                result["skipped"][name] = why
                continue
            if existing["spec"].get("versions") == body["spec"]["versions"] and (
                existing["spec"].get("names") == body["spec"]["names"]
            ):
                result["unchanged"].append(name)
                continue
            if not check_mode:
                body["metadata"]["resourceVersion"] = existing["metadata"]["resourceVersion"]
                ext.replace_custom_resource_definition(name, body)
            result["updated"].append(name)
        if wait and not check_mode:
            _wait_established(ext, result["created"] + result["updated"], wait)
    except ApiException as exc:
        raise StoreUnavailable(f"applying CRDs: {exc.status} {exc.reason}: {exc.body}") from None
    return result


def _wait_established(ext, names: list[str], wait: float) -> None:
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
        time.sleep(0.2)


def files() -> dict[str, str]:
    """The committed YAML: one file per CRD, ``<group>_<plural>.yaml`` as controller-gen names them."""
    import yaml

    class Dumper(yaml.SafeDumper):
        # Indented block sequences, as yamllint's and ansible-lint's defaults expect.
        def increase_indent(self, flow=False, indentless=False):
            return super().increase_indent(flow, False)

    header = "# Generated by plugins/module_utils/model/crds.py from model/kinds.py; do not edit.\n---\n"
    return {
        f"{c['spec']['group']}_{c['spec']['names']['plural']}.yaml": header
        + yaml.dump(c, Dumper=Dumper, sort_keys=False)
        for c in all_crds()
    }


def main(argv=None) -> int:
    import sys
    from pathlib import Path

    out = Path((argv or sys.argv[1:] or ["crds"])[0])
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.yaml"):
        old.unlink()
    for name, text in files().items():
        (out / name).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
