# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Changes to the Ironic node that several host states make: BMO's configureNode and provision-state changes."""

from __future__ import annotations

from ansible_collections.baremetal.capi.plugins.module_utils.model import names as S


def boot_mode_capability(boot_mode: str | None) -> str:
    return {"UEFISecureBoot": "boot_mode:uefi,secure_boot:true", "legacy": "boot_mode:bios"}.get(
        boot_mode or "", "boot_mode:uefi"
    )


def merge_capabilities(current: str | None, boot_mode: str | None) -> str:
    """Keep other capabilities, replace boot_mode and secure_boot (BMO capabilities.go)."""
    kept = [c for c in (current or "").split(",") if c and not c.startswith(("boot_mode:", "secure_boot:"))]
    return ",".join(kept + [boot_mode_capability(boot_mode)])


def diff_patch(current: dict, wanted: dict, prefix: str) -> list:
    """BMO updateopts: add when the value differs, remove when wanted is None and the key is there."""
    ops = []
    for k, v in wanted.items():
        if v is None:
            if k in current:
                ops.append({"op": "remove", "path": f"{prefix}/{k}"})
        elif current.get(k) != v:
            ops.append({"op": "add", "path": f"{prefix}/{k}", "value": v})
    return ops


def deploy_image_info(images: dict, virtual_media: bool) -> dict | None:
    """The deploy ramdisk keys of driver_info for one host (BMO setDeployImage, no PreprovisioningImage).

    A virtual-media or HTTP-boot BMC with a deploy ISO boots the ISO; otherwise the kernel and ramdisk (an IPMI or
    PXE-booting host cannot use an ISO); the keys of the other choice, and kernel_append_params, are removed
    (None).  None when neither fits: driver_info is left as it is.
    """
    iso, kernel, ramdisk = images.get("deploy_iso"), images.get("deploy_kernel"), images.get("deploy_ramdisk")
    info = {"deploy_kernel": None, "deploy_ramdisk": None, "deploy_iso": None, "kernel_append_params": None}
    if virtual_media and iso:
        return {**info, "deploy_iso": iso}
    if kernel and ramdisk:
        return {**info, "deploy_kernel": kernel, "deploy_ramdisk": ramdisk}
    return None


def configure_node(ctx, virtual_media: bool) -> None:
    """automated_clean, capabilities, deploy images (BMO configureNode)."""
    node = ctx.node
    ops = []
    clean = (ctx.spec.get("automatedCleaningMode") or S.CLEANING_MODE_METADATA) != S.CLEANING_MODE_DISABLED
    if node.is_automated_clean_enabled != clean:
        ops.append({"op": "add", "path": "/automated_clean", "value": clean})
    props = node.properties or {}
    caps = merge_capabilities(props.get("capabilities"), ctx.spec.get("bootMode"))
    if props.get("capabilities") != caps:
        ops.append({"op": "add", "path": "/properties/capabilities", "value": caps})
    if node.driver != "fake-hardware":
        images = deploy_image_info(ctx.driver.deploy_images, virtual_media)
        if images is not None:
            ops += diff_patch(node.driver_info or {}, images, "/driver_info")
    if ops:
        ctx.node = ctx.conn.baremetal.patch_node(node, ops)


def before_state_change(ctx) -> float | None:
    """A fault blocks provision-state changes; maintenance is unset first (ironic.go:515-525)."""
    node = ctx.node
    if node.fault:
        return 10.0
    if node.is_maintenance:
        ctx.node = ctx.conn.baremetal.unset_node_maintenance(node)
        return ctx.driver.poll
    return None


def provision(ctx, target: str, **kw):
    wait = before_state_change(ctx)
    if wait:
        return wait
    ctx.conn.baremetal.set_node_provision_state(ctx.node, target, **kw)
    ctx.say(target)
    return ctx.driver.poll
