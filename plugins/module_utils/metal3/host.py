# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Register, update and remove BareMetalHosts: what the baremetalhost module does, without Ansible.

``build`` turns one host's options into the objects to write (the
BareMetalHost, a BMC credentials Secret when credentials are given inline, a
HardwareData when hardware details are given); ``validate`` is BMO's webhook;
``apply`` writes them (merge patch: fields the task does not name, such as a
consumerRef the machine flow set, are kept); ``reconcile`` runs the host
driver over many hosts at once with the runner.
"""

from __future__ import annotations

import copy
import json
import re

from ansible_collections.baremetal.capi.plugins.module_utils import objects, runner
from ansible_collections.baremetal.capi.plugins.module_utils.errors import CapiError, Invalid, NotFound
from ansible_collections.baremetal.capi.plugins.module_utils.hosts import base, bmc
from ansible_collections.baremetal.capi.plugins.module_utils.hosts.ironic import configdrive as cd
from ansible_collections.baremetal.capi.plugins.module_utils.metal3 import host_firmware_webhooks
from ansible_collections.baremetal.capi.plugins.module_utils.model import kinds, meta, names

API_VERSION = "metal3.io/v1alpha1"
MAC = re.compile(r"^([0-9a-fA-F]{2}[:-]){5}[0-9a-fA-F]{2}$")
# BMO's webhook lets bmc.address change only here
ADDRESS_MUTABLE_STATES = ("", names.BMH_STATE_REGISTERING, names.BMH_STATE_UNMANAGED)


def credentials_secret_name(host_name: str) -> str:
    return f"{host_name}-bmc-secret"  # the metal3-dev-env convention


def build(params: dict, default_namespace: str = "default") -> list[dict]:
    """The objects one host entry describes: [BareMetalHost, Secret?, HardwareData?].

    ``params``: name, namespace, spec (BMH spec, upstream field names),
    labels, annotations, bmc_username / bmc_password (inline credentials),
    hardware (HardwareData spec.hardware).
    """
    name = params.get("name")
    if not name:
        raise Invalid("name is required", obj="BareMetalHost", field="name")
    ns = params.get("namespace") or default_namespace
    spec = copy.deepcopy(params.get("spec") or {})
    out = []
    user, password = params.get("bmc_username"), params.get("bmc_password")
    if user or password:
        if not (user and password):
            raise Invalid(
                "bmc_username and bmc_password go together", obj=f"BareMetalHost {ns}/{name}", field="bmc_password"
            )
        secret_name = (spec.get("bmc") or {}).get("credentialsName") or credentials_secret_name(name)
        spec.setdefault("bmc", {})["credentialsName"] = secret_name
        out.append(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": secret_name, "namespace": ns},
                "type": "Opaque",
                "stringData": {"username": user, "password": password},
            }
        )
    host = {
        "apiVersion": API_VERSION,
        "kind": "BareMetalHost",
        "metadata": {"name": name, "namespace": ns},
        "spec": spec,
    }
    for field in ("labels", "annotations"):
        if params.get(field) is not None:
            host["metadata"][field] = dict(params[field])
    out.insert(0, host)
    if params.get("hardware") is not None:
        out.append(
            {
                "apiVersion": API_VERSION,
                "kind": "HardwareData",
                "metadata": {"name": name, "namespace": ns},
                "spec": {"hardware": params["hardware"]},
            }
        )
    return out


def validate(host: dict, before: dict | None) -> None:
    """BMO's BareMetalHost webhook rules (the ones that matter here); Invalid names the field."""
    ref = meta.ref(host)
    spec = host.get("spec") or {}
    address = (spec.get("bmc") or {}).get("address")
    try:
        access = None
        if address:
            access = bmc.parse(address)
            if access.needs_mac and not spec.get("bootMACAddress"):
                raise Invalid("bootMACAddress is required for this BMC type", field="spec.bootMACAddress")
            if not access.fake and not (spec.get("bmc") or {}).get("credentialsName"):
                raise Invalid("credentialsName is required with a BMC address", field="spec.bmc.credentialsName")
        mac = spec.get("bootMACAddress")
        if mac and not MAC.match(mac):
            raise Invalid(f"{mac!r} is not a MAC address", field="spec.bootMACAddress")
        mode = spec.get("automatedCleaningMode")
        if mode and mode not in (names.CLEANING_MODE_METADATA, names.CLEANING_MODE_DISABLED):
            raise Invalid(f"{mode!r} is not metadata or disabled", field="spec.automatedCleaningMode")
        if spec.get("disablePowerOff") and spec.get("online") is False:
            raise Invalid("disablePowerOff cannot be used with online: false", field="spec.online")
        if spec.get("inspectionMode") not in (None, "", "disabled", "agent", "fast"):
            raise Invalid(f"{spec['inspectionMode']!r} is not disabled, agent or fast", field="spec.inspectionMode")
        if spec.get("bootMode") not in (None, "", "UEFI", "UEFISecureBoot", "legacy"):
            raise Invalid(f"{spec['bootMode']!r} is not UEFI, UEFISecureBoot or legacy", field="spec.bootMode")
        if spec.get("image") or (spec.get("customDeploy") or {}).get("method"):
            cd.validate_image(spec.get("image"), spec.get("customDeploy"))
        host_firmware_webhooks.validate_host_raid_firmware(spec, access)
        ns = meta.namespace(host)
        for field in ("userData", "metaData", "networkData"):
            other = (spec.get(field) or {}).get("namespace")
            if other and other != ns:
                raise Invalid(f"secret namespace {other} is not the host's namespace {ns}", field=f"spec.{field}")
        for key, value in meta.annotations(host).items():
            if key == names.REBOOT_ANNOTATION or key.startswith(names.REBOOT_ANNOTATION + "/"):
                _check_reboot_value(value, key)
        if before is not None:
            old = before.get("spec") or {}
            if old.get("bootMACAddress") and spec.get("bootMACAddress") != old["bootMACAddress"]:
                raise Invalid("bootMACAddress can not be changed once it is set", field="spec.bootMACAddress")
            old_address = (old.get("bmc") or {}).get("address")
            if old_address and address != old_address and base.state(before) not in ADDRESS_MUTABLE_STATES:
                raise Invalid("BMC address can not be changed once the host is registered", field="spec.bmc.address")
    except Invalid as exc:
        raise Invalid(exc.message, obj=ref, field=exc.field) from exc


