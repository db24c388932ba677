# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Power of a BareMetalHost through Ironic: spec.online and the reboot.metal3.io annotations (baremetal-operator
internal/controller/metal3.io/baremetalhost_controller.go manageHostPower, pkg/provisioner/ironic/ironic.go
PowerOn/PowerOff)."""

from __future__ import annotations

from ansible_collections.baremetal.capi.plugins.module_utils import imports
from ansible_collections.baremetal.capi.plugins.module_utils.hosts import base
from ansible_collections.baremetal.capi.plugins.module_utils.hosts.ironic.context import NOW
from ansible_collections.baremetal.capi.plugins.module_utils.model import names as S

# BMO clarifySoftPoweroffFailure, the prefix of a failed soft power-off's message
SOFT_POWER_OFF_FAILED = "Continuing with hard poweroff after soft poweroff fails. More details: "


def is_reboot_annotation(key: str) -> bool:
    return key == S.REBOOT_ANNOTATION or key.startswith(S.REBOOT_ANNOTATION + "/")


def clear_reboot_annotations(ctx) -> None:
    """BMO clearRebootAnnotations: every reboot annotation, suffixed ones included (a provisioning step that
    succeeded, a completed deprovision, an inspection that started)."""

    def drop(obj) -> bool:
        annotations = obj["metadata"].get("annotations") or {}
        keys = [k for k in annotations if is_reboot_annotation(k)]
        for k in keys:
            del annotations[k]
        return bool(keys)

    if any(is_reboot_annotation(k) for k in ((ctx.host.get("metadata") or {}).get("annotations") or {})):
        ctx.update_meta(drop)
        ctx.say("reboot annotations removed")


def power(ctx):
    """``ctx.node`` is this pass's read of the node (register() read it, or took it from the answer to its own
    patch): its power state is not read again."""
    node, bm = ctx.node, ctx.conn.baremetal
    if node.power_state in ("power on", "power off"):
        powered = node.power_state == "power on"
        if ctx.status.get("poweredOn") != powered:
            ctx.status["poweredOn"] = powered
            ctx.clear_error(only=(S.BMH_ERROR_POWER,))
    annotations = (ctx.host.get("metadata") or {}).get("annotations") or {}
    if ctx.status.get("poweredOn") is False and S.REBOOT_ANNOTATION in annotations:
        # off (for whatever reason): BMO drops the suffixless annotation, and the next pass powers on; the
        # suffixed ones stay until their owners remove them
        ctx.update_meta(lambda o: o["metadata"]["annotations"].pop(S.REBOOT_ANNOTATION, None) is not None)
        ctx.say("reboot: powered off, annotation removed")
        return NOW
    view = ctx.view()
    want = base.desired_power(view)
    have = ctx.status.get("poweredOn")
    if have is not None and have == want:
        ctx.clear_error(only=(S.BMH_ERROR_POWER,))
        ctx.settled = True
        return ctx.driver.poll
    if node.target_power_state or node.target_provision_state:
        return ctx.driver.poll
    forced = ctx.status.get("errorType") == S.BMH_ERROR_POWER
    reboots = base.reboot_annotations(view)
    hard = (
        forced
        or int(ctx.status.get("errorCount") or 0) > 0
        or any(r["mode"] == S.REBOOT_MODE_HARD for r in reboots.values())
    )
    if node.last_error and not forced and "aborted" not in node.last_error:
        if want:
            return ctx.set_error(S.BMH_ERROR_POWER, "PowerOn operation failed: " + node.last_error)
        # BMO: a failed soft power-off says the next try will be hard (it is: a power management error forces it)
        return ctx.set_error(S.BMH_ERROR_POWER, ("" if hard else SOFT_POWER_OFF_FAILED) + node.last_error)
    if want:
        bm.set_node_power_state(node, "power on")
        ctx.say("power on")
        return ctx.driver.poll
    if ctx.spec.get("disablePowerOff"):
        # the host may not be switched off: reboot, and BMO drops the suffixless annotation right after
        bm.set_node_power_state(node, "rebooting" if hard else "soft rebooting")
        ctx.update_meta(lambda o: (o["metadata"].get("annotations") or {}).pop(S.REBOOT_ANNOTATION, None) is not None)
        ctx.say("reboot (disablePowerOff)")
        return ctx.driver.poll
    if not hard:
        resp = bm.put(
            f"/nodes/{node.id}/states/power",
            json={"target": "soft power off", "timeout": 180},
            microversion="1.27",
            raise_exc=False,
        )
        if resp.status_code < 400:
            ctx.say("soft power off")
            return ctx.driver.poll
        if resp.status_code == 409:
            return 3.0  # busy
        if resp.status_code >= 500:  # Ironic (or what is in front of it) failed transiently: the step requeues
            osexc = imports.load("openstack.exceptions")

            raise osexc.HttpException(message=f"soft power off: {resp.text[:300]}", response=resp)
        if resp.status_code != 400:  # 400: soft power off not supported, hard as BMO falls back
            return ctx.set_error(S.BMH_ERROR_POWER, f"soft power off failed: HTTP {resp.status_code} {resp.text[:300]}")
    bm.set_node_power_state(node, "power off")
    ctx.say("power off")
    return ctx.driver.poll
