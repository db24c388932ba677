# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What Cluster API core does for a Machine, since no CAPI controller runs here.

cluster-api internal/controllers/machine/machine_controller_phases.go (reconcileBootstrap,
reconcileInfrastructure): take ownership of the bootstrap config and the
infrastructure machine, copy ``dataSecretName``, wait for the infrastructure
machine to be provisioned and copy its providerID, addresses and failure
domain, find the workload Node by providerID, set nodeRef / nodeInfo, keep the
Node's annotations and managed labels, remove the
``node.cluster.x-k8s.io/uninitialized`` taint, and set the phase.  On delete:
the infrastructure machine and bootstrap config go first, the Node after them,
the finalizer last.

The ``apply_*`` / ``*_patch`` / ``phase`` functions are pure (dicts in, dicts
out); ``reconcile`` and ``reconcile_delete`` are the one place that reads and
writes.  Infrastructure providers (Metal3, MAAS) call them after their own step.
"""

from __future__ import annotations

import copy
import datetime

from ansible_collections.baremetal.capi.plugins.module_utils.capi import drain, refs
from ansible_collections.baremetal.capi.plugins.module_utils.capi import workload as wl
from ansible_collections.baremetal.capi.plugins.module_utils.errors import CapiError, NotFound
from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions, meta, names
from ansible_collections.baremetal.capi.plugins.module_utils.runner import Step

UNINITIALIZED_TAINT = {"key": names.NODE_UNINITIALIZED_TAINT, "effect": "NoSchedule"}
_MANAGED_DOMAINS = (names.NODE_ROLE_LABEL_DOMAIN, names.NODE_RESTRICTION_LABEL_DOMAIN, names.MANAGED_NODE_LABEL_DOMAIN)


# --- pure functions -------------------------------------------------------------


def _status(obj: dict) -> dict:
    return obj.setdefault("status", {})


def _init(obj: dict) -> dict:
    return (obj.get("status") or {}).get("initialization") or {}


def infra_provisioned(infra: dict | None) -> bool:
    """The provider contract: ``status.initialization.provisioned`` and a providerID (reconcileInfrastructure)."""
    return bool(infra and _init(infra).get("provisioned") and (infra.get("spec") or {}).get("providerID"))


def bootstrap_ready(machine: dict) -> bool:
    return bool(((machine.get("spec") or {}).get("bootstrap") or {}).get("dataSecretName"))


def apply_bootstrap(machine: dict, config: dict | None, clock=None) -> bool:
    """Copy ``status.dataSecretName`` of a bootstrap config that has created its secret (reconcileBootstrap)."""
    changed = False
    spec_bs = machine.setdefault("spec", {}).setdefault("bootstrap", {})
    if config is not None and _init(config).get("dataSecretCreated"):
        secret = (config.get("status") or {}).get("dataSecretName")
        if secret and spec_bs.get("dataSecretName") != secret:
            spec_bs["dataSecretName"] = secret
            changed = True
    ready = bool(spec_bs.get("dataSecretName"))
    if ready and not _init(machine).get("bootstrapDataSecretCreated"):
        _status(machine).setdefault("initialization", {})["bootstrapDataSecretCreated"] = True
        changed = True
    reason = names.BOOTSTRAP_CONFIG_READY_REASON if ready else names.BOOTSTRAP_CONFIG_NOT_READY_REASON
    changed |= conditions.set_condition(machine, names.BOOTSTRAP_CONFIG_READY, ready, reason, clock=clock)
    return changed


def apply_infrastructure(machine: dict, infra: dict | None, clock=None) -> bool:
    """Copy providerID, addresses and failure domain from a provisioned infrastructure machine.

    cluster-api machine_controller_phases.go reconcileInfrastructure.
    """
    changed = False
    if infra is None:
        reason = names.INFRASTRUCTURE_DOES_NOT_EXIST_REASON
        if _init(machine).get("infrastructureProvisioned"):
            reason = names.INFRASTRUCTURE_DELETED_REASON
        return conditions.set_condition(machine, names.INFRASTRUCTURE_READY, False, reason, clock=clock)
    if not infra_provisioned(infra):
        return conditions.set_condition(
            machine,
            names.INFRASTRUCTURE_READY,
            False,
            names.INFRASTRUCTURE_NOT_READY_REASON,
            f"{infra['kind']} {meta.name(infra)} is not provisioned yet",
            clock=clock,
        )
    spec, status = machine.setdefault("spec", {}), _status(machine)
    infra_status = infra.get("status") or {}
    provider_id = infra["spec"]["providerID"]
    if spec.get("providerID") != provider_id:
        spec["providerID"] = provider_id
        changed = True
    addresses = infra_status.get("addresses")
    if addresses is not None and status.get("addresses") != addresses:
        status["addresses"] = copy.deepcopy(addresses)
        changed = True
    fd = infra_status.get("failureDomain") or (infra.get("spec") or {}).get("failureDomain")
    if fd and status.get("failureDomain") != fd:
        status["failureDomain"] = fd
        changed = True
    if not _init(machine).get("infrastructureProvisioned"):
        status.setdefault("initialization", {})["infrastructureProvisioned"] = True
        changed = True
    changed |= conditions.set_condition(
        machine, names.INFRASTRUCTURE_READY, True, names.INFRASTRUCTURE_READY_REASON, clock=clock
    )
    return changed


def apply_node(machine: dict, node: dict | None, clock=None) -> bool:
    """nodeRef, nodeInfo and the NodeReady / NodeHealthy conditions from the workload Node
    (machine_controller_noderef.go reconcileNode)."""
    status = _status(machine)
    changed = False
    if node is None:
        reason = names.NODE_DELETED_REASON if status.get("nodeRef") else names.NODE_DOES_NOT_EXIST_REASON
        if status.pop("nodeRef", None) is not None:
            changed = True
        changed |= conditions.set_condition(machine, names.NODE_READY, "Unknown", reason, clock=clock)
        changed |= conditions.set_condition(machine, names.NODE_HEALTHY, "Unknown", reason, clock=clock)
        return changed
    node_ref = {"name": meta.name(node)}
    if status.get("nodeRef") != node_ref:
        status["nodeRef"] = node_ref
        changed = True
    info = (node.get("status") or {}).get("nodeInfo")
    if info and status.get("nodeInfo") != info:
        status["nodeInfo"] = copy.deepcopy(info)
        changed = True
    ready = wl.node_ready(node)
    reason = {
        "True": names.NODE_READY_REASON,
        "False": names.NODE_NOT_READY_REASON,
    }.get(ready, names.NODE_READY_UNKNOWN_REASON)
    # the kubelet's own words when it is not Ready (upstream copies the Node's Ready message)
    message = wl.node_ready_message(node) or ""
    changed |= conditions.set_condition(machine, names.NODE_READY, ready, reason, message, clock=clock)
    changed |= conditions.set_condition(machine, names.NODE_HEALTHY, ready, reason, message, clock=clock)
    return changed


def phase(machine: dict) -> str:
    """setMachinePhaseAndLastUpdated (machine_controller_status.go): later matches override earlier ones."""
    value = names.PHASE_PENDING
    init = _init(machine)
    if bootstrap_ready(machine) and not init.get("infrastructureProvisioned"):
        value = names.PHASE_PROVISIONING
    if (machine.get("spec") or {}).get("providerID"):
        value = names.PHASE_PROVISIONED
    if (machine.get("status") or {}).get("nodeRef") and init.get("infrastructureProvisioned"):
        value = names.PHASE_RUNNING
    if conditions.is_true(machine, names.UPDATING):
        value = names.PHASE_UPDATING
    if meta.is_deleting(machine):
        value = names.PHASE_DELETING
    return value


def apply_phase(machine: dict, clock=None) -> bool:
    status = _status(machine)
    new = phase(machine)
    if status.get("phase") == new:
        return False
    status["phase"] = new
    status["lastUpdated"] = conditions.now_rfc3339(clock)
    return True


def apply_ready(machine: dict, clock=None) -> bool:
    """Ready: a summary of bootstrap, infrastructure and node, as the Machine's Ready condition."""
    wanted = (names.BOOTSTRAP_CONFIG_READY, names.INFRASTRUCTURE_READY, names.NODE_HEALTHY)
    ok = all(conditions.is_true(machine, c) for c in wanted) and not meta.is_deleting(machine)
    not_ok = [c for c in wanted if not conditions.is_true(machine, c)]
    message = "" if ok else ", ".join(not_ok) + " not true" if not_ok else "being deleted"
    reason = names.READY_REASON if ok else names.NOT_READY_REASON
    return conditions.set_condition(machine, names.READY, ok, reason, message, clock=clock)


