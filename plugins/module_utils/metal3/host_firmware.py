# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""HostFirmwareSettings, HostFirmwareComponents and FirmwareSchema: the objects side of BMO's firmware controllers.

BMO keeps a host's BIOS settings in a HostFirmwareSettings (spec: what the user wants, status: what Ironic
read from the BMC, conditions ChangeDetected / Valid) whose schema lives in a FirmwareSchema shared by hosts
of the same model, and its firmware in a HostFirmwareComponents (spec.updates: component + URL, status:
the components' versions).  The BareMetalHost controller creates both when the host registers and, while
the host is ``available`` or ``preparing``, turns a valid change into manual clean steps
(hosts/ironic/prepare.py).  Everything here is a pure function over dicts except ``ensure`` and ``change``,
which read or write the store.
"""

from __future__ import annotations

import hashlib

from ansible_collections.baremetal.capi.plugins.module_utils.errors import NotFound
from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions, meta
from ansible_collections.baremetal.capi.plugins.module_utils.model import names as S

API_VERSION = "metal3.io/v1alpha1"
# BMO hostfirmwarecomponents_types.go ValidateHostFirmwareComponents: only these can be updated
FIRMWARE_COMPONENTS = ("bios", "bmc")
# BMO SettingSchema AttributeType enum
ATTRIBUTE_TYPES = ("Enumeration", "String", "Integer", "Boolean", "Password")
# the SettingSchema fields BMO copies from Ironic's BIOS registry (ironic.go GetFirmwareSettings)
SCHEMA_FIELDS = (
    "attribute_type",
    "allowable_values",
    "lower_bound",
    "upper_bound",
    "min_length",
    "max_length",
    "read_only",
    "unique",
)


# -- settings and their schema --------------------------------------------------------------------


def value_string(value) -> str:
    """An IntOrString as Go's IntOrString.String() gives it."""
    return str(value)


def setting_error(name: str, value, entry: dict | None) -> str | None:
    """BMO SettingSchema.Validate / FirmwareSchema.ValidateSetting: the error text, or None when valid."""

    def err(message: str) -> str:
        return f"Setting {name} is invalid, {message}"

    if entry is None:
        return err("it is not in the associated schema")
    if entry.get("read_only"):
        return err("it is ReadOnly")
    if "Password" in name:
        return err("Password fields can't be set")
    kind = entry.get("attribute_type") or ""
    text = value_string(value)
    if kind == "Enumeration":
        if text in (entry.get("allowable_values") or []):
            return None
        return err(f"unknown enumeration value - {text}")
    if kind == "Integer":
        if isinstance(value, str):
            try:
                number = int(value)
            except ValueError:
                return err(f"String {value} entered while integer expected")
        else:
            number = int(value)
        low, high = entry.get("lower_bound"), entry.get("upper_bound")
        if low is not None and number < low:
            return err(f"integer {number} is below minimum value {low}")
        if high is not None and number > high:
            return err(f"integer {number} is above maximum value {high}")
        return None
    if kind == "String":
        low, high = entry.get("min_length"), entry.get("max_length")
        if low is not None and len(text) < low:
            return err(f"string {text} length is below minimum length {low}")
        if high is not None and len(text) > high:
            return err(f"string {text} length is above maximum length {high}")
        return None
    if kind == "Boolean":
        return None if text in ("true", "false") else err(f"{text} is not a boolean")
    if kind == "Password":
        return err("passwords are immutable")
    if kind == "":
        return None  # BMO: the BIOS registry may not have been available
    return err(f"unexpected attribute type {kind}")


def validate_settings(spec_settings: dict, status_settings: dict, schema: dict | None) -> list[str]:
    """BMO HostFirmwareSettingsReconciler.validateHostFirmwareSettings: every problem of spec.settings."""
    errors = []
    for name in sorted(spec_settings or {}):
        value = spec_settings[name]
        if "Password" in name:
            errors.append("cannot set Password field")
            continue
        if name not in (status_settings or {}):
            errors.append(f"setting {name} is not in the Status field")
            continue
        if schema is not None:
            problem = setting_error(name, value, schema.get(name))
            if problem:
                errors.append(problem)
    return errors


def schema_from_ironic(rows: list[dict]) -> tuple[dict, dict]:
    """(settings, schema) from Ironic's ``GET /v1/nodes/{id}/bios?detail=True`` rows (ironic.go
    GetFirmwareSettings); password settings are left out of both, as the controller leaves them out."""
    settings, schema = {}, {}
    for row in rows:
        name = row.get("name")
        if not name:
            continue
        value = row.get("value")
        # as BMO's SettingSchema serialises: nil pointers and empty lists omitted, a false read_only kept
        entry = {k: row[k] for k in SCHEMA_FIELDS if row.get(k) is not None and row.get(k) != []}
        if "Password" in name:
            continue
        settings[name] = "" if value is None else str(value)
        if entry.get("attribute_type") != "Password":
            schema[name] = entry
    return settings, schema


def schema_name(schema: dict) -> str:
    """BMO GetSchemaName: ``schema-`` and 8 hex digits of a hash of the names and rules (same model, same name)."""
    keys = []
    for name, entry in schema.items():
        keys.append(name)
        keys.append(entry.get("attribute_type") or "")
        keys.extend(entry.get("allowable_values") or [])
        for field in ("lower_bound", "upper_bound", "min_length", "max_length"):
            if entry.get(field) is not None:
                keys.append(str(int(entry[field])))
        if entry.get("read_only") is not None:
            keys.append("true" if entry["read_only"] else "false")
    keys.sort()
    # Go's fmt "%v" of a []string
    return "schema-" + hashlib.sha256(("[" + " ".join(keys) + "]").encode()).hexdigest()[:8]


def new_schema(name: str, ns: str, schema: dict, hardware: dict | None) -> dict:
    obj = meta.new(S.FIRMWARE_SCHEMA_KIND, name, ns, spec={"schema": schema})
    vendor = (hardware or {}).get("systemVendor") or {}
    if vendor.get("manufacturer"):
        obj["spec"]["hardwareVendor"] = vendor["manufacturer"]
    if vendor.get("productName"):
        obj["spec"]["hardwareModel"] = vendor["productName"]
    return obj


def settings_status(hfs: dict, settings: dict, schema_ref: dict | None, schema: dict | None) -> tuple[dict, list[str]]:
    """BMO HostFirmwareSettingsReconciler.updateStatus: the new status (settings read, schema reference,
    ChangeDetected / Valid) and the validation errors of the spec."""
    work = {"metadata": dict(hfs.get("metadata") or {}), "status": meta.deepcopy(hfs.get("status") or {})}
    status = work["status"]
    if schema_ref:
        status["schema"] = dict(schema_ref)
    status["settings"] = {k: v for k, v in settings.items() if "Password" not in k}
    spec_settings = (hfs.get("spec") or {}).get("settings") or {}
    mismatch = any(
        name not in status["settings"] or value_string(value) != status["settings"][name]
        for name, value in spec_settings.items()
    )
    errors: list[str] = []
    if mismatch:
        conditions.set_condition(work, S.FIRMWARE_CHANGE_DETECTED, True, S.HFS_REASON_SUCCESS)
        errors = validate_settings(spec_settings, status["settings"], schema)
        if errors:
            conditions.set_condition(
                work, S.FIRMWARE_VALID, False, S.HFS_REASON_CONFIGURATION_ERROR, "Invalid BIOS setting"
            )
        else:
            conditions.set_condition(work, S.FIRMWARE_VALID, True, S.HFS_REASON_SUCCESS)
    else:
        conditions.set_condition(work, S.FIRMWARE_VALID, True, S.HFS_REASON_SUCCESS)
        conditions.set_condition(work, S.FIRMWARE_CHANGE_DETECTED, False, S.HFS_REASON_SUCCESS)
    return status, errors


# -- firmware components ----------------------------------------------------------------------------


def components_error(updates: list) -> str | None:
    """BMO HostFirmwareComponents.ValidateHostFirmwareComponents."""
    for update in updates or []:
        if (update or {}).get("component") not in FIRMWARE_COMPONENTS:
            return (
                f"component {(update or {}).get('component')} is invalid, only 'bmc' or 'bios' are allowed "
                "as update names"
            )
    return None


def components_from_ironic(rows: list[dict]) -> list[dict]:
    """BMO GetFirmwareComponents: the bios and bmc rows of ``GET /v1/nodes/{id}/firmware``, others ignored."""
    out = []
    for row in rows:
        if row.get("component") not in FIRMWARE_COMPONENTS:
            continue
        item = {"component": row["component"], "initialVersion": row.get("initial_version") or ""}
        if row.get("current_version"):
            item["currentVersion"] = row["current_version"]
        if row.get("last_version_flashed"):
            item["lastVersionFlashed"] = row["last_version_flashed"]
        stamp = row.get("updated_at") or row.get("created_at")
        if stamp:
            item["updatedAt"] = _rfc3339(stamp)
        out.append(item)
    return out


def _rfc3339(stamp: str) -> str:
    """Ironic's ``2026-12-06T18:00:00.123456+00:00`` as Kubernetes writes a metav1.Time."""
    import datetime

    try:
        t = datetime.datetime.fromisoformat(stamp)
    except ValueError:
        return stamp
    if t.tzinfo is None:
        t = t.replace(tzinfo=datetime.UTC)
    return t.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def components_status(hfc: dict, components: list[dict]) -> dict:
    """BMO HostFirmwareComponentsReconciler.updateHostFirmware: the new status."""
    work = {"metadata": dict(hfc.get("metadata") or {}), "status": meta.deepcopy(hfc.get("status") or {})}
    spec_updates = (hfc.get("spec") or {}).get("updates") or []
    status_updates = work["status"].get("updates") or []
    work["status"]["components"] = components
    if spec_updates != status_updates and (spec_updates or status_updates):
        conditions.set_condition(work, S.FIRMWARE_CHANGE_DETECTED, True, S.HFC_REASON_OK)
        problem = components_error(spec_updates)
        if problem:
            conditions.set_condition(
                work,
                S.FIRMWARE_VALID,
                False,
                S.HFC_REASON_INVALID_COMPONENT,
                f"Invalid Firmware Components: {problem}",
            )
        else:
            conditions.set_condition(work, S.FIRMWARE_VALID, True, S.HFC_REASON_OK)
    else:
        conditions.set_condition(work, S.FIRMWARE_VALID, True, S.HFC_REASON_OK)
        conditions.set_condition(work, S.FIRMWARE_CHANGE_DETECTED, False, S.HFC_REASON_OK)
    return work["status"]


def updates_difference(spec_updates: list, status_updates: list) -> list:
    """BMO getUpdatesDifference: the spec's updates not yet applied with the same URL."""
    done = {u.get("component"): u.get("url") for u in status_updates or []}
    return [u for u in spec_updates or [] if done.get(u.get("component"), None) != u.get("url")]


# -- the objects of one host ------------------------------------------------------------------------


def ensure(store, host: dict) -> list[str]:
    """BMO createHostFirmwareSettings / createHostFirmwareComponents: both objects, named as the host and owned
    by it, created when missing.  Returns the kinds created."""
    ns, name = meta.namespace(host), host["metadata"]["name"]
    made = []
    for kind, spec, controller in (
        (S.HFS_KIND, {"settings": {}}, True),
        (S.HFC_KIND, {"updates": []}, False),
    ):
        try:
            store.get(kind, name, ns)
            continue
        except NotFound:
            pass
        obj = meta.new(kind, name, ns, spec=spec)
        meta.set_owner(obj, host, controller=controller)
        store.create(obj)
        made.append(kind)
    return made


def _get(store, kind: str, name: str, ns: str) -> dict | None:
    try:
        return store.get(kind, name, ns)
    except NotFound:
        return None


def settings_change(store, name: str, ns: str) -> tuple[bool, dict | None]:
    """BMO getHostFirmwareSettings: (True, hfs) when the spec asks for a change that is valid; a change whose
    status settings were never read raises (the caller waits, as BMO's subResourceNotReadyRetryDelay)."""
    hfs = _get(store, S.HFS_KIND, name, ns)
    if hfs is None or not conditions.is_true(hfs, S.FIRMWARE_CHANGE_DETECTED):
        return False, None
    if not (hfs.get("status") or {}).get("settings"):
        raise NotReady("host firmware status settings not available")
    if conditions.is_true(hfs, S.FIRMWARE_VALID):
        return True, hfs
    return False, None


def components_change(store, name: str, ns: str) -> tuple[bool, dict | None]:
    """BMO getHostFirmwareComponents: (True, hfc) when a valid change was seen at the object's generation."""
    hfc = _get(store, S.HFC_KIND, name, ns)
    if hfc is None:
        return False, None
    cond = conditions.get(hfc, S.FIRMWARE_CHANGE_DETECTED)
    generation = (hfc.get("metadata") or {}).get("generation")
    if not cond or cond.get("status") != conditions.TRUE or cond.get("observedGeneration") != generation:
        return False, None
    if conditions.is_true(hfc, S.FIRMWARE_VALID):
        return True, hfc
    return False, None


def _stale(obj: dict) -> bool:
    cond = conditions.get(obj, S.FIRMWARE_CHANGE_DETECTED)
    return cond is None or cond.get("observedGeneration") != (obj.get("metadata") or {}).get("generation")


def reevaluate(store, name: str, ns: str) -> bool:
    """The controllers' answer to a spec edit (they watch generation changes): ChangeDetected / Valid computed
    again against the status last read from Ironic, without asking Ironic.  True when a status was written."""
    written = False
    hfs = _get(store, S.HFS_KIND, name, ns)
    if hfs is not None and _stale(hfs) and (hfs.get("status") or {}).get("settings") is not None:
        ref = hfs["status"].get("schema")
        schema_obj = _get(store, S.FIRMWARE_SCHEMA_KIND, ref["name"], ref.get("namespace") or ns) if ref else None
        schema = ((schema_obj or {}).get("spec") or {}).get("schema") if schema_obj else None
        status, _errors = settings_status(hfs, hfs["status"]["settings"], ref, schema)
        if status != hfs["status"]:
            store.update_status({**hfs, "status": status})
            written = True
    hfc = _get(store, S.HFC_KIND, name, ns)
    if hfc is not None and _stale(hfc) and hfc.get("status") is not None:
        status = components_status(hfc, (hfc.get("status") or {}).get("components") or [])
        if status != hfc["status"]:
            store.update_status({**hfc, "status": status})
            written = True
    return written


class NotReady(Exception):
    """A sub-resource the host waits for (BMO: requeue after subResourceNotReadyRetryDelay)."""
