"""CustomResourceDefinitions for every non-core kind of the model (store/crds.py applies them).

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

# The upstream project whose CRD serves a group (for the infrastructure group: by the kind's prefix).
_PROVIDERS = {
    kinds.CAPI_GROUP: "Cluster API",
    kinds.CONTROLPLANE_GROUP: "Cluster API (KubeadmControlPlane)",
    kinds.BOOTSTRAP_GROUP: "Cluster API (kubeadm bootstrap provider)",
    kinds.ADDONS_GROUP: "Cluster API",
    kinds.CAPI_IPAM_GROUP: "Cluster API (IPAM)",
    kinds.M3IPAM_GROUP: "Metal3 ip-address-manager",
    kinds.BMO_GROUP: "the baremetal-operator",
}


def provider(kind: kinds.Kind) -> str:
    """The upstream project that ships the CRD of ``kind``."""
    if kind.group == kinds.INFRA_GROUP:
        return "CAPMAAS" if kind.kind.startswith("Maas") else "CAPM3 (cluster-api-provider-metal3)"
    return _PROVIDERS.get(kind.group, f"the project that installed the CRD {kind.crd_name}")


def served_versions(existing: dict) -> list[str]:
    return [v["name"] for v in (existing.get("spec") or {}).get("versions") or [] if v.get("served")]


def ours(existing: dict) -> bool:
    labels = (existing.get("metadata") or {}).get("labels") or {}
    return all(labels.get(key) == value for key, value in MANAGED_BY.items())


def version_problem(kind: kinds.Kind, existing: dict) -> str | None:
    """Why the collection cannot use a CRD another project installed for ``kind`` (None: it can)."""
    versions = served_versions(existing)
    if ours(existing) or kind.version in versions:
        return None
    return (
        f"CRD {kind.crd_name} was installed by another project (no label "
        f"{', '.join(f'{k}={v}' for k, v in MANAGED_BY.items())}) and serves {', '.join(versions) or 'no version'}; "
        f"the collection stores {kind.kind} at {kind.api_version}. Upgrade {provider(kind)} to a release whose "
        f"CRDs serve {kind.version}, or point the kubernetes store at a management cluster without it "
        "(store.kubeconfig / store.context): a CRD is cluster-wide, so another namespace does not help"
    )


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