def _managed_label(key: str) -> bool:
    prefix = key.split("/", 1)[0] if "/" in key else ""
    return any(prefix == d or prefix.endswith("." + d) for d in _MANAGED_DOMAINS)


def node_patch(machine: dict, node: dict) -> dict | None:
    """The merge patch that brings a Node in line with its Machine (machine_controller_noderef.go reconcileNode),
    or None.

    Annotations cluster-name/namespace/machine/owner-kind/owner-name; Machine
    labels in the managed domains (tracked in labels-from-machine so that a
    label removed from the Machine leaves the Node too); the uninitialized taint
    removed.  The taints list is replaced whole: apply with the Node's resourceVersion.
    """
    md = node.get("metadata") or {}
    node_ann = md.get("annotations") or {}
    node_labels = md.get("labels") or {}
    want_ann = {
        names.CLUSTER_NAME_ANNOTATION: machine["spec"]["clusterName"],
        names.CLUSTER_NAMESPACE_ANNOTATION: meta.namespace(machine),
        names.MACHINE_ANNOTATION: meta.name(machine),
    }
    owner = refs.controller_owner(machine)
    if owner:
        want_ann[names.OWNER_KIND_ANNOTATION] = owner["kind"]
        want_ann[names.OWNER_NAME_ANNOTATION] = owner["name"]
    want_labels = {k: v for k, v in meta.labels(machine).items() if _managed_label(k)}
    previously = [k for k in (node_ann.get(names.LABELS_FROM_MACHINE_ANNOTATION) or "").split(",") if k]
    want_ann[names.LABELS_FROM_MACHINE_ANNOTATION] = ",".join(sorted(want_labels))
    patch: dict = {}
    ann_patch = {k: v for k, v in want_ann.items() if node_ann.get(k) != v}
    label_patch = {k: v for k, v in want_labels.items() if node_labels.get(k) != v}
    for key in previously:
        if key not in want_labels and key in node_labels:
            label_patch[key] = None  # merge patch: null removes
    if ann_patch or label_patch:
        patch["metadata"] = {}
        if ann_patch:
            patch["metadata"]["annotations"] = ann_patch
        if label_patch:
            patch["metadata"]["labels"] = label_patch
    taints = (node.get("spec") or {}).get("taints") or []
    kept = [t for t in taints if not (t.get("key") == UNINITIALIZED_TAINT["key"] and t.get("effect") == "NoSchedule")]
    if len(kept) != len(taints):
        patch["spec"] = {"taints": kept}
    return patch or None


