# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Removing a BareMetalHost: routing to deprovision / power off, then the Ironic node (bmo-ironic.md §6.3)."""

from __future__ import annotations

from ansible_collections.baremetal.capi.plugins.module_utils.hosts import ironic_actions as act
from ansible_collections.baremetal.capi.plugins.module_utils.hosts import ironic_register as reg
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
        return act.deprovisioning(ctx)
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


def _deleting(ctx):
    bm = ctx.conn.baremetal
    node = ctx.node = reg.find_node(ctx)
    if node is not None:
        state = node.provision_state
        if (
            state == "verifying"
            or state in ("deploying", "cleaning", "inspecting", "servicing", "deleting")
            or state.endswith("wait")
        ):
            return ctx.driver.poll
        if state in ("available", "manageable") and node.instance_id:
            ctx.node = node = bm.patch_node(node, [{"op": "remove", "path": "/instance_uuid"}])
        if state not in ("enroll", "available", "manageable") and not node.is_maintenance:
            bm.set_node_maintenance(node, S.IRONIC_FORCED_DELETE_REASON)
        bm.delete_node(node, ignore_missing=True)
        ctx.say(f"deleted Ironic node {node.name}")
    ctx.update_meta(lambda o: meta.remove_finalizer(o, S.BMH_FINALIZER))
    return None
