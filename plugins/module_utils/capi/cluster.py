# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What Cluster API core does for a Cluster with respect to its infrastructure (cluster-api
internal/controllers/cluster/cluster_controller_phases.go reconcileInfrastructure).

The infra cluster (Metal3Cluster, MaasCluster) gets a non-controller owner
reference to the Cluster and the ``cluster-name`` label; the Cluster gets
``spec.controlPlaneEndpoint`` from it when it has none,
``status.initialization.infrastructureProvisioned`` once the infra cluster is
provisioned (set once, never flipped back), then ``status.failureDomains``
mirrored from it (capi.failure_domains), the InfrastructureReady condition
and its phase.  The Cluster's own deletion (descendants first) is not here.
"""

from __future__ import annotations

import copy

from ansible_collections.baremetal.capi.plugins.module_utils.capi import failure_domains, refs
from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions, meta, names
from ansible_collections.baremetal.capi.plugins.module_utils.runner import Step
from ansible_collections.baremetal.capi.plugins.module_utils.store import mutate as rmw


def infra_cluster_provisioned(infra: dict | None) -> bool:
    """v1beta2 ``status.initialization.provisioned``; v1beta1 providers (CAPMAAS) report ``status.ready``."""
    if infra is None:
        return False
    status = infra.get("status") or {}
    return bool((status.get("initialization") or {}).get("provisioned") or status.get("ready"))


def endpoint_valid(endpoint: dict | None) -> bool:
    return bool(endpoint and endpoint.get("host") and endpoint.get("port"))


def phase(cluster: dict) -> str:
    spec, status = cluster.get("spec") or {}, cluster.get("status") or {}
    value = names.CLUSTER_PHASE_PENDING
    if spec.get("infrastructureRef") or spec.get("controlPlaneRef"):
        value = names.CLUSTER_PHASE_PROVISIONING
    if (status.get("initialization") or {}).get("infrastructureProvisioned") and endpoint_valid(
        spec.get("controlPlaneEndpoint")
    ):
        value = names.CLUSTER_PHASE_PROVISIONED
    if meta.is_deleting(cluster):
        value = names.CLUSTER_PHASE_DELETING
    return value


def apply_infrastructure(cluster: dict, infra: dict | None, clock=None) -> bool:
    """Pure: endpoint, infrastructureProvisioned, InfrastructureReady and phase on ``cluster``."""
    changed = False
    spec, status = cluster.setdefault("spec", {}), cluster.setdefault("status", {})
    if infra is not None and not endpoint_valid(spec.get("controlPlaneEndpoint")):
        endpoint = (infra.get("spec") or {}).get("controlPlaneEndpoint")
        if endpoint_valid(endpoint):
            spec["controlPlaneEndpoint"] = {"host": endpoint["host"], "port": endpoint["port"]}
            changed = True
    provisioned = infra_cluster_provisioned(infra)
    init = status.setdefault("initialization", {})
    if provisioned and not init.get("infrastructureProvisioned"):
        init["infrastructureProvisioned"] = True  # set once; never flips back
        changed = True
    if init.get("infrastructureProvisioned"):
        # CAPI reconcileInfrastructure: failure domains are read once the infra cluster is provisioned
        changed |= failure_domains.mirror(cluster, infra)
    if infra is None:
        reason = names.INFRASTRUCTURE_DOES_NOT_EXIST_REASON
    else:
        reason = names.INFRASTRUCTURE_READY_REASON if provisioned else names.INFRASTRUCTURE_NOT_READY_REASON
    changed |= conditions.set_condition(cluster, names.INFRASTRUCTURE_READY, provisioned, reason, clock=clock)
    new_phase = phase(cluster)
    if status.get("phase") != new_phase:
        status["phase"] = new_phase
        changed = True
    return changed


def _own_infra(store, cluster: dict, infra: dict, check: bool) -> dict:
    after = copy.deepcopy(infra)
    meta.set_owner(after, cluster)
    after["metadata"].setdefault("labels", {})[names.CLUSTER_NAME_LABEL] = meta.name(cluster)
    if after["metadata"] != infra["metadata"] and not check:
        return store.update(after)
    return infra


def reconcile(store, cluster: dict, *, clock=None, check: bool = False) -> Step:
    """Mark the Cluster's infrastructure provisioned when its infra cluster is.  ``done`` once it is.

    Many machines reconcile one Cluster at the same time: a write that loses
    (Conflict) reads the Cluster again and recomputes.
    """
    ns, name = meta.namespace(cluster), meta.name(cluster)
    first = [cluster]  # the caller's copy for the first attempt, the stored one after a Conflict

    def attempt():
        current = first.pop() if first else store.get("Cluster", name, ns)
        infra = refs.get_ref(store, (current.get("spec") or {}).get("infrastructureRef"), ns)
        if infra is not None:
            infra = _own_infra(store, current, infra, check)
        after = copy.deepcopy(current)
        changed = apply_infrastructure(after, infra, clock=clock)
        if changed and not check:
            refs.write(store, current, after)
        return after, changed

    after, changed = rmw.on_conflict(attempt, what=f"Cluster {ns}/{name}")
    done = bool(after["status"]["initialization"].get("infrastructureProvisioned"))
    message = "infrastructure provisioned" if done else "waiting for the infrastructure cluster to be provisioned"
    return Step(done=done, changed=changed, message=message, data={"cluster": after})


def infrastructure_provisioned(cluster: dict | None) -> bool:
    init = ((cluster or {}).get("status") or {}).get("initialization") or {}
    return bool(init.get("infrastructureProvisioned"))
