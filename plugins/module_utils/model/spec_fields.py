# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The spec fields of the Cluster API core kinds, as upstream's Go types declare them (v1beta2).

The CRDs the collection ships keep spec open (model/crds.py), so a misspelt field (``bootstrp``) would be stored
without a word and ignored by every reader; the API server with upstream's structural schemas prunes or refuses
it.  ``check`` refuses a spec field the kind does not have, naming it.  From cluster-api api/core/v1beta2
(cluster_types.go ClusterSpec, machine_types.go MachineSpec, machineset_types.go MachineSetSpec,
machinedeployment_types.go MachineDeploymentSpec, machinehealthcheck_types.go MachineHealthCheckSpec) and
controlplane/kubeadm/api/v1beta2 (kubeadm_control_plane_types.go KubeadmControlPlaneSpec).
"""

from __future__ import annotations

from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta

MACHINE_SPEC = frozenset(
    {
        "clusterName",
        "bootstrap",
        "infrastructureRef",
        "version",
        "providerID",
        "failureDomain",
        "minReadySeconds",
        "readinessGates",
        "deletion",
        "taints",
    }
)
SPEC_FIELDS = {
    "Cluster": frozenset(
        {
            "paused",
            "clusterNetwork",
            "controlPlaneEndpoint",
            "controlPlaneRef",
            "infrastructureRef",
            "topology",
            "availabilityGates",
        }
    ),
    "Machine": MACHINE_SPEC,
    "MachineSet": frozenset({"clusterName", "replicas", "deletion", "selector", "template", "machineNaming"}),
    "MachineDeployment": frozenset(
        {
            "clusterName",
            "replicas",
            "rollout",
            "selector",
            "template",
            "machineNaming",
            "remediation",
            "deletion",
            "paused",
        }
    ),  # fmt: skip
    "MachineHealthCheck": frozenset({"clusterName", "selector", "checks", "remediation"}),
    "KubeadmControlPlane": frozenset(
        {"replicas", "version", "machineTemplate", "kubeadmConfigSpec", "rollout", "remediation", "machineNaming"}
    ),
}
# kinds whose spec.template.spec is a MachineSpec
_MACHINE_TEMPLATES = ("MachineSet", "MachineDeployment")


def _unknown(spec, known, field: str, where: str) -> None:
    if not isinstance(spec, dict):
        return
    unknown = sorted(set(spec) - known)
    if unknown:
        raise Invalid(
            f"unknown field(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})",
            obj=where,
            field=field if len(unknown) > 1 else f"{field}.{unknown[0]}",
        )


def check(obj: dict, given_api_version: str | None = None) -> None:
    """Invalid naming the first spec field the kind does not declare (Cluster API core kinds only).
    ``given_api_version``: the apiVersion the user wrote, when the object's own is the resolved one."""
    kind = obj.get("kind")
    known = SPEC_FIELDS.get(kind)
    version = given_api_version or obj.get("apiVersion") or ""
    if known is None or (version and not str(version).endswith("/v1beta2")):
        return  # another kind, or an older version whose field names differ (converted on input)
    spec = obj.get("spec")
    where = meta.ref(obj)
    _unknown(spec, known, "spec", where)
    if kind in _MACHINE_TEMPLATES and isinstance(spec, dict):
        template_spec = (spec.get("template") or {}).get("spec") if isinstance(spec.get("template"), dict) else None
        _unknown(template_spec, MACHINE_SPEC, "spec.template.spec", where)
