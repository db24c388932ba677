# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Removing a BareMetalHost: routing to deprovision / power off, then the Ironic node (baremetal-operator
internal/controller/metal3.io/host_state_machine.go, pkg/provisioner/ironic/ironic.go Delete)."""

from __future__ import annotations

import ansible_collections.baremetal.capi.plugins.module_utils.hosts.ironic.node as ironic_node
import ansible_collections.baremetal.capi.plugins.module_utils.hosts.ironic.power as ironic_power
import ansible_collections.baremetal.capi.plugins.module_utils.hosts.ironic.prepare as ironic_prepare
import ansible_collections.baremetal.capi.plugins.module_utils.hosts.ironic.register as reg
from ansible_collections.baremetal.capi.plugins.module_utils.hosts.ironic.context import node_name
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta
from ansible_collections.baremetal.capi.plugins.module_utils.model import names as S


def route_delete(ctx):
    state = ctx.state
    if state in (S.BMH_STATE_NONE, S.BMH_STATE_UNMANAGED, S.BMH_STATE_REGISTERING):
        ctx.set_state(S.BMH_STATE_DELETING)
    elif state in (S.BMH_STATE_PROVISIONING, S.BMH_STATE_PROVISIONED):
        ctx.set_state(S.BMH_STATE_DEPROVISIONING, "host deleted")
    elif state not in (S.BMH_STATE_DEPROVISIONING, S.BMH_STATE_POWERING_OFF_BEFORE_DELETE, S.BMH_STATE_DELETING):
        ctx.set_state(S.BMH_STATE_POWERING_OFF_BEFORE_DELETE, "host deleted")
    if ctx.state == S.BMH_STATE_DEPROVISIONING:
        if int(ctx.status.get("errorCount") or 0) > 3:
            return ctx.set_state(S.BMH_STATE_POWERING_OFF_BEFORE_DELETE, "deprovisioning kept failing")
        if reg.find_node(ctx) is None:
            return ctx.set_state(S.BMH_STATE_DELETING)
        ctx.node = reg.find_node(ctx)
        return deprovisioning(ctx)
    if ctx.state == S.BMH_STATE_POWERING_OFF_BEFORE_DELETE:
        node = ctx.node = reg.find_node(ctx)
        if node is None or ctx.spec.get("disablePowerOff") or node.power_state != "power on":
            return ctx.set_state(S.BMH_STATE_DELETING)
        if int(ctx.status.get("errorCount") or 0) > 3:
            return ctx.set_state(S.BMH_STATE_DELETING)
        if not node.target_power_state:
            ctx.conn.baremetal.set_node_power_state(node, "power off")
            ctx.say("power off before delete")
        return ctx.driver.poll
    return _deleting(ctx)


def node_name_of(ctx) -> str:
    return node_name(ctx.ns, ctx.name)


def _below(version: str | None, wanted: tuple[int, int]) -> bool:
    try:
        major, minor = (int(x) for x in (version or "").split(".")[:2])
    except ValueError:
        return True
    return (major, minor) < wanted


def remove_node(ctx, node, force: bool = False):
    """BMO realDelete: remove ``node`` from Ironic without acting on the machine.  None once it is gone, else
    the seconds to wait (Ironic busy with it).  ``force`` (a forced detach) aborts a ``*wait`` state."""
    bm = ctx.conn.baremetal
    ctx.node = node
    if node is None:
        return None
    state = node.provision_state
    if state == "verifying" or state in ("deploying", "cleaning", "inspecting", "servicing", "deleting"):
        return ctx.driver.poll
    if state.endswith("wait"):
        if not force:
            return ctx.driver.poll
        target = "abort"
        if state in ("deploy wait", "wait call-back"):
            # aborting deploy wait needs API 1.110; below it BMO undeploys instead
            data = bm.get_endpoint_data()
            if _below(getattr(data, "max_microversion", None), (1, 110)):
                target = "deleted"
        return ironic_node.provision(ctx, target)
    if state in ("available", "manageable") and node.instance_id:
        ctx.node = node = bm.patch_node(node, [{"op": "remove", "path": "/instance_uuid"}])
    if state not in ("enroll", "available", "manageable") and not node.is_maintenance:
        bm.set_node_maintenance(node, S.IRONIC_FORCED_DELETE_REASON)
    bm.delete_node(node, ignore_missing=True)
    ctx.node = None
    ctx.say(f"deleted Ironic node {node.name}")
    return None


def _deleting(ctx):
    wait = remove_node(ctx, reg.find_node(ctx))
    if wait is not None:
        return wait
    ctx.update_meta(lambda o: meta.remove_finalizer(o, S.BMH_FINALIZER))
    return None


def deprovisioning(ctx):
    node, bm = ctx.node, ctx.conn.baremetal
    state = node.provision_state
    if state in ("active", "deploy failed", "deploy wait", "wait call-back"):
        clean = (ctx.spec.get("automatedCleaningMode") or S.CLEANING_MODE_METADATA) != S.CLEANING_MODE_DISABLED
        if node.is_automated_clean_enabled != clean:
            ctx.node = bm.patch_node(node, [{"op": "add", "path": "/automated_clean", "value": clean}])
        return ironic_node.provision(ctx, "deleted")
    if state == "error":
        if ctx.status.get("errorType") == S.BMH_ERROR_PROVISIONING:
            return ironic_node.provision(ctx, "deleted")
        return ctx.set_error(S.BMH_ERROR_PROVISIONING, ctx.ironic_error() or "Ironic node is in error")
    if state == "clean failed":
        if ctx.status.get("errorType") == S.BMH_ERROR_PROVISIONING and "Cleaning failed" in (
            ctx.status.get("errorMessage") or ""
        ):
            return ironic_node.provision(ctx, "manage")
        return ctx.set_error(S.BMH_ERROR_PROVISIONING, "Cleaning failed: " + ctx.ironic_error())
    if state == "manageable":
        return ironic_node.provision(ctx, "provide")
    if state == "available":
        for k in ("image", "customDeploy"):
            ctx.status["provisioning"].pop(k, None)
        # BMO clearHostProvisioningSettings: hints, software RAID and firmware are prepared again
        ironic_prepare.clear_provisioning_settings(ctx.status["provisioning"])
        hints = ironic_prepare.root_device_hints(ctx.spec)
        if hints is not None:
            ctx.status["provisioning"]["rootDeviceHints"] = hints
        # BMO clears every reboot annotation, suffixed ones included, when a deprovision completes
        ironic_power.clear_reboot_annotations(ctx)
        # BMO hsm handleDeprovisioning: a completed deprovision zeroes errorCount (the message stays until the
        # next attempt succeeds), so the next failure counts from 1 again
        ctx.status["errorCount"] = 0
        if meta.is_deleting(ctx.host):
            return ctx.set_state(S.BMH_STATE_POWERING_OFF_BEFORE_DELETE)
        return ctx.set_state(S.BMH_STATE_AVAILABLE, "deprovisioned")
    return ctx.driver.poll
