# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""BMO's ``preparing`` state: RAID, BIOS settings and firmware updates applied by manual cleaning.

The host controller compares ``spec.raid`` / ``spec.firmware`` with ``status.provisioning`` and the
HostFirmwareSettings / HostFirmwareComponents changes their controllers detected; when something is to do it
manages the node, sets the node's target RAID configuration (``PUT /v1/nodes/{id}/states/raid``) and starts a
manual clean with BMO's steps: ``raid.delete_configuration`` (+ ``deploy.erase_devices_metadata`` for software
RAID) and ``raid.create_configuration``, ``bios.apply_configuration`` with the changed settings,
``firmware.update`` with the new components (host_state_machine.go handlePreparing, baremetalhost_controller.go
actionPreparing / saveHostProvisioningSettings, ironic.go Prepare / buildManualCleaningSteps, raid.go).
A failed clean is a ``preparation error``; the next step retries (manage, clean again), as BMO does.
"""

from __future__ import annotations

import ansible_collections.baremetal.capi.plugins.module_utils.hosts.ironic.configdrive as cd
import ansible_collections.baremetal.capi.plugins.module_utils.hosts.ironic.firmware as ironic_firmware
import ansible_collections.baremetal.capi.plugins.module_utils.hosts.ironic.node as ironic_node
from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.hosts import bmc
from ansible_collections.baremetal.capi.plugins.module_utils.metal3 import host_firmware as hf
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta
from ansible_collections.baremetal.capi.plugins.module_utils.model import names as S

NO_RAID = "no-raid"
SOFTWARE_RAID = "agent"
RAID_MICROVERSION = "1.12"  # PUT /v1/nodes/{id}/states/raid


class PrepareError(Exception):
    """A preparation the host cannot do (BMO operationFailed in Prepare): a ``preparation error``."""


# -- spec -> status.provisioning (saveHostProvisioningSettings) -------------------------------------


def _software(raid: dict | None) -> list:
    return list((raid or {}).get("softwareRAIDVolumes") or [])


def _hardware(raid: dict | None) -> list:
    return list((raid or {}).get("hardwareRAIDVolumes") or [])


def root_device_hints(spec: dict) -> dict | None:
    """The hints the host deploys with: the spec's, else BMO's profile default; none for a software-RAID root."""
    if spec.get("rootDeviceHints"):
        return dict(spec["rootDeviceHints"])
    if _software(spec.get("raid")):
        return None
    return dict(cd.DEFAULT_ROOT_DEVICE)


def _keep(provisioning: dict, key: str, value) -> bool:
    """``provisioning[key] = value`` (removed when None); whether that changed it."""
    if provisioning.get(key) == value:
        return False
    if value is None:
        provisioning.pop(key, None)
    else:
        provisioning[key] = value
    return True


def provisioning_settings(spec: dict, provisioning: dict) -> tuple[bool, dict]:
    """BMO saveHostProvisioningSettings on a copy: (dirty, the new status.provisioning)."""
    new = meta.deepcopy(provisioning)
    raid = meta.deepcopy(spec.get("raid")) if spec.get("raid") else None
    if not raid and new.get("raid") is not None:
        # no RAID asked: keep the hardware volumes there are, remove software ones
        raid = {"softwareRAIDVolumes": []}
        if _hardware(new["raid"]):
            raid["hardwareRAIDVolumes"] = _hardware(new["raid"])
    firmware = meta.deepcopy(spec.get("firmware")) if spec.get("firmware") is not None else None
    dirty = _keep(new, "rootDeviceHints", root_device_hints(spec))
    dirty = _keep(new, "raid", raid) or dirty
    dirty = _keep(new, "firmware", firmware) or dirty
    return dirty, new


def clear_provisioning_settings(provisioning: dict) -> None:
    """BMO clearHostProvisioningSettings (after deprovisioning, on a failed preparation): hints, software RAID
    and firmware go; hardware RAID volumes stay so the same hardware RAID is not built again."""
    provisioning.pop("rootDeviceHints", None)
    if provisioning.get("raid") is not None:
        provisioning["raid"].pop("softwareRAIDVolumes", None)
    provisioning.pop("firmware", None)


# -- RAID (raid.go) ---------------------------------------------------------------------------------


def raid_interface(current: str, target: dict | None, actual: dict | None) -> str:
    """BMO CheckRAIDInterface: the RAID interface the node needs for ``target``; software RAID is the agent's."""
    if target is None:
        return current
    if current == NO_RAID and _hardware(target):
        raise PrepareError(f"RAID settings are defined, but the node's driver {current} does not support RAID")
    if current == SOFTWARE_RAID and _hardware(target):
        raise PrepareError(
            f"hardware RAID settings are defined, but the node's driver {current} only supports software RAID"
        )
    if _software(target) or _software(actual):
        return SOFTWARE_RAID
    return current


def _size(volume: dict):
    size = volume.get("sizeGibibytes")
    return "MAX" if size is None else size  # gophercloud: no size is Ironic's MAX


