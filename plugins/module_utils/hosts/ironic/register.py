# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Register (baremetal-operator pkg/provisioner/ironic/register.go Register): find or create the Ironic node, keep
driver_info and ports right, manage it.

Runs on every step of a host in every state but "", unmanaged and deleting, as BMO's does.
"""

from __future__ import annotations

import ansible_collections.baremetal.capi.plugins.module_utils.hosts.ironic.configdrive as cd
import ansible_collections.baremetal.capi.plugins.module_utils.hosts.ironic.node as ironic_node
from ansible_collections.baremetal.capi.plugins.module_utils import imports
from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.hosts import bmc
from ansible_collections.baremetal.capi.plugins.module_utils.hosts.ironic.context import NOW, Ctx, node_name
from ansible_collections.baremetal.capi.plugins.module_utils.model import names


def credentials(ctx: Ctx, access: bmc.Access) -> tuple[str, str, str | None]:
    """(username, password, secret resourceVersion) from spec.bmc.credentialsName, whitespace-trimmed."""
    if access.fake:
        return "", "", None
    ref = (ctx.spec.get("bmc") or {}).get("credentialsName")
    if not ref:
        raise Invalid("spec.bmc.credentialsName is required", field="spec.bmc.credentialsName")
    user = cd.secret_value(ctx.store, {"name": ref}, ctx.ns, ("username",), "spec.bmc.credentialsName")
    password = cd.secret_value(ctx.store, {"name": ref}, ctx.ns, ("password",), "spec.bmc.credentialsName")
    if not (user or "").strip() or not (password or "").strip():
        missing = "username" if not (user or "").strip() else "password"
        raise Invalid(f"secret {ref} has no {missing}", field="spec.bmc.credentialsName")
    rv = ctx.store.get("Secret", ref, ctx.ns)["metadata"].get("resourceVersion")
    return user.strip(), password.strip(), rv


def find_node(ctx: Ctx):
    osexc = imports.load("openstack.exceptions")

    if ctx.node_read is not None:
        return ctx.node_read
    bm = ctx.conn.baremetal
    for ident in (ctx.status["provisioning"].get("ID"), node_name(ctx.ns, ctx.name)):
        if not ident:
            continue
        try:
            ctx.node_read = bm.get_node(ident)
            return ctx.node_read
        except osexc.NotFoundException:
            continue
    mac = ctx.spec.get("bootMACAddress")
    if mac:
        for port in bm.ports(address=mac.lower(), details=True):
            node = bm.get_node(port.node_id)
            if node.name:
                raise Invalid(
                    f"MAC address {mac} conflicts with existing node {node.name}", field="spec.bootMACAddress"
                )
            return node
    return None


def inspection_disabled(host: dict) -> bool:
    annotations = (host.get("metadata") or {}).get("annotations") or {}
    return (host.get("spec") or {}).get("inspectionMode") == "disabled" or annotations.get(
        names.INSPECT_ANNOTATION
    ) == "disabled"


def register(ctx: Ctx):
    """Find or create the node, keep driver_info and ports right, manage it.  Returns None when registered."""
    bmc_spec = ctx.spec.get("bmc") or {}
    try:
        access = bmc.parse(bmc_spec.get("address"), bool(bmc_spec.get("disableCertificateVerification")))
        user, password, secret_rv = credentials(ctx, access)
        if access.needs_mac and not ctx.spec.get("bootMACAddress"):
            raise Invalid("bootMACAddress is required for this BMC type", field="spec.bootMACAddress")
        if ctx.spec.get("bootMode") == "UEFISecureBoot" and not access.secure_boot:
            raise Invalid(f"BMC driver {access.bmc_type} does not support secure boot", field="spec.bootMode")
        node = find_node(ctx)
    except Invalid as exc:
        return ctx.set_error(names.BMH_ERROR_REGISTRATION, str(exc))
    osexc = imports.load("openstack.exceptions")

    bm = ctx.conn.baremetal
    driver_info = {**access.driver_info, **access.credentials(user, password)}
    creds = {
        "credentials": {"name": bmc_spec.get("credentialsName"), "namespace": ctx.ns},
        "credentialsVersion": secret_rv,
    }
    # BMO's credsChanged: the secret differs from the one last tried (not the last good one - a host that never
    # registered would otherwise retry "manage" forever without saying why); tried from now on
    creds_changed = bool(bmc_spec.get("credentialsName")) and ctx.status.get("triedCredentials") != creds
    if creds_changed:
        ctx.status["triedCredentials"] = creds
    if node is None:
        attrs = {
            "name": node_name(ctx.ns, ctx.name),
            "driver": access.driver,
            "driver_info": driver_info,
            **access.interfaces,
        }
        attrs["properties"] = {"capabilities": ironic_node.boot_mode_capability(ctx.spec.get("bootMode"))}
        if ctx.spec.get("architecture"):
            attrs["properties"]["cpu_arch"] = ctx.spec["architecture"]
        if not inspection_disabled(ctx.host) and not access.fake:
            fast = ctx.spec.get("inspectionMode") == "fast"
            attrs["inspect_interface"] = access.fast_inspect_interface if fast else "agent"
        try:
            node = bm.create_node(**attrs)
        except osexc.BadRequestException as exc:  # e.g. an interface this Ironic does not enable
            return ctx.set_error(
                names.BMH_ERROR_REGISTRATION, f"failed to create the Ironic node: {exc.details or exc}"
            )
        ctx.status["provisioning"]["ID"] = node.id
        ctx.say(f"registered Ironic node {node.name} ({node.id})")
        ctx.node = node
        return NOW
    ctx.node = node
    ctx.status["provisioning"]["ID"] = node.id
    patch = []
    if node.name != node_name(ctx.ns, ctx.name):
        patch.append({"op": "add", "path": "/name", "value": node_name(ctx.ns, ctx.name)})
    good = ctx.status.get("goodCredentials") or {}
    address_key = access.address_key
    if not access.fake and (
        good.get("credentialsVersion") != secret_rv
        or good.get("credentials", {}).get("name") != bmc_spec.get("credentialsName")
        or (node.driver_info or {}).get(address_key) != driver_info.get(address_key)
        or any((node.driver_info or {}).get(k) != v for k, v in access.driver_info.items())
    ):
        patch.append({"op": "add", "path": "/driver_info", "value": {**(node.driver_info or {}), **driver_info}})
    if patch:
        ctx.node = node = bm.patch_node(node, patch)
        ctx.say("updated the Ironic node's name/driver_info")
    state = node.provision_state
    # ports: only in stable states (BMO register.go:174-188)
    mac = (ctx.spec.get("bootMACAddress") or "").lower()
    if mac and state in (
        "enroll",
        "manageable",
        "available",
        "active",
        "deploy failed",
        "clean failed",
        "inspect failed",
        "error",
    ):
        # checked once per node and MAC in a driver's life (one task): a port does not come and go by itself, and
        # listing it on every step was a fifth of the task's Ironic calls
        if (node.id, mac) not in ctx.driver.ports_checked:
            mine = {p.address.lower() for p in bm.ports(node_id=node.id)}
            if mac not in mine:
                other = list(bm.ports(address=mac, details=True))
                if other:
                    return ctx.set_error(names.BMH_ERROR_REGISTRATION, f"MAC address {mac} conflicts with another node")
                bm.create_port(node_uuid=node.id, address=mac, is_pxe_enabled=True)
                ctx.say(f"created port {mac}")
            ctx.driver.ports_checked.add((node.id, mac))
    if state == "enroll":
        retrying = ctx.status.get("errorType") == names.BMH_ERROR_REGISTRATION
        if node.last_error and not retrying and not creds_changed:
            return ctx.set_error(names.BMH_ERROR_REGISTRATION, node.last_error)
        ironic_node.before_state_change(ctx)
        bm.set_node_provision_state(node, "manage")
        ctx.say("manage")
        return ctx.driver.poll
    if state == "verifying":
        return ctx.driver.poll
    if state not in ("cleaning", "clean wait", "deploying", "wait call-back", "inspecting", "inspect wait"):
        ironic_node.configure_node(ctx, access.virtual_media)
    if bmc_spec.get("credentialsName"):
        ctx.status["goodCredentials"] = creds
    ctx.clear_error(only=(names.BMH_ERROR_REGISTRATION,))
    return None