def apply_ownership(machine: dict, cluster: dict | None) -> bool:
    """The finalizer, the cluster-name label, and the Cluster as owner of an orphan Machine.

    cluster-api machine_controller.go reconcile.
    """
    changed = meta.add_finalizer(machine, names.MACHINE_FINALIZER)
    labels = machine["metadata"].setdefault("labels", {})
    if labels.get(names.CLUSTER_NAME_LABEL) != machine["spec"]["clusterName"]:
        labels[names.CLUSTER_NAME_LABEL] = machine["spec"]["clusterName"]
        changed = True
    if cluster is not None and not refs.controller_owner(machine):
        changed |= meta.set_owner(machine, cluster)
    return changed


def ensure_ownership(store, machine: dict, cluster: dict | None, check: bool = False) -> dict:
    """What the Machine controller does first, before any provider acts: see apply_ownership."""
    if meta.is_deleting(machine):
        return machine
    after = copy.deepcopy(machine)
    if not apply_ownership(after, cluster) or check:
        return machine
    after.pop("status", None)
    return store.update(after)


def nodes_with_provider_id(nodes: list[dict], provider_id: str) -> list[dict]:
    return [n for n in nodes if (n.get("spec") or {}).get("providerID") == provider_id]


# --- the one place with side effects ---------------------------------------------


