# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""BMO's HostFirmwareSettings and HostFirmwareComponents controllers on the Ironic side.

``refresh(ctx)`` reads the node's cached BIOS settings with their registry (``GET /v1/nodes/{id}/bios``,
detail, API 1.74) into the host's HostFirmwareSettings status and a FirmwareSchema, and its firmware
components (``GET /v1/nodes/{id}/firmware``, API 1.86) into the HostFirmwareComponents status
(ironic.go GetFirmwareSettings / GetFirmwareComponents, hostfirmwaresettings_controller.go,
hostfirmwarecomponents_controller.go).  Ironic caches both when a node is managed and after cleaning; a
node whose BMC has no BIOS resource has no settings (Ironic logs "BIOS settings are not supported").
"""

from __future__ import annotations

from ansible_collections.baremetal.capi.plugins.module_utils import imports
from ansible_collections.baremetal.capi.plugins.module_utils.errors import AlreadyExists, NotFound
from ansible_collections.baremetal.capi.plugins.module_utils.metal3 import host_firmware as hf
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta
from ansible_collections.baremetal.capi.plugins.module_utils.model import names as S

BIOS_MICROVERSION = "1.74"  # detail=True: the registry fields
FIRMWARE_MICROVERSION = "1.86"  # the firmware interface and /firmware


def read_settings(ctx) -> tuple[dict, dict] | None:
    """(settings, schema), or None from an Ironic older than the API version (406: BMO needs a newer one too)."""
    resp = ctx.conn.baremetal.get(f"/nodes/{ctx.node.id}/bios?detail=True", microversion=BIOS_MICROVERSION)
    if resp.status_code == 406:
        return None
    _raise_for(resp)
    return hf.schema_from_ironic(resp.json().get("bios") or [])


def read_components(ctx) -> list[dict] | None:
    """The bios and bmc components, or None when this node has no firmware interface to ask."""
    resp = ctx.conn.baremetal.get(f"/nodes/{ctx.node.id}/firmware", microversion=FIRMWARE_MICROVERSION)
    if resp.status_code == 406:  # BMO: "current ironic version does not support firmware updates"
        return None
    if resp.status_code in (400, 404) and (getattr(ctx.node, "firmware_interface", None) or "no-firmware") == (
        "no-firmware"
    ):
        return None
    _raise_for(resp)
    return hf.components_from_ironic(resp.json().get("firmware") or [])


def _raise_for(resp) -> None:
    osexc = imports.load("openstack.exceptions")

    osexc.raise_from_response(resp)


def refresh(ctx) -> bool:
    """Both controllers' read: status of the HostFirmwareSettings (and its FirmwareSchema) and of the
    HostFirmwareComponents of this host, from Ironic.  True when an object changed."""
    changed = False
    hfs = _get(ctx, S.HFS_KIND)
    read = read_settings(ctx) if hfs is not None else None
    if read is not None:
        settings, schema = read
        schema_obj = _schema(ctx, hfs, schema)
        ref = {"namespace": ctx.ns, "name": schema_obj["metadata"]["name"]}
        status, errors = hf.settings_status(hfs, settings, ref, schema)
        if _changed(status, hfs):
            status["lastUpdated"] = _now()
            ctx.store.update_status({**hfs, "status": status})
            changed = True
            for e in errors if settings else []:
                ctx.say(f"HostFirmwareSettings {ctx.ns}/{ctx.name}: invalid BIOS setting: {e}")
    hfc = _get(ctx, S.HFC_KIND)
    if hfc is not None:
        components = read_components(ctx)
        if components is not None:
            status = hf.components_status(hfc, components)
            if _changed(status, hfc):
                status["lastUpdated"] = _now()
                ctx.store.update_status({**hfc, "status": status})
                changed = True
    return changed


def _changed(status: dict, obj: dict) -> bool:
    def strip(st):
        return {k: v for k, v in (st or {}).items() if k != "lastUpdated"}

    return strip(status) != strip(obj.get("status"))


def _now() -> str:
    from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions

    return conditions.now_rfc3339()


def _get(ctx, kind: str) -> dict | None:
    try:
        return ctx.store.get(kind, ctx.name, ctx.ns)
    except NotFound:
        return None


def _schema(ctx, hfs: dict, schema: dict) -> dict:
    """BMO getOrCreateFirmwareSchema: the namespace's schema of this name (the hash of its rules), owned by
    every HostFirmwareSettings that uses it."""
    name = hf.schema_name(schema)
    try:
        obj = ctx.store.get(S.FIRMWARE_SCHEMA_KIND, name, ctx.ns)
    except NotFound:
        obj = hf.new_schema(name, ctx.ns, schema, ctx.status.get("hardware"))
        meta.set_owner(obj, hfs)
        try:
            return ctx.store.create(obj)
        except AlreadyExists:
            # another host with the same rules, registered at the same time, made it first: this host reads it
            # and becomes one more owner (BMO's next reconcile finds it the same way)
            obj = ctx.store.get(S.FIRMWARE_SCHEMA_KIND, name, ctx.ns)
    if meta.set_owner(obj, hfs):
        obj = ctx.store.update(obj)
    return obj
