# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The ``ironic`` host driver: the collection moves BareMetalHosts through Ironic as baremetal-operator does.

Behaviour: shared/reference/bmo-ironic.md.  This file holds the driver (the
connection per thread, one reconcile step, status bookkeeping and Register,
§2.1); hosts/ironic_actions.py holds the state handlers (§2.2, §5, §6).

Options (``get_driver("ironic", options)``):

``cloud``            a clouds.yaml entry; falls back to ``OS_CLOUD`` (with
                     ``OS_CLIENT_CONFIG_FILE``: what AWX's OpenStack credential sets).
``ironic_url``       an Ironic endpoint used with auth_type none, instead of a cloud.
``poll``             seconds between steps while Ironic works (default 2; BMO uses 3-10).
``boot_iso``         deploy ordinary images with Ironic's ``ramdisk`` deploy interface
                     booting this ISO, config drive included: for Ironics without an
                     agent ramdisk (the lab).  Not a BMO behaviour.
``deploy_kernel``, ``deploy_ramdisk``, ``deploy_iso``
                     BMO's DEPLOY_KERNEL_URL / DEPLOY_RAMDISK_URL / DEPLOY_ISO_URL.
"""

from __future__ import annotations

import datetime
import os
import threading

from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid, NotFound
from ansible_collections.baremetal.capi.plugins.module_utils.hosts import base, bmc
from ansible_collections.baremetal.capi.plugins.module_utils.hosts import ironic_configdrive as cd
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta, names
from ansible_collections.baremetal.capi.plugins.module_utils.runner import Step

# A step goes on at once after an action that needs no waiting, up to this many times.
_MAX_ACTIONS_PER_STEP = 8
NOW = "now"  # a handler result: go on with the next action in this step


def node_name(namespace: str, name: str) -> str:
    return f"{namespace}~{name}"  # BMO ironic.go:1836


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Ctx:
    """One host during one step: the object, the status being built, the node."""

    def __init__(self, driver, store, host: dict, conn):
        self.driver, self.store, self.conn = driver, store, conn
        self.host = host
        self.status = meta.deepcopy(host.get("status") or {})
        self.status.setdefault("provisioning", {})
        self.node = None
        self.messages: list[str] = []
        self.changed = False

    # -- reading -------------------------------------------------------------
    @property
    def spec(self) -> dict:
        return self.host.get("spec") or {}

    @property
    def ns(self) -> str:
        return base.key(self.host)[0]

    @property
    def name(self) -> str:
        return base.key(self.host)[1]

    @property
    def state(self) -> str:
        return self.status["provisioning"].get("state") or ""

    def view(self) -> dict:
        """The host as it will be once the status is saved."""
        return {**self.host, "status": self.status}

    # -- writing status ------------------------------------------------------
    def set_state(self, state: str, why: str = "") -> str:
        old = self.state
        if state != old:
            self.status["provisioning"]["state"] = state
            self.say(f"{old or 'new'} -> {state}" + (f" ({why})" if why else ""))
        return NOW

    def say(self, msg: str) -> None:
        self.messages.append(msg)

    def set_error(self, error_type: str, message: str) -> float:
        """BMO setErrorMessage: type, message, count+1; the step backs off."""
        if self.status.get("errorType") != error_type or self.status.get("errorMessage") != message:
            self.status["errorCount"] = int(self.status.get("errorCount") or 0) + 1
        self.status["errorType"] = error_type
        self.status["errorMessage"] = message
        self.status["operationalStatus"] = names.BMH_OPERATIONAL_ERROR
        self.say(f"{error_type}: {message}")
        return self.driver.backoff(self.status["errorCount"])

    def clear_error(self, only: tuple = ()) -> None:
        if self.status.get("errorType") and (not only or self.status["errorType"] in only):
            for k in ("errorType", "errorMessage"):
                self.status.pop(k, None)
            self.status["errorCount"] = 0
            self.status["operationalStatus"] = names.BMH_OPERATIONAL_OK

    def save(self) -> None:
        if self.host is None:  # deleted
            return
        old = self.host.get("status") or {}
        if self.status == old:
            return
        self.status["lastUpdated"] = _now()
        self.host = self.store.update_status({**self.host, "status": self.status})
        self.status = meta.deepcopy(self.host.get("status") or {})
        self.status.setdefault("provisioning", {})
        self.changed = True

    def update_meta(self, mutate) -> None:
        """Write metadata (annotations, finalizers) through store.update, keeping the status being built."""
        obj = meta.deepcopy(self.host)
        if not mutate(obj):
            return
        status = self.status
        self.host = self.store.update(obj)
        self.status = status
        self.changed = True
        if meta.is_deleting(obj) and not meta.finalizers(obj):
            self.host = None  # the last finalizer went: the object is gone

    # -- Ironic ------------------------------------------------------------------
    def ironic_error(self, node=None) -> str:
        """last_error, or the newest ERROR event of the node's history (last_error is sometimes empty)."""
        node = node or self.node
        if node is None:
            return ""
        if node.last_error:
            return node.last_error
        try:
            resp = self.conn.baremetal.get(f"/nodes/{node.id}/history", microversion="1.78")
            events = resp.json().get("history") or []
        except Exception:  # an old Ironic without history: nothing more to say
            return ""
        errors = [e for e in events if (e.get("severity") or "").upper() == "ERROR"]
        return (errors[-1].get("event") or "") if errors else ""


class IronicDriver:
    name = "ironic"

    def __init__(
        self,
        cloud: str | None = None,
        ironic_url: str | None = None,
        poll: float = 2.0,
        boot_iso: str | None = None,
        deploy_kernel: str | None = None,
        deploy_ramdisk: str | None = None,
        deploy_iso: str | None = None,
        **unknown,
    ):
        if unknown:
            raise Invalid(f"unknown ironic driver option(s) {', '.join(sorted(unknown))}", field="host_driver_options")
        self.cloud = cloud or (None if ironic_url else os.environ.get("OS_CLOUD"))
        self.ironic_url = ironic_url
        if not self.cloud and not self.ironic_url:
            raise Invalid(
                "the ironic host driver needs a cloud (or OS_CLOUD) or an ironic_url", field="host_driver_options"
            )
        self.poll = float(poll)
        self.boot_iso = boot_iso
        self.deploy_images = {
            "deploy_kernel": deploy_kernel,
            "deploy_ramdisk": deploy_ramdisk,
            "deploy_iso": deploy_iso,
        }
        self._local = threading.local()
        self._conns: list = []
        self._lock = threading.Lock()

    # -- connections: openstacksdk connections are not thread-safe; one per thread --
    def conn(self):
        c = getattr(self._local, "conn", None)
        if c is None:
            import openstack

            # 0 retries: a 409 is BMO's "busy, requeue", not something to sleep on inside a step
            kwargs = {"baremetal_status_code_retries": 0}
            if self.ironic_url:
                c = openstack.connect(auth_type="none", baremetal_endpoint_override=self.ironic_url, **kwargs)
            else:
                c = openstack.connect(cloud=self.cloud, **kwargs)
            self._local.conn = c
            with self._lock:
                self._conns.append(c)
        return c

    def close(self) -> None:
        with self._lock:
            conns, self._conns = self._conns, []
        for c in conns:
            try:
                c.close()
            except Exception:  # closing is best effort
                pass
        self._local = threading.local()

    def backoff(self, count: int) -> float:
        # BMO: about 2^errorCount minutes; within one module run, seconds scaled from poll
        return min(self.poll * 2 ** max(count, 1), 120.0)

    # -- the contract ------------------------------------------------------------
    def _read(self, store, bmh):
        ns, name = base.key(bmh)
        try:
            return store.get(base.KIND, name, ns)
        except NotFound:
            return None

    def reconcile(self, store, bmh) -> Step:
        from openstack import exceptions as osexc

        from ansible_collections.baremetal.capi.plugins.module_utils.hosts import ironic_actions as act

        host = self._read(store, bmh)
        if host is None:
            return Step(done=True, message="host is gone", data={"host": base.summary(None)})
        if base.paused(host):
            # BMO: no Ironic calls, no status write
            return Step(
                done=False, message="host is paused", requeue_after=self.poll, data={"host": base.summary(host)}
            )
        ctx = Ctx(self, store, host, self.conn())
        after: float | str | None = NOW
        try:
            for _ in range(_MAX_ACTIONS_PER_STEP):
                after = act.handle(ctx)
                if after != NOW:
                    break
            ctx.save()
        except osexc.ConflictException:
            ctx.save()  # keep what was learnt before Ironic said busy
            after = 3.0
            ctx.say("Ironic node is busy (409), retrying")
        except osexc.NotFoundException as exc:
            # the node went away under us (deleted outside): the next Register finds or recreates it
            ctx.save()
            after = self.poll
            ctx.say(f"Ironic node not found, registering again: {exc.details or exc}")
        if ctx.host is None:
            return Step(done=True, changed=True, message="host deleted", data={"host": base.summary(None)})
        view = ctx.view()
        done = not meta.is_deleting(view) and base.reached(view)
        msg = "; ".join(ctx.messages) or f"host is {ctx.state or 'new'}"
        wait = self.poll if after in (None, NOW) else float(after)
        return Step(
            done=done,
            changed=ctx.changed,
            message=msg,
            requeue_after=None if done else wait,
            data={"host": base.summary(view)},
        )

    def delete(self, store, bmh) -> Step:
        host = self._read(store, bmh)
        if host is None:
            return Step(done=True, message="host is gone", data={"host": base.summary(None)})
        changed = False
        if not meta.is_deleting(host):
            ns, name = base.key(host)
            if store.delete(base.KIND, name, ns) is None:
                return Step(done=True, changed=True, message="host deleted", data={"host": base.summary(None)})
            changed = True
        step = self.reconcile(store, host)
        step.changed = step.changed or changed
        if not step.done:
            step.done = self._read(store, host) is None
        return step

    def hardware(self, store, bmh) -> dict | None:
        host = self._read(store, bmh)
        return base.hardware_of(store, host) if host else None


# -- Register (bmo-ironic.md §2.1) ------------------------------------------------


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
    from openstack import exceptions as osexc

    bm = ctx.conn.baremetal
    for ident in (ctx.status["provisioning"].get("ID"), node_name(ctx.ns, ctx.name)):
        if not ident:
            continue
        try:
            return bm.get_node(ident)
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
    from ansible_collections.baremetal.capi.plugins.module_utils.hosts import ironic_actions as act

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
    bm = ctx.conn.baremetal
    driver_info = {**access.driver_info, **access.credentials(user, password)}
    creds = {
        "credentials": {"name": bmc_spec.get("credentialsName"), "namespace": ctx.ns},
        "credentialsVersion": secret_rv,
    }
    if node is None:
        attrs = {
            "name": node_name(ctx.ns, ctx.name),
            "driver": access.driver,
            "driver_info": driver_info,
            **access.interfaces,
        }
        attrs["properties"] = {"capabilities": act.boot_mode_capability(ctx.spec.get("bootMode"))}
        if ctx.spec.get("architecture"):
            attrs["properties"]["cpu_arch"] = ctx.spec["architecture"]
        if not inspection_disabled(ctx.host) and not access.fake:
            fast = ctx.spec.get("inspectionMode") == "fast"
            attrs["inspect_interface"] = access.fast_inspect_interface if fast else "agent"
        node = bm.create_node(**attrs)
        ctx.status["provisioning"]["ID"] = node.id
        if bmc_spec.get("credentialsName"):
            ctx.status["triedCredentials"] = creds
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
        ctx.status["triedCredentials"] = creds
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
        mine = {p.address.lower() for p in bm.ports(node_id=node.id)}
        if mac not in mine:
            other = list(bm.ports(address=mac, details=True))
            if other:
                return ctx.set_error(names.BMH_ERROR_REGISTRATION, f"MAC address {mac} conflicts with another node")
            bm.create_port(node_uuid=node.id, address=mac, is_pxe_enabled=True)
            ctx.say(f"created port {mac}")
    if state == "enroll":
        retrying = ctx.status.get("errorType") == names.BMH_ERROR_REGISTRATION
        changed_creds = (ctx.status.get("goodCredentials") or {}).get("credentialsVersion") != secret_rv
        if node.last_error and not retrying and not changed_creds:
            return ctx.set_error(names.BMH_ERROR_REGISTRATION, node.last_error)
        act.before_state_change(ctx)
        bm.set_node_provision_state(node, "manage")
        ctx.say("manage")
        return ctx.driver.poll
    if state == "verifying":
        return ctx.driver.poll
    if state not in ("cleaning", "clean wait", "deploying", "wait call-back", "inspecting", "inspect wait"):
        act.configure_node(ctx)
    if bmc_spec.get("credentialsName"):
        ctx.status["goodCredentials"] = creds
    ctx.clear_error(only=(names.BMH_ERROR_REGISTRATION,))
    return None