def workload_for(store, machine: dict, workload=None):
    """The workload client for the Machine's Cluster, or None while its kubeconfig Secret does not exist."""
    if workload is not None:
        return workload
    try:
        return wl.client_for(store, machine["spec"]["clusterName"], meta.namespace(machine))
    except NotFound:
        return None


def find_node(client, machine: dict) -> dict | None:
    """The Node whose spec.providerID equals the Machine's; more than one is an error."""
    provider_id = (machine.get("spec") or {}).get("providerID")
    if not provider_id or client is None:
        return None
    ref = (machine.get("status") or {}).get("nodeRef") or {}
    if ref.get("name"):
        node = client.get_node(ref["name"])
        if node is not None and (node.get("spec") or {}).get("providerID") == provider_id:
            return node
    found = nodes_with_provider_id(client.list_nodes(), provider_id)
    if len(found) > 1:
        raise CapiError(
            f"more than one Node has providerID {provider_id}: {', '.join(meta.name(n) for n in found)}",
            obj=meta.ref(machine),
        )
    return found[0] if found else None


def reconcile(store, machine: dict, *, workload=None, clock=None, check: bool = False) -> Step:
    """One reconcile of a Machine that is not being deleted.  ``done`` once it is Running.

    ``workload`` is a WorkloadClient (or anything with its Node methods); by
    default the Cluster's ``<cluster>-kubeconfig`` Secret is used.
    """
    if meta.is_deleting(machine):
        return reconcile_delete(store, machine, workload=workload, clock=clock, check=check)
    ns = meta.namespace(machine)
    cluster = refs.get_or_none(store, "Cluster", machine["spec"]["clusterName"], ns)
    after = copy.deepcopy(machine)
    changed = apply_ownership(after, cluster)
    if refs.is_paused(cluster, machine):
        changed |= conditions.set_condition(after, names.PAUSED, True, names.PAUSED_REASON, clock=clock)
        if not check and changed:
            refs.write(store, machine, after)
        return Step(done=False, changed=changed, message="paused", requeue_after=30)
    changed |= conditions.set_condition(after, names.PAUSED, False, names.NOT_PAUSED_REASON, clock=clock)
    config = refs.take_ownership(store, after, (after["spec"].get("bootstrap") or {}).get("configRef"), check=check)
    changed |= apply_bootstrap(after, config, clock=clock)
    infra = refs.take_ownership(store, after, after["spec"].get("infrastructureRef"), check=check)
    changed |= apply_infrastructure(after, infra, clock=clock)
    node, message = None, ""
    if after["spec"].get("providerID"):
        client = workload_for(store, after, workload)
        if client is None:
            message = f"waiting for the {wl.kubeconfig_secret_name(after['spec']['clusterName'])} Secret"
        else:
            node = find_node(client, after)
            if node is None:
                message = f"waiting for a Node with providerID {after['spec']['providerID']}"
            else:
                patch = node_patch(after, node)
                if patch and not check:
                    client.patch_node(meta.name(node), patch, resource_version=node["metadata"]["resourceVersion"])
                changed |= bool(patch)
        changed |= apply_node(after, node, clock=clock)
    else:
        message = f"waiting for {after['spec']['infrastructureRef'].get('kind')} to be provisioned"
    changed |= apply_ready(after, clock=clock)
    changed |= apply_phase(after, clock=clock)
    if changed and not check:
        refs.write(store, machine, after)
    done = after["status"]["phase"] == names.PHASE_RUNNING
    return Step(done=done, changed=changed, message=message or after["status"]["phase"], data={"machine": after})


def deletion_timed_out(machine: dict, clock=None) -> bool:
    """nodeDeletionTimeoutSeconds (default 10, 0 = forever) since the deletionTimestamp."""
    timeout = ((machine.get("spec") or {}).get("deletion") or {}).get("nodeDeletionTimeoutSeconds")
    timeout = names.NODE_DELETION_TIMEOUT_DEFAULT if timeout is None else int(timeout)
    if timeout == 0:
        return False
    stamp = datetime.datetime.strptime(machine["metadata"]["deletionTimestamp"], "%Y-%m-%dT%H:%M:%SZ")
    now = clock() if clock else datetime.datetime.now(datetime.UTC)
    return now.replace(tzinfo=None) - stamp.replace(tzinfo=None) > datetime.timedelta(seconds=timeout)