def _check_reboot_value(value: str, key: str) -> None:
    if not value:
        return
    try:
        parsed = json.loads(value)
    except ValueError as exc:
        raise Invalid(f"invalid JSON in annotation value: {exc}", field=f"metadata.annotations[{key}]") from exc
    if not isinstance(parsed, dict) or parsed.get("mode", "") not in ("", "hard", "soft"):
        raise Invalid('the value must be {"mode": "hard"|"soft", "force": bool}', field=f"metadata.annotations[{key}]")


def get(store, kind, name, ns):
    """The object, or None when it does not exist."""
    try:
        return store.get(kind, name, ns)
    except NotFound:
        return None


def apply(store, objs: list[dict], *, check: bool = False) -> dict:
    """Write one host's objects.  Returns {changed, before, after, secret_changed}."""
    host = objs[0]
    ns, name = base.key(host)
    before = get(store, "BareMetalHost", name, ns)
    merged = objects.merge_patch(before, host) if before else host
    validate(merged, before)
    changed = False
    for obj in objs[1:]:
        k = kinds.of(obj)
        obj = copy.deepcopy(obj)
        if k.kind == "Secret":
            from ansible_collections.baremetal.capi.plugins.module_utils.store import common

            common.merge_string_data(obj)
        c = objects.apply(store, obj, k, check=check)[0]
        changed = changed or c
    c, _before, after, _method = objects.apply(store, host, kinds.of(host), check=check)
    return {"changed": changed or c, "before": before, "after": after}


def remove_hardware_data(store, name: str, ns: str, check: bool = False) -> bool:
    if get(store, "HardwareData", name, ns) is None:
        return False
    if not check:
        store.delete("HardwareData", name, ns)
    return True


def reconcile(
    store,
    driver,
    keys: list[tuple[str, str]],
    *,
    delete: bool = False,
    wait: bool = False,
    wait_state: str | None = None,
    timeout: float | None = None,
    workers: int = 8,
    progress=None,
) -> list[runner.Result]:
    """Run the driver over many hosts at once; a host whose error is new in this run fails with it."""
    errors = base.NewErrors()
    for ns, name in keys:
        errors.start((ns, name), (get(store, "BareMetalHost", name, ns) or {}).get("status"))

    def step(k):
        out = driver.delete(store, k) if delete else driver.reconcile(store, k)
        info = out.data.get("host") or {}
        if errors.is_new(k, info) and not delete:
            raise HostFailed(f"{info['errorType']}: {info['errorMessage']}", obj=f"BareMetalHost {k[0]}/{k[1]}")
        if wait_state and not delete:
            out.done = info.get("state") == wait_state and not info.get("errorType")
            if out.done:
                out.requeue_after = None
            elif out.requeue_after is None:
                out.requeue_after = getattr(driver, "poll", 2.0)
        return out

    return runner.run(
        keys,
        step,
        key=lambda k: f"{k[0]}/{k[1]}",
        workers=workers,
        wait=wait,
        timeout=timeout,
        poll=getattr(driver, "poll", 2.0),
        progress=progress,
    )


class HostFailed(CapiError):
    """The host driver reported an error for this host during this run (status.errorMessage)."""