def logical_disks(raid: dict | None) -> list[dict]:
    """BMO BuildTargetRAIDCfg: Ironic's target_raid_config logical disks (the root volume is not set here)."""
    disks = []
    if _hardware(raid):
        names_seen: dict = {}
        for i, vol in enumerate(_hardware(raid)):
            name = vol.get("name")
            if name:
                if name in names_seen:
                    raise PrepareError(f"the names({name}) of volume[{i}] and volume[{names_seen[name]}] are repeated")
                names_seen[name] = i
            physical = list(vol.get("physicalDisks") or [])
            if physical and not vol.get("controller"):
                raise PrepareError("'controller' must be specified if 'physicalDisks' are used")
            count = vol.get("numberOfPhysicalDisks")
            if count is not None and physical and count != len(physical):
                raise PrepareError(
                    f"the numberOfPhysicalDisks[{count}] is not same as number of items in physicalDisks"
                    f"[{len(physical)}]"
                )
            disk = {"size_gb": _size(vol), "raid_level": str(vol.get("level") or "")}
            if name:
                disk["volume_name"] = name
            if vol.get("controller"):
                disk["controller"] = vol["controller"]
            if physical:
                disk["physical_disks"] = physical
            if vol.get("rotational") is not None:
                disk["disk_type"] = "hdd" if vol["rotational"] else "ssd"
            if count is not None:
                disk["number_of_physical_disks"] = count
            disks.append(disk)
    elif _software(raid):
        volumes = _software(raid)
        if str(volumes[0].get("level")) != "1":
            raise PrepareError("the level in first volume of software raid must be RAID1")
        for vol in volumes:
            disk = {"size_gb": _size(vol), "raid_level": str(vol.get("level") or ""), "controller": "software"}
            hints = [cd.root_device(h) for h in vol.get("physicalDisks") or []]
            if hints:
                disk["physical_disks"] = hints
            disks.append(disk)
    return disks


def raid_clean_steps(interface: str, target: dict | None, actual: dict | None) -> list[dict]:
    """BMO BuildRAIDCleanSteps."""
    raid_interface(interface, target, actual)
    if target is not None and target.get("softwareRAIDVolumes") is not None:
        t = {"softwareRAIDVolumes": _software(target)}
        a = {"softwareRAIDVolumes": _software(actual)} if actual is not None else None
        if t == a or (not t["softwareRAIDVolumes"] and not (a or {}).get("softwareRAIDVolumes")):
            return []
        steps = [
            {"interface": "raid", "step": "delete_configuration"},
            {"interface": "deploy", "step": "erase_devices_metadata"},
        ]
        if t["softwareRAIDVolumes"]:
            steps.append({"interface": "raid", "step": "create_configuration"})
        return steps
    if interface == NO_RAID or target is None or target.get("hardwareRAIDVolumes") is None:
        return []  # no hardware RAID asked: the one there is stays
    t = {"hardwareRAIDVolumes": _hardware(target)}
    a = {"hardwareRAIDVolumes": _hardware(actual)} if actual is not None and "hardwareRAIDVolumes" in actual else None
    if t == a:
        return []
    steps = [{"interface": "raid", "step": "delete_configuration"}]
    if t["hardwareRAIDVolumes"]:
        steps.append({"interface": "raid", "step": "create_configuration"})
    return steps


# -- the clean steps (buildManualCleaningSteps) ---------------------------------------------------------


def bios_settings(actual: dict | None, target: dict | None) -> list[dict]:
    """BMO getNewFirmwareSettings for a BMC whose driver converts no spec.firmware names (redfish): the target
    settings that differ from the current ones, integers kept as integers."""
    out = []
    if actual is None:
        return out
    for name in sorted(target or {}):
        value = target[name]
        if actual.get(name) != hf.value_string(value):
            out.append({"name": name, "value": value})
    return out


def clean_steps(interface: str, data: dict) -> list[dict]:
    steps = raid_clean_steps(interface, data.get("target_raid"), data.get("actual_raid"))
    settings = bios_settings(data.get("actual_settings"), data.get("target_settings"))
    if settings:
        steps.append({"interface": "bios", "step": "apply_configuration", "args": {"settings": settings}})
    updates = [{"component": u["component"], "url": u["url"]} for u in data.get("target_components") or []]
    if updates:
        steps.append({"interface": "firmware", "step": "update", "args": {"settings": updates}})
    return steps


# -- the state -----------------------------------------------------------------------------------------


def needs_preparing(ctx) -> bool:
    """BMO handleAvailable: back to ``preparing`` when the RAID / firmware spec or a firmware object changed."""
    dirty, _new = provisioning_settings(ctx.spec, ctx.status["provisioning"])
    if dirty:
        return True
    hf.reevaluate(ctx.store, ctx.name, ctx.ns)  # a spec edited since the last read
    try:
        return (
            hf.settings_change(ctx.store, ctx.name, ctx.ns)[0] or hf.components_change(ctx.store, ctx.name, ctx.ns)[0]
        )
    except hf.NotReady:
        return False