def reconcile_delete(store, machine: dict, *, workload=None, clock=None, check: bool = False) -> Step:
    """One step of machine_controller.go reconcileDelete.  ``done`` once the Machine is gone.

    Pre-drain hooks; then, when the Node may be deleted, the drain and the wait for volumes (capi.drain) while the
    infrastructure machine is still there; pre-terminate hooks; the infrastructure machine and bootstrap config;
    the Node; the finalizer - as steps 2-8 do.
    """
    ns = meta.namespace(machine)
    after = copy.deepcopy(machine)
    conditions.set_condition(after, names.DELETING, True, names.DELETING_REASON, clock=clock)
    apply_phase(after, clock=clock)

    def progress(message: str, after_s: float = 2) -> Step:
        changed = after != machine
        if changed and not check:
            refs.write(store, machine, after)
        return Step(done=False, changed=changed, message=message, requeue_after=after_s)

    def hooks(prefix: str) -> list[str]:
        return sorted(k for k in meta.annotations(machine) if k.startswith(prefix))

    cluster = refs.get_or_none(store, "Cluster", machine["spec"]["clusterName"], ns)
    allowed, why = refs.node_deletion_allowed(store, machine, cluster)
    node_name = ((machine.get("status") or {}).get("nodeRef") or {}).get("name")
    infra_ref = machine["spec"].get("infrastructureRef")
    if hooks(names.PRE_DRAIN_HOOK_PREFIX):
        return progress(f"waiting for hook(s) {', '.join(hooks(names.PRE_DRAIN_HOOK_PREFIX))}")
    if allowed and node_name and not check and refs.get_ref(store, infra_ref, ns) is not None:
        try:
            client = workload_for(store, machine, workload)
            waiting = drain.step(client, machine, after, clock) if client is not None else None
        except CapiError as exc:  # the workload API does not answer: retried, as Cluster API does
            waiting = (names.DELETING_DRAINING_NODE_REASON, f"draining Node {node_name}: {exc}")
        if waiting is not None:
            reason, message = waiting
            conditions.set_condition(after, names.DELETING, True, reason, message, clock=clock)
            return progress(message, after_s=5)
    if hooks(names.PRE_TERMINATE_HOOK_PREFIX):
        # The owner (KCP's kcp-cleanup hook: the etcd member) acts once the Machine says it waits on the hooks.
        message = f"waiting for hook(s) {', '.join(hooks(names.PRE_TERMINATE_HOOK_PREFIX))}"
        reason = names.DELETING_WAITING_FOR_PRE_TERMINATE_HOOK_REASON
        conditions.set_condition(after, names.DELETING, True, reason, message, clock=clock)
        return progress(message)
    # Both deletions asked in one pass (reconcileDeleteBootstrap, then reconcileDeleteInfrastructure); the message
    # names the infrastructure machine while it is there (asked last, so the last one still there).
    waiting = []
    for ref in ((machine["spec"].get("bootstrap") or {}).get("configRef"), infra_ref):
        obj = refs.get_ref(store, ref, ns)
        if obj is not None and not meta.is_deleting(obj) and not check:
            store.delete(obj["kind"], meta.name(obj), ns)
            obj = refs.get_ref(store, ref, ns)  # gone at once when no finalizer holds it
        if obj is not None:
            waiting.append(obj)
    if waiting:
        return progress(f"waiting for {waiting[-1]['kind']} {meta.name(waiting[-1])} to be deleted")
    if allowed and node_name:
        client = workload_for(store, machine, workload)
        try:
            if client is None:
                raise wl.WorkloadUnavailable("the workload kubeconfig Secret is gone")
            if not check:
                client.delete_node(node_name)
        except CapiError as exc:
            if not deletion_timed_out(machine, clock):
                return progress(f"retrying the deletion of Node {node_name}: {exc}")
    if check:
        return Step(done=True, changed=True, message="would be deleted")
    if meta.remove_finalizer(after, names.MACHINE_FINALIZER):
        after.pop("status", None)
        try:
            store.update(after)
        except NotFound:
            pass
    message = "deleted" if allowed or not node_name else f"deleted (Node {node_name} left: {why})"
    return Step(done=True, changed=True, message=message)
