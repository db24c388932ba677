# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The Metal3Cluster: its webhook and CAPM3's Metal3Cluster controller (cluster-api-provider-metal3
controllers/metal3cluster_controller.go, internal/webhooks/v1beta1/metal3cluster_webhook.go).

Webhook: ``controlPlaneEndpoint.host`` is required, the port defaults to
6443 and ``cloudProviderEnabled`` to false.  Controller: finalizer, failure
domains copied to status, ``status.initialization.provisioned`` and the
``Ready`` / ``BaremetalInfrastructureReady`` conditions once the endpoint is
valid; then Cluster API core marks the Cluster's infrastructure provisioned.
Deleting waits until no machine of the cluster is left, then drops the finalizer.
"""

from __future__ import annotations

import copy

from ansible_collections.baremetal.capi.plugins.module_utils import runner
from ansible_collections.baremetal.capi.plugins.module_utils.capi import cluster as capi_cluster
from ansible_collections.baremetal.capi.plugins.module_utils.capi import refs
from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid, NotFound, Requeue
from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions, convert, meta, names
from ansible_collections.baremetal.capi.plugins.module_utils.runner import Step

KIND = "Metal3Cluster"


def default(obj: dict) -> dict:
    """The defaulting webhook: port 0 -> 6443, cloudProviderEnabled nil -> false (a copy)."""
    obj = copy.deepcopy(obj)
    spec = obj.setdefault("spec", {})
    endpoint = spec.setdefault("controlPlaneEndpoint", {})
    if not endpoint.get("port"):
        endpoint["port"] = names.METAL3_CLUSTER_DEFAULT_PORT
    if spec.get("cloudProviderEnabled") is None:
        spec["cloudProviderEnabled"] = False
    return obj


def validate(obj: dict) -> None:
    where = meta.ref(obj)
    endpoint = (obj.get("spec") or {}).get("controlPlaneEndpoint") or {}
    if not endpoint.get("host"):
        raise Invalid("is required", obj=where, field="spec.controlPlaneEndpoint.host")
    if not isinstance(endpoint["host"], str) or len(endpoint["host"]) > 512:
        raise Invalid("must be a string of at most 512 characters", obj=where, field="spec.controlPlaneEndpoint.host")
    port = endpoint.get("port")
    if not isinstance(port, int) or isinstance(port, bool) or not 1 <= port <= 65535:
        raise Invalid(f"{port!r} is not a port (1-65535)", obj=where, field="spec.controlPlaneEndpoint.port")
    fds = (obj.get("spec") or {}).get("failureDomains")
    if fds is not None:
        if not isinstance(fds, list) or not all(isinstance(fd, dict) and fd.get("name") for fd in fds):
            raise Invalid("a list of {name, controlPlane, attributes}", obj=where, field="spec.failureDomains")
        if len({fd["name"] for fd in fds}) != len(fds):
            raise Invalid("names must be unique", obj=where, field="spec.failureDomains")


def apply(store, obj: dict, check: bool = False) -> tuple[bool, dict]:
    """Create or update a Metal3Cluster from a definition (webhooks first).  (changed, object)."""
    obj = default(convert.to_current(obj))
    obj["metadata"].setdefault("namespace", "default")
    validate(obj)
    old = refs.get_or_none(store, KIND, meta.name(obj), meta.namespace(obj))
    if old is None:
        return True, obj if check else store.create(obj)
    new = copy.deepcopy(old)
    new["spec"] = obj["spec"]
    for key in ("labels", "annotations"):
        if obj["metadata"].get(key):
            new["metadata"].setdefault(key, {}).update(obj["metadata"][key])
    if new == old:
        return False, old
    return True, new if check else store.update(new)


def owner_cluster(store, m3c: dict) -> dict | None:
    """The Cluster owning it, or the one whose infrastructureRef names it."""
    return refs.owner_or_referrer(store, "Cluster", m3c)


def machines_left(store, cluster_name: str, ns: str) -> list[str]:
    """Descendant machines still there: Metal3Machines labelled with the cluster, and its Machines."""
    left = [
        f"Metal3Machine {meta.name(m)}"
        for m in store.list("Metal3Machine", ns, f"{names.CLUSTER_NAME_LABEL}={cluster_name}")
    ]
    left += [
        f"Machine {meta.name(m)}"
        for m in store.list("Machine", ns)
        if (m.get("spec") or {}).get("clusterName") == cluster_name
    ]
    return sorted(set(left))


def reconcile(store, name: str, ns: str, *, check: bool = False, clock=None) -> Step:
    m3c = refs.get_or_none(store, KIND, name, ns)
    if m3c is None:
        raise NotFound(f'Metal3Cluster "{name}" not found', obj=f"Metal3Cluster {ns}/{name}")
    if meta.is_deleting(m3c):
        return delete_step(store, m3c, check=check, clock=clock)
    after = default(m3c)
    cluster = owner_cluster(store, m3c)
    if cluster is None:
        conditions.set_condition(
            after, names.READY, False, "FailedToGetOwnerCluster", "no Cluster refers to it", clock=clock
        )
        if not check and after != m3c:
            refs.write(store, m3c, after)
        raise Requeue(f"waiting for a Cluster whose infrastructureRef names Metal3Cluster {name}", after=10)
    paused = refs.is_paused(cluster, m3c)
    conditions.set_condition(
        after, names.PAUSED, paused, names.PAUSED_REASON if paused else names.NOT_PAUSED_REASON, clock=clock
    )
    if paused:
        if not check and after != m3c:
            refs.write(store, m3c, after)
        return Step(done=False, changed=after != m3c, message="paused", requeue_after=30)
    meta.add_finalizer(after, names.METAL3_CLUSTER_FINALIZER)
    status = after.setdefault("status", {})
    # CAPM3: status.failureDomains follows spec.failureDomains, including when it is removed
    fds = after["spec"].get("failureDomains")
    if fds:
        status["failureDomains"] = copy.deepcopy(fds)
    else:
        status.pop("failureDomains", None)
    try:
        validate(after)
        valid, why = True, ""
    except Invalid as exc:
        valid, why = False, str(exc)
    reason = names.READY_REASON if valid else names.CONTROL_PLANE_ENDPOINT_FAILED_REASON
    conditions.set_condition(
        after,
        names.BAREMETAL_INFRASTRUCTURE_READY,
        valid,
        reason,
        why,
        clock=clock,
    )
    conditions.set_condition(after, names.READY, valid, reason, why, clock=clock)
    if valid:
        status.setdefault("initialization", {})["provisioned"] = True
    changed = after != m3c
    if changed and not check:
        refs.write(store, m3c, after)
    cstep = capi_cluster.reconcile(store, store.get("Cluster", meta.name(cluster), ns), clock=clock, check=check)
    if not valid:
        raise Invalid(why, obj=meta.ref(m3c))
    return Step(
        done=cstep.done or check,
        changed=changed or cstep.changed,
        message="provisioned" if valid else why,
        data={"cluster": meta.name(cluster), "endpoint": after["spec"]["controlPlaneEndpoint"]},
    )


def delete_step(store, m3c: dict, *, check: bool = False, clock=None) -> Step:
    """Deleting: wait until no machine of the cluster is left, then drop the finalizer."""
    ns = meta.namespace(m3c)
    cluster = owner_cluster(store, m3c)
    cluster_name = meta.name(cluster) if cluster else meta.labels(m3c).get(names.CLUSTER_NAME_LABEL, meta.name(m3c))
    left = machines_left(store, cluster_name, ns)
    if left:
        more = f" and {len(left) - 5} more" if len(left) > 5 else ""
        return Step(
            changed=False,
            message=f"waiting for {len(left)} machine(s) of cluster {cluster_name} to go: {', '.join(left[:5])}{more}",
            requeue_after=5,
            data={"machines_left": left},
        )
    if check:
        return Step(done=True, changed=True, message="would be deleted")
    after = copy.deepcopy(m3c)
    meta.remove_finalizer(after, names.METAL3_CLUSTER_FINALIZER)
    try:
        after.pop("status", None)
        store.update(after)
    except NotFound:
        pass
    return Step(done=True, changed=True, message="deleted")


def remove(store, name: str, ns: str, *, check: bool = False, clock=None) -> Step:
    """``state: absent``: delete the Metal3Cluster and step its deletion; ``done`` once it is gone."""
    m3c = refs.get_or_none(store, KIND, name, ns)
    if m3c is None:
        return Step(done=True, message="absent")
    if not meta.is_deleting(m3c):
        if check:
            left = machines_left(
                store, (owner_cluster(store, m3c) or {"metadata": {"name": name}})["metadata"]["name"], ns
            )
            msg = f"would wait for {len(left)} machine(s)" if left else "would be deleted"
            return Step(done=True, changed=True, message=msg)
        m3c = store.delete(KIND, name, ns)
        if m3c is None:
            return Step(done=True, changed=True, message="deleted")
    step = delete_step(store, m3c, check=check, clock=clock)
    step.changed = True
    return step


def run_task(
    store,
    name: str,
    ns: str,
    *,
    definition: dict | None = None,
    state: str = "present",
    check: bool = False,
    wait: bool = True,
    timeout: float = 600,
    poll: float = 2,
) -> dict:
    """One metal3_cluster task: apply ``definition`` and reconcile, or remove, until done with ``wait``.

    Returns ``{changed, before, after, result}`` (``result`` the runner.Result; None in check mode for a
    Metal3Cluster that does not exist yet, ``after`` then being what would be created).
    """
    before = refs.get_or_none(store, "Metal3Cluster", name, ns)
    changed = False
    if state == "present":
        if definition is not None:
            changed, _applied = apply(store, definition, check=check)
        elif before is None:
            raise Invalid(
                "the Metal3Cluster does not exist and no control_plane_endpoint is given to create it",
                obj=f"Metal3Cluster {ns}/{name}",
                field="control_plane_endpoint",
            )
        if check and before is None:
            return {"changed": True, "before": None, "after": definition, "result": None}

        def step(_key):
            return reconcile(store, name, ns, check=check)

    else:

        def step(_key):
            return remove(store, name, ns, check=check)

    [res] = runner.run([name], step, wait=wait and not check, timeout=timeout, poll=poll)
    after = refs.get_or_none(store, "Metal3Cluster", name, ns)
    return {"changed": changed or res.changed or before != after, "before": before, "after": after, "result": res}
