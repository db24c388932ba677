# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The BareMetalHost state handlers of the ironic driver (baremetal-operator
internal/controller/metal3.io/host_state_machine.go and baremetalhost_controller.go action*).

``handle(ctx)`` runs the handler of the host's state.  A handler returns
``NOW`` to go on at once (state moved, nothing to wait for), or the
seconds until the next step is useful.
"""

from __future__ import annotations

import ansible_collections.baremetal.capi.plugins.module_utils.hosts.ironic.configdrive as cd
import ansible_collections.baremetal.capi.plugins.module_utils.hosts.ironic.delete as ironic_delete
import ansible_collections.baremetal.capi.plugins.module_utils.hosts.ironic.detach as ironic_detach
import ansible_collections.baremetal.capi.plugins.module_utils.hosts.ironic.hardware as ironic_hardware
import ansible_collections.baremetal.capi.plugins.module_utils.hosts.ironic.node as ironic_node
import ansible_collections.baremetal.capi.plugins.module_utils.hosts.ironic.prepare as ironic_prepare
import ansible_collections.baremetal.capi.plugins.module_utils.hosts.ironic.register as reg
from ansible_collections.baremetal.capi.plugins.module_utils import imports
from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid, NotFound
from ansible_collections.baremetal.capi.plugins.module_utils.hosts import base
from ansible_collections.baremetal.capi.plugins.module_utils.hosts.ironic.context import NOW
from ansible_collections.baremetal.capi.plugins.module_utils.hosts.ironic.power import clear_reboot_annotations, power
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta, names

S = names
BUSY = (
    "deploying",
    "wait call-back",
    "cleaning",
    "clean wait",
    "deleting",
    "inspecting",
    "inspect wait",
    "verifying",
    "adopting",
    "rescuing",
    "unrescuing",
    "servicing",
    "service wait",
)


# -- dispatch ---------------------------------------------------------------------------------


def handle(ctx):
    if meta.is_deleting(ctx.host) and ironic_detach.route_delete(ctx):
        return ironic_delete.route_delete(ctx)
    if not meta.is_deleting(ctx.host) and meta.add_finalizer(meta.deepcopy(ctx.host), S.BMH_FINALIZER):
        ctx.update_meta(lambda o: meta.add_finalizer(o, S.BMH_FINALIZER))
    if _restore_status(ctx):
        return NOW
    # the detached annotation: no Ironic action while it holds (BMO checks it before Register)
    wait = ironic_detach.check(ctx)
    if wait is not None:
        return wait
    state = ctx.state
    if state == S.BMH_STATE_NONE:
        if (ctx.spec.get("bmc") or {}).get("address"):
            ctx.status.setdefault("operationalStatus", S.BMH_OPERATIONAL_OK)
            return ctx.set_state(S.BMH_STATE_REGISTERING)
        ctx.status["operationalStatus"] = S.BMH_OPERATIONAL_DISCOVERED
        ctx.set_state(S.BMH_STATE_UNMANAGED)
        return 600.0
    if state == S.BMH_STATE_UNMANAGED:
        return ctx.set_state(S.BMH_STATE_REGISTERING) if (ctx.spec.get("bmc") or {}).get("address") else 600.0
    wait = reg.register(ctx)
    if wait is not None:
        return wait
    return HANDLERS.get(state, _unknown)(ctx)


def _restore_status(ctx) -> bool:
    """An empty status is filled from the baremetalhost.metal3.io/status annotation, which is then
    removed (BMO ctrl:2723-2762; clusterctl move and CAPM3 carry status this way).  HardwareData wins
    for hardware."""
    raw = ((ctx.host.get("metadata") or {}).get("annotations") or {}).get(S.BMH_STATUS_ANNOTATION)
    if raw is None:
        return False
    if not (ctx.host.get("status") or {}).get("lastUpdated"):
        import json

        try:
            restored = json.loads(raw) if raw else {}
        except ValueError:
            restored = None
        if isinstance(restored, dict) and restored:
            ctx.status = restored
            ctx.status.setdefault("provisioning", {})
            ctx.status.setdefault("errorMessage", "")
            hardware = _hardware_data(ctx)
            if hardware:
                ctx.status["hardware"] = hardware
            ctx.say("status restored from the status annotation")
    ctx.save()
    ctx.update_meta(lambda o: o["metadata"]["annotations"].pop(S.BMH_STATUS_ANNOTATION, None) is not None)
    return True


def _unknown(ctx):
    return ctx.set_state(S.BMH_STATE_AVAILABLE, f"state {ctx.state!r} is not used by this driver")


def _registering(ctx):
    if ctx.spec.get("externallyProvisioned"):
        return ctx.set_state(S.BMH_STATE_EXTERNALLY_PROVISIONED)
    if reg.inspection_disabled(ctx.host):
        return ctx.set_state(S.BMH_STATE_PREPARING)
    ctx.status["provisioning"]["bootMode"] = ctx.spec.get("bootMode") or "UEFI"
    return ctx.set_state(S.BMH_STATE_INSPECTING)


def _hardware_data(ctx) -> dict | None:
    try:
        return (ctx.store.get(base.HARDWARE_DATA_KIND, ctx.name, ctx.ns).get("spec") or {}).get("hardware") or None
    except NotFound:
        return None


def _take_hardware(ctx) -> bool:
    """status.hardware from the HardwareData object or the hardwaredetails annotation (no inspection)."""
    if ctx.status.get("hardware"):
        return True
    hw = _hardware_data(ctx)
    if not hw:
        import json

        raw = ((ctx.host.get("metadata") or {}).get("annotations") or {}).get(S.HARDWARE_DETAILS_ANNOTATION)
        try:
            hw = json.loads(raw) if raw else None
        except ValueError:
            hw = None
    if hw:
        ctx.status["hardware"] = hw
        ctx.say("hardware details taken from HardwareData")
    return bool(hw)


def _write_hardware_data(ctx, hw: dict) -> None:
    """BMO mirrors inspection into a HardwareData of the same name, owned by the host."""
    obj = meta.new(base.HARDWARE_DATA_KIND, ctx.name, ctx.ns, spec={"hardware": hw})
    obj["apiVersion"] = "metal3.io/v1alpha1"
    meta.set_owner(obj, ctx.host, controller=True)
    try:
        old = ctx.store.get(base.HARDWARE_DATA_KIND, ctx.name, ctx.ns)
        old["spec"] = {"hardware": hw}
        ctx.store.update(old)
    except NotFound:
        ctx.store.create(obj)


def _inspecting(ctx):
    osexc = imports.load("openstack.exceptions")

    annotations = (ctx.host.get("metadata") or {}).get("annotations") or {}
    requested = annotations.get(S.INSPECT_ANNOTATION, "disabled") != "disabled"  # inspect.metal3.io: re-inspect
    if not requested and (_take_hardware(ctx) or ctx.node.driver == "fake-hardware"):
        return ctx.set_state(S.BMH_STATE_PREPARING)
    node, bm = ctx.node, ctx.conn.baremetal
    state = node.provision_state
    if state == "available":
        return ironic_node.provision(ctx, "manage")
    if state in ("inspecting", "inspect wait"):
        return ctx.driver.poll * 5
    if state == "inspect failed":
        if ctx.status.get("errorType") == S.BMH_ERROR_INSPECTION:
            return ironic_node.provision(ctx, "inspect")
        return ctx.set_error(S.BMH_ERROR_INSPECTION, ctx.ironic_error() or "Inspection failed")
    if state != "manageable":
        return ctx.driver.poll
    if requested:
        # the request is consumed when inspection starts, so the next steps wait for the new inventory
        wait = ironic_node.provision(ctx, "inspect")
        ctx.update_meta(lambda o: o["metadata"]["annotations"].pop(S.INSPECT_ANNOTATION, None) is not None)
        clear_reboot_annotations(ctx)  # BMO: an inspection that started drops the reboot annotations
        return wait
    try:
        inventory = bm.get_node_inventory(node)
    except osexc.NotFoundException:  # never inspected: BMO starts inspection on a 404
        return ironic_node.provision(ctx, "inspect")
    hw = ironic_hardware.from_inventory(inventory)
    ctx.status["hardware"] = hw
    _write_hardware_data(ctx, hw)
    ctx.clear_error(only=(S.BMH_ERROR_INSPECTION,))
    return ctx.set_state(S.BMH_STATE_PREPARING)


def _preparing(ctx):
    # RAID, BIOS settings and firmware updates by manual cleaning, root device hints recorded (prepare.py)
    _take_hardware(ctx)
    return ironic_prepare.preparing(ctx)


def _available(ctx):
    annotations = (ctx.host.get("metadata") or {}).get("annotations") or {}
    if ctx.spec.get("externallyProvisioned"):
        return ctx.set_state(S.BMH_STATE_EXTERNALLY_PROVISIONED)
    if annotations.get(S.INSPECT_ANNOTATION, "disabled") != "disabled":
        return ctx.set_state(S.BMH_STATE_INSPECTING)
    if ironic_prepare.needs_preparing(ctx):  # BMO handleAvailable: RAID / firmware changed
        return ctx.set_state(S.BMH_STATE_PREPARING, "RAID or firmware settings changed")
    _reset_fail_count_on_new_image(ctx)
    if ctx.spec.get("online") and base.has_image(ctx.view()) and not base.image_deployed(ctx.view()):
        try:
            cd.validate_image(ctx.spec.get("image"), ctx.spec.get("customDeploy"))
        except Invalid as exc:
            return ctx.set_error(S.BMH_ERROR_PROVISIONING, str(exc))
        limit, failed = ctx.driver.max_provisioning_retries, int(ctx.status.get("provisioningFailCount") or 0)
        if limit and failed >= limit:
            # BMO (--max-provisioning-retries): the same image is not deployed again; a new image or none resets it
            url = (ctx.spec.get("image") or {}).get("url")
            return ctx.set_error(
                S.BMH_ERROR_PROVISIONING,
                f"provisioning failed {failed} times (the limit is {limit}) with image {url}: not retried until "
                "the image changes",
            )
        # an earlier provisioning error stays visible until this attempt succeeds
        ctx.status["provisioning"]["bootMode"] = ctx.spec.get("bootMode") or "UEFI"
        return ctx.set_state(S.BMH_STATE_PROVISIONING)
    return power(ctx)


def _image(ctx) -> dict:
    return {k: v for k, v in (ctx.spec.get("image") or {}).items() if v}


def _reset_fail_count_on_new_image(ctx) -> None:
    """BMO: provisioningFailCount counts failed deploys of one image; another image, or none, starts again."""
    image = _image(ctx)
    if ctx.status.get("provisioningFailCount") and (not image or ctx.status.get("lastAttemptedImage") != image):
        ctx.status.pop("provisioningFailCount", None)
        ctx.status.pop("lastAttemptedImage", None)
        ctx.say("provisioningFailCount reset: the image changed")


def _same_image(ctx) -> bool:
    want, _hints = cd.instance_info(ctx.view(), hints=None, boot_iso=ctx.driver.boot_iso)
    have = ctx.node.instance_info or {}
    return all(
        have.get(k) == want.get(k) for k in ("image_source", "image_checksum", "image_os_hash_value", "boot_iso")
    )


def _provisioning(ctx):
    wait = _provision_step(ctx)
    if ctx.state != S.BMH_STATE_DEPROVISIONING:
        # BMO actionProvisioning: a provisioning step that did not fail drops every reboot annotation
        clear_reboot_annotations(ctx)
    return wait


def _provisioning_failed(ctx, message: str):
    """BMO handleProvisioning: any error of a provisioning attempt - a failed deploy, Ironic's validation, a
    config drive that cannot be built - sends the host to deprovisioning and counts towards the retry limit
    (provisioningFailCount, across deprovision cycles; errorCount counts this attempt only)."""
    wait = ctx.set_error(S.BMH_ERROR_PROVISIONING, message)
    ctx.status["provisioningFailCount"] = int(ctx.status.get("provisioningFailCount") or 0) + 1
    if _image(ctx):
        ctx.status["lastAttemptedImage"] = _image(ctx)
    ctx.set_state(S.BMH_STATE_DEPROVISIONING, "provisioning failed")
    return wait


def _provision_step(ctx):
    node = ctx.node
    image = ctx.spec.get("image") or {}
    state = node.provision_state
    if not base.has_image(ctx.view()):
        return ctx.set_state(S.BMH_STATE_DEPROVISIONING, "image removed")
    if state == "manageable":
        return ironic_node.provision(ctx, "provide")
    if state in ("available", "deploy failed") and not (state == "deploy failed" and _same_image(ctx)):
        return _deploy(ctx)
    if state == "deploy failed":
        msg = f"Image provisioning failed (url: {image.get('url')}, checksum: {image.get('checksum')}): "
        return _provisioning_failed(ctx, msg + (ctx.ironic_error() or "deploy failed"))
    if state == "active":
        ctx.status["provisioning"]["image"] = {k: v for k, v in image.items() if v}
        if (ctx.spec.get("customDeploy") or {}).get("method"):
            ctx.status["provisioning"]["customDeploy"] = dict(ctx.spec["customDeploy"])
        ctx.clear_error()
        ctx.status.pop("provisioningFailCount", None)
        ctx.status.pop("lastAttemptedImage", None)
        ctx.status["poweredOn"] = node.power_state == "power on"
        return ctx.set_state(S.BMH_STATE_PROVISIONED)
    if state == "error":
        return _provisioning_failed(ctx, ctx.ironic_error() or "Ironic node is in error")
    return ctx.driver.poll


def _instance_ops(ctx, node) -> tuple[list, str | None]:
    """The node patch that gives it the spec's instance_info, instance_uuid and deploy interface (baremetal-operator
    pkg/provisioner/ironic/ironic.go getImageUpdateOptsForNode)."""
    hints = ctx.status["provisioning"].get("rootDeviceHints")
    info, deploy_interface = cd.instance_info(ctx.view(), hints=hints, boot_iso=ctx.driver.boot_iso)
    if node.driver == "fake-hardware":
        deploy_interface = None  # fake-hardware nodes deploy with the fake interface whatever the image
    current = dict(node.instance_info or {})
    wanted = {k: info.get(k) for k in set(current) | set(info) if k != "configdrive"}
    ops = ironic_node.diff_patch(current, wanted, "/instance_info")
    uid = (ctx.host.get("metadata") or {}).get("uid")
    if node.instance_id != uid:
        ops.append({"op": "add", "path": "/instance_uuid", "value": uid})
    if deploy_interface and node.deploy_interface != deploy_interface:
        ops.append({"op": "add", "path": "/deploy_interface", "value": deploy_interface})
    elif not deploy_interface and node.deploy_interface in ("ramdisk", "custom-agent") and not ctx.driver.boot_iso:
        ops.append({"op": "remove", "path": "/deploy_interface"})
    return ops, deploy_interface


def _deploy(ctx):
    node, bm = ctx.node, ctx.conn.baremetal
    try:
        drive = cd.config_drive(ctx.store, ctx.host)
    except Invalid as exc:
        return _provisioning_failed(ctx, str(exc))
    ops, _deploy_interface = _instance_ops(ctx, node)
    if ops:
        ctx.node = node = bm.patch_node(node, ops)
    result = bm.validate_node(node, required=())
    bad = [f"{k}: {result[k].reason}" for k in ("boot", "deploy") if k in result and not result[k].result]
    if bad:
        return _provisioning_failed(ctx, "host validation error: " + "; ".join(bad))
    kw = {}
    if drive is not None:
        kw["config_drive"] = drive
    method = (ctx.spec.get("customDeploy") or {}).get("method")
    if method:
        kw["deploy_steps"] = [{"interface": "deploy", "step": method, "args": {}, "priority": 80}]
    return ironic_node.provision(ctx, "active", **kw)


def _provisioned(ctx):
    view = ctx.view()
    if not base.has_image(view) or not base.image_deployed(view):
        return ctx.set_state(S.BMH_STATE_DEPROVISIONING, "image changed or removed")
    return _adopt_then_power(ctx)


def _externally_provisioned(ctx):
    if not ctx.spec.get("externallyProvisioned"):
        if base.has_image(ctx.view()):
            ctx.status["provisioning"]["image"] = {k: v for k, v in (ctx.spec.get("image") or {}).items() if v}
        return ctx.set_state(S.BMH_STATE_PROVISIONED)
    return _adopt_then_power(ctx)


def _adopt_then_power(ctx):
    node = ctx.node
    if node.provision_state == "manageable":
        if base.has_image(ctx.view()):
            # a node registered again (re-attached, or Ironic's database lost) is told what it runs before
            # adoption, as BMO's configureNode does for a host with a current image; Ironic validates it
            ops, _deploy_interface = _instance_ops(ctx, node)
            if ops:
                ctx.node = ctx.conn.baremetal.patch_node(node, ops)
                ctx.say("instance_info set for adoption")
        return ironic_node.provision(ctx, "adopt")
    if node.provision_state == "adopt failed":
        return ctx.set_error(S.BMH_ERROR_PROVISIONED_REGISTRATION, "Host adoption failed: " + ctx.ironic_error())
    if node.provision_state == "active" and node.is_maintenance and not node.fault:
        ctx.node = ctx.conn.baremetal.unset_node_maintenance(node)
    if node.provision_state in BUSY:
        return ctx.driver.poll
    ctx.clear_error(only=(S.BMH_ERROR_PROVISIONED_REGISTRATION,))
    return power(ctx)


HANDLERS = {
    S.BMH_STATE_REGISTERING: _registering,
    S.BMH_STATE_INSPECTING: _inspecting,
    S.BMH_STATE_MATCH_PROFILE: _preparing,
    S.BMH_STATE_PREPARING: _preparing,
    S.BMH_STATE_AVAILABLE: _available,
    S.BMH_STATE_READY: _available,
    S.BMH_STATE_PROVISIONING: _provisioning,
    S.BMH_STATE_PROVISIONED: _provisioned,
    S.BMH_STATE_EXTERNALLY_PROVISIONED: _externally_provisioned,
    S.BMH_STATE_DEPROVISIONING: ironic_delete.deprovisioning,
}