def preparing(ctx):
    """One step of ``preparing`` (BMO actionPreparing + Prepare)."""
    node = ctx.node
    state = node.provision_state
    hf.ensure(ctx.store, ctx.host)
    if state in ("manageable", "available"):
        ironic_firmware.refresh(ctx)  # the HFS / HFC controllers' read, so the decision sees Ironic's values
    dirty, new = provisioning_settings(ctx.spec, ctx.status["provisioning"])
    failed_before = ctx.status.get("errorType") == S.BMH_ERROR_PREPARATION
    data = {
        "target_raid": meta.deepcopy(new.get("raid")),
        "actual_raid": None if failed_before else meta.deepcopy(ctx.status["provisioning"].get("raid")),
        "hints": new.get("rootDeviceHints"),
    }
    dirty = dirty or failed_before  # BMO: a failed clean means the RAID there is cannot be trusted
    try:
        hfs_dirty, hfs = hf.settings_change(ctx.store, ctx.name, ctx.ns)
        hfc_dirty, hfc = hf.components_change(ctx.store, ctx.name, ctx.ns)
    except hf.NotReady as exc:
        ctx.say(f"waiting: {exc}")
        return ctx.driver.poll * 5
    if hfs_dirty:
        data["actual_settings"] = dict((hfs.get("status") or {}).get("settings") or {})
        data["target_settings"] = dict((hfs.get("spec") or {}).get("settings") or {})
    if hfc_dirty:
        spec_updates = (hfc.get("spec") or {}).get("updates") or []
        data["target_components"] = hf.updates_difference(spec_updates, (hfc.get("status") or {}).get("updates"))
    unprepared = dirty or hfs_dirty or hfc_dirty
    try:
        started, wait = _prepare(ctx, data, unprepared, failed_before)
    except PrepareError as exc:
        if dirty:
            clear_provisioning_settings(ctx.status["provisioning"])
        if hfc_dirty and (hfc.get("status") or {}).get("updates") is not None:
            ctx.store.update_status({**hfc, "status": {**hfc["status"], "updates": None}})
        return ctx.set_error(S.BMH_ERROR_PREPARATION, str(exc))
    if started and hfc_dirty:
        status = {**(hfc.get("status") or {}), "updates": list((hfc.get("spec") or {}).get("updates") or [])}
        if status != hfc.get("status"):
            ctx.store.update_status({**hfc, "status": status})
    if started and dirty:
        ctx.status["provisioning"] = new
    if started:
        ctx.clear_error(only=(S.BMH_ERROR_PREPARATION,))
    if wait is not None:
        return wait
    ctx.status["errorCount"] = 0
    return ctx.set_state(S.BMH_STATE_AVAILABLE)


def _prepare(ctx, data: dict, unprepared: bool, restart: bool) -> tuple[bool, float | None]:
    """BMO Prepare: (started, wait); wait None when preparing is complete."""
    node = ctx.node
    state = node.provision_state
    interface = _bmc_raid_interface(ctx)
    if state == "available":
        if unprepared:
            if clean_steps(interface, data):
                return False, ironic_node.provision(ctx, "manage")
            return True, None
        return False, None
    if state == "manageable":
        if unprepared:
            steps = _start(ctx, interface, data)
            if steps:
                return True, ironic_node.provision(ctx, "clean", clean_steps=steps)
            return True, None
        return False, None
    if state == "clean failed":
        if not restart:
            raise PrepareError(ctx.ironic_error() or "Cleaning failed")
        if node.is_maintenance:
            ctx.node = ctx.conn.baremetal.unset_node_maintenance(node)
            return False, ctx.driver.poll
        return False, ironic_node.provision(ctx, "manage")
    if state in ("cleaning", "clean wait"):
        return False, ctx.driver.poll * 2
    # an unexpected state (enroll, verifying, ...): BMO's transient error, try again
    return False, ctx.driver.poll


def _bmc_raid_interface(ctx) -> str:
    """The RAID interface of the host's BMC type (BMO bmcAccess.RAIDInterface()), not the node's current one:
    software RAID switches the node to ``agent`` and a later hardware RAID request switches it back."""
    try:
        access = bmc.parse((ctx.spec.get("bmc") or {}).get("address"))
    except Invalid:
        access = None
    iface = access.interfaces.get("raid_interface") if access is not None else None
    return iface or ctx.node.raid_interface or NO_RAID


def _start(ctx, interface: str, data: dict) -> list[dict]:
    """BMO startManualCleaning: the node's RAID interface and target RAID config, then the steps."""
    target, actual = data.get("target_raid"), data.get("actual_raid")
    wanted = raid_interface(interface, target, actual)
    disks = logical_disks(target)
    bm = ctx.conn.baremetal
    if disks:
        if data.get("hints") is None:
            disks[0]["is_root_volume"] = True
        if ctx.node.raid_interface != wanted:
            ctx.node = bm.patch_node(ctx.node, [{"op": "add", "path": "/raid_interface", "value": wanted}])
            ctx.say(f"raid_interface {wanted}")
        resp = bm.put(
            f"/nodes/{ctx.node.id}/states/raid", json={"logical_disks": disks}, microversion=RAID_MICROVERSION
        )
        if resp.status_code >= 400:
            ironic_firmware._raise_for(resp)
        ctx.say(f"target RAID config: {len(disks)} logical disk(s)")
    return clean_steps(wanted, data)
