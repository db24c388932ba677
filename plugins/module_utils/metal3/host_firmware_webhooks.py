# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What BMO's webhooks and CRDs refuse of HostFirmwareSettings, HostFirmwareComponents and a BareMetalHost's
spec.raid / spec.firmware, before anything is written (Invalid names the field)."""

from __future__ import annotations

from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.metal3.host_firmware import components_error
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta

# -- webhooks (what the API server would refuse) ---------------------------------------------------


def validate_settings_object(obj: dict, old: dict | None = None) -> None:
    """spec.settings is a map of setting name to a string or an integer (the CRD's IntOrString)."""
    settings = (obj.get("spec") or {}).get("settings")
    if settings is None:
        return
    if not isinstance(settings, dict):
        raise Invalid("must be a mapping of setting name to value", obj=meta.ref(obj), field="spec.settings")
    for name, value in settings.items():
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise Invalid(f"{value!r} is not a string or an integer", obj=meta.ref(obj), field=f"spec.settings.{name}")


def validate_components_object(obj: dict, old: dict | None = None) -> None:
    """BMO's HostFirmwareComponents webhook: every update names bios or bmc and has a URL."""
    updates = (obj.get("spec") or {}).get("updates") or []
    if not isinstance(updates, list):
        raise Invalid("must be a list of {component, url}", obj=meta.ref(obj), field="spec.updates")
    problem = components_error(updates)
    if problem:
        raise Invalid(problem, obj=meta.ref(obj), field="spec.updates")
    for i, update in enumerate(updates):
        if not (update or {}).get("url"):
            raise Invalid("url is required", obj=meta.ref(obj), field=f"spec.updates[{i}].url")


# -- BareMetalHost spec.raid / spec.firmware (BMO's BareMetalHost webhook and CRD) -------------------------

HARDWARE_RAID_LEVELS = ("0", "1", "2", "5", "6", "1+0", "5+0", "6+0")
SOFTWARE_RAID_LEVELS = ("0", "1", "1+0")
FIRMWARE_CONFIG_FIELDS = ("simultaneousMultithreadingEnabled", "sriovEnabled", "virtualizationEnabled")


def validate_host_raid_firmware(spec: dict, access) -> None:
    """spec.raid and spec.firmware as BMO's webhook and CRD refuse them; ``access`` is the parsed BMC (or None).
    Raises Invalid naming the field (the caller adds the object)."""
    raid = spec.get("raid")
    if raid is not None:
        if not isinstance(raid, dict):
            raise Invalid("must be a mapping", field="spec.raid")
        hardware, software = raid.get("hardwareRAIDVolumes"), raid.get("softwareRAIDVolumes")
        if hardware and software:
            raise Invalid(
                "hardwareRAIDVolumes and softwareRAIDVolumes can not be set at the same time", field="spec.raid"
            )
        for key, levels, limit in (
            ("hardwareRAIDVolumes", HARDWARE_RAID_LEVELS, None),
            ("softwareRAIDVolumes", SOFTWARE_RAID_LEVELS, 2),
        ):
            volumes = raid.get(key)
            if volumes is None:
                continue
            if not isinstance(volumes, list):
                raise Invalid("must be a list", field=f"spec.raid.{key}")
            if limit is not None and len(volumes) > limit:
                raise Invalid(f"at most {limit} volumes", field=f"spec.raid.{key}")
            for i, vol in enumerate(volumes):
                field = f"spec.raid.{key}[{i}]"
                if not isinstance(vol, dict):
                    raise Invalid("must be a mapping", field=field)
                if str(vol.get("level")) not in levels:
                    raise Invalid(
                        f"level {vol.get('level')!r} is not one of {', '.join(levels)}", field=f"{field}.level"
                    )
                size = vol.get("sizeGibibytes")
                if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 0):
                    raise Invalid(f"{size!r} is not a whole number of GiB", field=f"{field}.sizeGibibytes")
                if key == "hardwareRAIDVolumes" and vol.get("physicalDisks") and not vol.get("controller"):
                    raise Invalid("'controller' must be specified if 'physicalDisks' are used", field=field)
        raid_iface = (access.interfaces.get("raid_interface") if access is not None else None) or ""
        if hardware and raid_iface == "no-raid":
            raise Invalid(f"BMC driver {access.bmc_type} does not support configuring RAID", field="spec.raid")
    firmware = spec.get("firmware")
    if firmware is not None:
        if not isinstance(firmware, dict):
            raise Invalid("must be a mapping", field="spec.firmware")
        for key, value in firmware.items():
            if key not in FIRMWARE_CONFIG_FIELDS:
                raise Invalid(
                    f"unknown field; known: {', '.join(FIRMWARE_CONFIG_FIELDS)}", field=f"spec.firmware.{key}"
                )
            if not isinstance(value, bool):
                raise Invalid(f"{value!r} is not a boolean", field=f"spec.firmware.{key}")
        if access is not None and access.driver == "ipmi" and firmware:
            raise Invalid(f"firmware settings for {access.driver} are not supported", field="spec.firmware")
