# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Deleting a Metal3Machine (cluster-api-provider-metal3 controllers/metal3machine_controller.go reconcileDelete,
baremetal/metal3machine_manager.go Delete) and, with it, its Machine (cluster-api
internal/controllers/machine/machine_controller.go reconcileDelete).

``step`` is CAPM3's reconcileDelete for a Metal3Machine being deleted:
release the data (claim, Metal3Data, addresses, secrets), deprovision the host
(image and our secrets cleared, powered off unless disablePowerOff / fast
track), wait while the host is busy, then release it (consumerRef cleared or
pointed at the Cluster for node reuse, cluster label and our pause removed)
and drop the finalizer last.

``state: absent`` (the Machine and the Metal3Machine deleted and stepped until
both are gone) is the provider-neutral ``capi.infra_machine.remove`` with this
``step``.

It takes its collaborators as arguments - the store, the host driver, the
Metal3Data manager, the clock - not the MachineManager: what it shares with
the reconcile (the step's report, the BMC Secret's label) is in
metal3/host_ref.py.
"""

from __future__ import annotations

import copy

from ansible_collections.baremetal.capi.plugins.module_utils.capi import refs
from ansible_collections.baremetal.capi.plugins.module_utils.errors import NotFound
from ansible_collections.baremetal.capi.plugins.module_utils.hosts import base as hosts
from ansible_collections.baremetal.capi.plugins.module_utils.metal3 import choose, host_ref, host_spec
from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions, kinds, meta, names
from ansible_collections.baremetal.capi.plugins.module_utils.runner import Step


def node_reuse_template(store, machine: dict | None) -> dict | None:
    """The Metal3MachineTemplate behind the machine's MachineSet or control plane (for spec.nodeReuse)."""
    if machine is None:
        return None
    ns = meta.namespace(machine)
    infra_ref = None
    kcp_ref = refs.owner_of_kind(machine, "KubeadmControlPlane")
    ms_ref = refs.owner_of_kind(machine, "MachineSet")
    if kcp_ref:
        kcp = refs.get_or_none(store, "KubeadmControlPlane", kcp_ref["name"], ns)
        infra_ref = ((((kcp or {}).get("spec") or {}).get("machineTemplate") or {}).get("spec") or {}).get(
            "infrastructureRef"
        ) or (((kcp or {}).get("spec") or {}).get("machineTemplate") or {}).get("infrastructureRef")
    elif ms_ref:
        ms = refs.get_or_none(store, "MachineSet", ms_ref["name"], ns)
        infra_ref = ((((ms or {}).get("spec") or {}).get("template") or {}).get("spec") or {}).get("infrastructureRef")
    return refs.get_ref(store, infra_ref, ns)


def released(host: dict, cluster: dict | None, template: dict | None, reuse: str | None) -> dict:
    """The host once the machine lets go of it (steps 3.7-3.10), pure.  ``reuse`` is cp-<kcp> / md-<md>."""
    new = copy.deepcopy(host)
    new["spec"].pop("consumerRef", None)
    labels = new["metadata"].setdefault("labels", {})
    cluster_deleting = cluster is None or meta.is_deleting(cluster)
    if not cluster_deleting and ((template or {}).get("spec") or {}).get("nodeReuse") and reuse:
        labels[names.NODE_REUSE_LABEL] = reuse
        new["spec"]["consumerRef"] = {
            "apiVersion": f"{kinds.CAPI_GROUP}/v1beta2",
            "kind": "Cluster",
            "name": meta.name(cluster),
            "namespace": meta.namespace(cluster),
        }
    labels.pop(names.CLUSTER_NAME_LABEL, None)
    ann = new["metadata"].get("annotations") or {}
    if ann.get(names.BMH_PAUSED_ANNOTATION) == names.PAUSED_ANNOTATION_VALUE_CAPM3:
        del ann[names.BMH_PAUSED_ANNOTATION]
    ann.pop(names.BLOCK_MOVE_ANNOTATION, None)  # only an associated host blocks a move
    return new


def step(m3m: dict, machine: dict | None, *, store, driver, data, clock=None, check: bool = False) -> Step:
    """One step of reconcileDelete; ``done`` when the Metal3Machine is gone.

    ``driver`` moves the host (hosts/), ``data`` is the DataManager that releases the Metal3Data (metal3/data.py).
    """
    ns, name = meta.namespace(m3m), meta.name(m3m)
    cluster_name = (machine or {}).get("spec", {}).get("clusterName") or meta.labels(m3m).get(names.CLUSTER_NAME_LABEL)
    if refs.is_paused(refs.get_or_none(store, "Cluster", cluster_name, ns), m3m):
        return Step(message="paused", requeue_after=30)  # CAPM3 checks the pause before reconcileDelete
    after = copy.deepcopy(m3m)
    conditions.set_condition(after, names.ASSOCIATE_METADATA, False, names.DELETING_REASON, clock=clock)
    if check:
        host = host_ref.associated_host(store, m3m)
        return Step(done=True, changed=True, message="would be deleted", data=host_ref.report(after, host))
    # DissociateM3Metadata
    status = after.setdefault("status", {})
    if (after["spec"].get("dataTemplate") or {}).get("name"):
        data.delete(name, ns)
        for key, suffix in (("metaData", "-metadata"), ("networkData", "-networkdata")):
            if (status.get(key) or {}).get("name") == f"{name}{suffix}":
                status.pop(key, None)
        status.pop("renderedData", None)
    cluster = refs.get_or_none(store, "Cluster", cluster_name, ns)
    host = host_ref.associated_host(store, m3m)
    if host is not None and choose.consumed_by(host, m3m):
        host_ref.label_bmc_secret(store, host, cluster_name, add=False)
        host = host_ref.mutate_host(store, host, lambda h: host_spec.clear_host_spec(h, m3m))
        # with no operator beside us, the host driver also finishes the power change BMO would make (settle)
        settle = getattr(driver, "operates_hosts", False)
        if host_spec.delete_must_wait(host) or hosts.has_image(host) or (settle and host_spec.power_settling(host)):
            dstep = driver.reconcile(store, host)
            host = store.get(hosts.KIND, meta.name(host), ns)
            if host_spec.delete_must_wait(host) or (settle and host_spec.power_settling(host)):
                refs.write(store, m3m, after)
                summary = hosts.summary(host)
                waiting = "deprovision" if host_spec.delete_must_wait(host) else "power off"
                return Step(
                    changed=True,
                    message=dstep.message or f"waiting for host {meta.name(host)} to {waiting} ({summary['state']})",
                    requeue_after=dstep.requeue_after if dstep.requeue_after is not None else 2,
                    data=host_ref.report(after, host, hostStatus=summary),
                )
        template = node_reuse_template(store, machine)
        reuse = choose.node_reuse_value(store, machine)
        host_ref.mutate_host(
            store,
            host,
            lambda h: _replace(h, released(h, cluster, template, reuse)) if choose.consumed_by(h, m3m) else False,
        )
    meta.remove_finalizer(after, names.METAL3_MACHINE_FINALIZER)
    try:
        refs.write(store, m3m, after)
    except NotFound:
        pass
    return Step(done=True, changed=True, message="deleted", data=host_ref.report(after, host))


def _replace(target: dict, new: dict) -> bool:
    if target == new:
        return False
    target.clear()
    target.update(new)
    return True
