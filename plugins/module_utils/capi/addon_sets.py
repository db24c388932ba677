# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A cluster description's ``addons`` -> ClusterResourceSets (and ConfigMaps of their manifests) in the store.

Each add-on ``{name, strategy, manifests: [files], resources: [{kind, name}]}`` becomes ClusterResourceSet
``<cluster>-<name>`` selecting the Cluster by its ``cluster.x-k8s.io/cluster-name`` label; its files go into
ConfigMap ``<cluster>-addon-<name>`` (a key per file), listed first, then the Secrets / ConfigMaps the add-on
names.  Both carry ``addons.capi.baremetal.io/from-description``: an add-on no longer described loses its
ClusterResourceSet and ConfigMap, so it is no longer reconciled (what it applied stays in the workload cluster,
as with Cluster API).  A changed strategy (immutable upstream) replaces the ClusterResourceSet.
"""

from __future__ import annotations

import copy
import os

from ansible_collections.baremetal.capi.plugins.module_utils.capi import addons, refs
from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta, names

# a ConfigMap's data and binaryData together, keys included (the API server's MaxSecretSize, 1 MiB)
CONFIGMAP_MAX_BYTES = 1024 * 1024


def _where(i: int) -> str:
    return f"capi_cluster.addons[{i}]"


def desired(cluster: str, ns: str, addon_list: list[dict], base_dir: str | None = None) -> list[dict]:
    """The ConfigMaps and ClusterResourceSets of the add-ons (files read here); Invalid names the add-on and field."""
    out, seen = [], set()
    labels = {names.CLUSTER_NAME_LABEL: cluster, names.ADDON_FROM_DESCRIPTION_LABEL: "true"}
    for i, addon in enumerate(addon_list or []):
        if not isinstance(addon, dict) or not addon.get("name"):
            raise Invalid("name is required", obj=_where(i), field="name")
        name = str(addon["name"])
        if name in seen:
            raise Invalid(f"add-on {name} is listed twice", obj=_where(i), field="name")
        seen.add(name)
        strategy = addon.get("strategy") or addons.APPLY_ONCE
        if strategy not in addons.STRATEGIES:
            raise Invalid(f"strategy must be one of {', '.join(addons.STRATEGIES)}", obj=_where(i), field="strategy")
        resources = []
        files = addon.get("manifests") or []
        if isinstance(files, str):
            files = [files]
        if files:
            data = {}
            for j, path in enumerate(files):
                full = os.path.join(base_dir or os.getcwd(), os.path.expanduser(str(path)))
                try:
                    with open(full, encoding="utf-8") as f:
                        text = f.read()
                except OSError as exc:
                    raise Invalid(f"{full}: {exc.strerror}", obj=_where(i), field=f"manifests[{j}]") from None
                try:  # YAML documents of objects, as the workload API will be given them
                    addons.objects_of([text.encode()], full)
                except Invalid as exc:
                    raise Invalid(exc.message, obj=_where(i), field=f"manifests[{j}]") from None
                key = os.path.basename(full)
                data[f"{j:02d}-{key}" if key in data or len(files) > 1 else key] = text
            size = sum(len(k.encode()) + len(v.encode()) for k, v in data.items())
            if size > CONFIGMAP_MAX_BYTES:
                raise Invalid(
                    f"the manifests make ConfigMap {cluster}-addon-{name} of {size} bytes; a ConfigMap holds at most "
                    f"{CONFIGMAP_MAX_BYTES} (split them over two add-ons)",
                    obj=_where(i),
                    field="manifests",
                )
            cm = meta.new("ConfigMap", f"{cluster}-addon-{name}", ns, labels=dict(labels))
            cm["data"] = data
            out.append(cm)
            resources.append({"kind": "ConfigMap", "name": meta.name(cm)})
        for j, res in enumerate(addon.get("resources") or []):
            if not isinstance(res, dict) or res.get("kind") not in ("ConfigMap", "Secret") or not res.get("name"):
                raise Invalid(
                    "each resource is {kind: ConfigMap or Secret, name}", obj=_where(i), field=f"resources[{j}]"
                )
            resources.append({"kind": res["kind"], "name": str(res["name"])})
        if not resources:
            raise Invalid("manifests or resources is required", obj=_where(i), field="manifests")
        crs = meta.new(
            "ClusterResourceSet",
            f"{cluster}-{name}",
            ns,
            labels=dict(labels),
            spec={
                "clusterSelector": {"matchLabels": {names.CLUSTER_NAME_LABEL: cluster}},
                "resources": resources,
                "strategy": strategy,
            },
        )
        addons.validate(crs)
        out.append(crs)
    return out


def ensure(store, cluster: str, ns: str, addon_list: list[dict], *, base_dir=None, check: bool = False) -> dict:
    """Write the add-ons' objects, remove those of add-ons no longer described; what changed."""
    want = desired(cluster, ns, addon_list, base_dir)
    owner = refs.get_or_none(store, "Cluster", cluster, ns)
    report = {"created": [], "updated": [], "deleted": [], "sets": []}
    for obj in want:
        kind, name = obj["kind"], meta.name(obj)
        if owner is not None:
            meta.set_owner(obj, owner)  # they go with the Cluster they were described for
        if kind == "ClusterResourceSet":
            report["sets"].append(name)
        have = refs.get_or_none(store, kind, name, ns)
        if have is None:
            report["created"].append(f"{kind} {name}")
            if not check:
                store.create(obj)
            continue
        if kind == "ClusterResourceSet" and (have.get("spec") or {}).get("strategy") != obj["spec"]["strategy"]:
            report["updated"].append(f"{kind} {name} (strategy changed: replaced)")
            if not check:
                store.delete(kind, name, ns)
                store.create(obj)
            continue
        field = "data" if kind == "ConfigMap" else "spec"
        after = copy.deepcopy(have)
        after["metadata"]["labels"] = {**meta.labels(have), **meta.labels(obj)}
        after[field] = obj[field]
        if owner is not None:
            meta.set_owner(after, owner)
        if after != have:
            report["updated"].append(f"{kind} {name}")
            if not check:
                store.update(after)
    keep = {(o["kind"], meta.name(o)) for o in want}
    selector = {"matchLabels": {names.CLUSTER_NAME_LABEL: cluster, names.ADDON_FROM_DESCRIPTION_LABEL: "true"}}
    for kind in ("ClusterResourceSet", "ConfigMap"):
        for obj in store.list(kind, ns, selector):
            if (kind, meta.name(obj)) not in keep and not meta.is_deleting(obj):
                report["deleted"].append(f"{kind} {meta.name(obj)}")
                if not check:
                    store.delete(kind, meta.name(obj), ns)
    report["changed"] = bool(report["created"] or report["updated"] or report["deleted"])
    return report
