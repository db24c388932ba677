# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Machines for a KubeadmControlPlane and a MachineDeployment, as Cluster API creates them.

cluster-api controllers/external/util.go GenerateTemplate: template cloning (kind without ``Template``,
``cloned-from-*`` annotations, an owner reference to the KCP or MachineSet),
names with 5-character random suffixes, the KCP's one-operation-at-a-time rule
(init first, then one join at a time once every Machine has a Node, scale down
one victim at a time: ``delete-machine`` annotation first, then the failure
domain with the most Machines, the oldest there), and MachineDeployment ->
MachineSet (template hash) -> Machines with the MachineSet's deletion order.
Machines whose remediation asked for their replacement (``OwnerRemediated``
False) are deleted so that scale-up replaces them.

``reconcile_control_plane`` and ``reconcile_deployment`` each do one step and
say in ``Step.data`` what they created or deleted.
"""

from __future__ import annotations

import copy

from ansible_collections.baremetal.capi.plugins.module_utils.capi import refs
from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid, NotFound
from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions, kinds, meta, names
from ansible_collections.baremetal.capi.plugins.module_utils.store.common import generate_name

MACHINE_TEMPLATE_HASH_LABEL = "machine-template-hash"
KCP_CLEANUP_HOOK = names.KCP_CLEANUP_HOOK
DELETION_ORDERS = ("Random", "Newest", "Oldest")


def machine_name(prefix: str) -> str:
    """``<prefix>-<random5>``, cut to 58 characters first when the result would pass 63 (CAPI names.go)."""
    base = prefix if len(prefix) + 6 <= 63 else prefix[:57]
    return generate_name(base + "-")


def _group_of(obj: dict) -> str:
    return obj["apiVersion"].rpartition("/")[0]


def ref_to(obj: dict) -> dict:
    """A v1beta2 ContractVersionedObjectReference."""
    return {"apiGroup": _group_of(obj), "kind": obj["kind"], "name": meta.name(obj)}


def clone_template(
    store,
    ref: dict,
    namespace: str,
    name: str,
    labels: dict,
    annotations: dict,
    owner: dict,
    cluster_name: str,
    check: bool = False,
) -> dict:
    """An object of the template's kind without ``Template``, from ``spec.template`` (CAPI GenerateTemplate)."""
    template = refs.get_ref(store, ref, namespace)
    if template is None:
        raise NotFound(f"template {ref.get('kind')} {namespace}/{ref.get('name')} not found")
    tkind = kinds.of(template)
    if not tkind.kind.endswith("Template"):
        raise Invalid(f"{tkind.kind} is not a template kind", obj=meta.ref(template), field="kind")
    target = kinds.resolve(f"{tkind.kind[: -len('Template')]}.{tkind.group}")
    tmpl = (template.get("spec") or {}).get("template") or {}
    tmeta = tmpl.get("metadata") or {}
    obj = meta.new(
        target.key,
        name,
        namespace,
        spec=copy.deepcopy(tmpl.get("spec") or {}),
    )
    obj["apiVersion"] = target.api_version
    obj["kind"] = target.kind
    obj["metadata"]["labels"] = {**(tmeta.get("labels") or {}), **labels, names.CLUSTER_NAME_LABEL: cluster_name}
    obj["metadata"]["annotations"] = {
        **(tmeta.get("annotations") or {}),
        **annotations,
        names.CLONED_FROM_NAME_ANNOTATION: meta.name(template),
        names.CLONED_FROM_GROUPKIND_ANNOTATION: f"{tkind.kind}.{tkind.group}",
    }
    meta.set_owner(obj, owner)
    return obj if check else store.create(obj)


def new_machine(
    owner: dict,
    name: str,
    cluster_name: str,
    version: str | None,
    labels: dict,
    annotations: dict,
    bootstrap_ref: dict,
    infra_ref: dict,
    failure_domain: str | None,
) -> dict:
    spec = {"clusterName": cluster_name, "bootstrap": {"configRef": bootstrap_ref}, "infrastructureRef": infra_ref}
    if version:
        spec["version"] = version if version.startswith("v") else "v" + version
    if failure_domain:
        spec["failureDomain"] = failure_domain
    machine = meta.new(
        "Machine",
        name,
        meta.namespace(owner),
        spec=spec,
        labels={**labels, names.CLUSTER_NAME_LABEL: cluster_name},
        annotations=annotations or None,
    )
    meta.set_owner(machine, owner, controller=True)
    return machine


def remediation_requested(machine: dict) -> bool:
    cond = conditions.get(machine, names.OWNER_REMEDIATED)
    return cond is not None and cond.get("status") == conditions.FALSE


def has_node(machine: dict) -> bool:
    return bool((machine.get("status") or {}).get("nodeRef"))


def age_key(machine: dict) -> tuple:
    return (machine["metadata"].get("creationTimestamp", ""), meta.name(machine))
