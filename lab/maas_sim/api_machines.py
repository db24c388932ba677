"""MachinesHandler and MachineHandler (src/maasserver/api/machines.py, nodes.py).

Each action follows the MAAS code path it is named after, with MAAS's checks in
MAAS's order and MAAS's messages; the hardware side (power, curtin, cloud-init)
is the simulator's timed state machine.
"""

from __future__ import annotations

import base64
import binascii
import re

from lab.maas_sim import constraints, model, render
from lab.maas_sim.api import Ctx, handler
from lab.maas_sim.forms import (
    ApiError,
    BadRequest,
    Forbidden,
    NodesNotAvailable,
    NodeStateViolation,
    NotFound,
    ValidationError,
    int_param,
    size_param,
    string_bool,
)
from lab.maas_sim.model import Machine, Store

machines = handler("MachinesHandler", "machines/", "Manage the collection of all the machines in the MAAS.")
machine_h = handler("MachineHandler", "machines/{system_id}/", "Manage an individual machine.")


def get_machine(store: Store, system_id: str) -> Machine:
    m = store.machines.get(system_id)
    if m is None:
        raise NotFound("No Machine matches the given query.")
    return m


def transition(store: Store, m: Machine, target: int, message: str = "") -> None:
    """Node.clean_status: a status change MAAS's FSM does not allow is a 409."""
    if target != m.status and target not in model.TRANSITIONS.get(m.status, ()):
        raise NodeStateViolation(f"Invalid transition: {model.STATUS_NAMES[m.status]} -> {model.STATUS_NAMES[target]}.")
    m.pending = None
    store.set_status(m, target, message)


def power_target(m: Machine) -> str:
    return m.power_pending[0] if m.power_pending else m.power_state


def _check_edit(ctx: Ctx, m: Machine) -> None:
    # NodePermission.edit: the owner or an admin; anyone may take an unowned machine.
    if m.owner not in (None, ctx.user["username"]) and not ctx.user["is_superuser"]:
        raise Forbidden("You do not have permission to modify this machine.")


def _check_admin(ctx: Ctx) -> None:
    if not ctx.user["is_superuser"]:
        raise Forbidden("This method is reserved for admin users.")


def acquire(ctx: Ctx, m: Machine, agent_name: str = "") -> None:
    transition(ctx.store, m, model.ALLOCATED)
    m.owner = ctx.user["username"]
    m.agent_name = agent_name


def _rendered(ctx: Ctx, m: Machine) -> dict:
    return render.machine(ctx.store, m)


# -- the collection ----------------------------------------------------------


@machines.action("GET")
def read_machines(ctx: Ctx):
    """List machines visible to the user, optionally filtered by criteria."""
    c = constraints.clean(ctx.store, ctx.query, constraints.READ_FIELDS)
    return [_rendered(ctx, m) for m in ctx.store.machines.values() if constraints.matches(ctx.store, m, c)]


@machines.action("POST", "allocate")
def allocate(ctx: Ctx):
    """Allocate an available machine for deployment."""
    c = constraints.clean(ctx.store, ctx.data, constraints.ACQUIRE_FIELDS)
    verbose = string_bool(ctx.data, "verbose")
    dry_run = string_bool(ctx.data, "dry_run")
    agent_name = ctx.data.get("agent_name", "")
    for key in ("bridge_all", "bridge_stp", "install_rackd", "install_kvm", "ephemeral_deploy"):
        string_bool(ctx.data, key)
    input_constraints = [(k, v) for k, v in ctx.data.lists() if k != "op"]
    # get_available_machines_for_acquisition, ordered by AcquireNodeForm's cost.
    available = [m for m in ctx.store.machines.values() if m.status == model.READY and m.owner is None]
    candidates = [m for m in available if constraints.matches(ctx.store, m, c)]
    candidates.sort(key=lambda m: m.cpu_count + m.memory / 1024.0)
    if not candidates:
        described = constraints.describe(c, constraints.ACQUIRE_FIELDS)
        if described == "":
            raise NodesNotAvailable("No machine available.")
        raise NodesNotAvailable(
            f'No available machine matches constraints: {input_constraints} (resolved to "{described}")'
        )
    m = candidates[0]
    if not dry_run:
        acquire(ctx, m, agent_name)
    out = _rendered(ctx, m)
    out["constraints_by_type"] = {"verbose_storage": {}, "verbose_interfaces": {}} if verbose else {}
    return out


@machines.action("POST", "release")
def release_many(ctx: Ctx):
    """Release multiple machines."""
    ids = set(ctx.data.getlist("machines"))
    missing = sorted(ids - set(ctx.store.machines))
    if missing:
        raise ValidationError("Unknown machine(s): {}.".format(", ".join(missing)))
    failed, released = [], []
    for system_id in sorted(ids):
        m = ctx.store.machines[system_id]
        if m.status == model.READY:
            continue
        if m.status in model.RELEASABLE:
            release_or_erase(ctx.store, m, erase=False)
            released.append(system_id)
        else:
            failed.append(f"{system_id} ('{model.STATUS_NAMES[m.status]}')")
    if failed:
        raise NodeStateViolation("Machine(s) cannot be released in their current state: {}.".format(", ".join(failed)))
    return released


@machines.action("GET", "list_allocated")
def list_allocated(ctx: Ctx):
    """List machines that were allocated to the User."""
    ids = set(ctx.query.getlist("id"))
    return [
        _rendered(ctx, m)
        for m in ctx.store.machines.values()
        if m.owner == ctx.user["username"] and m.status == model.ALLOCATED and (not ids or m.system_id in ids)
    ]


# -- one machine -------------------------------------------------------------


@machine_h.action("GET")
def read_machine(ctx: Ctx, system_id: str):
    """Read a machine."""
    return _rendered(ctx, get_machine(ctx.store, system_id))


HOSTNAME_RE = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$", re.I)


@machine_h.action("PUT")
def update_machine(ctx: Ctx, system_id: str):
    """Update a machine (hostname, description, domain, zone, pool, swap_size, cpu_count, memory, ...)."""
    m = get_machine(ctx.store, system_id)
    _check_admin(ctx)
    d, store, errors = ctx.data, ctx.store, {}
    if "hostname" in d:
        name = d.get("hostname")
        if not HOSTNAME_RE.match(name or ""):
            errors["hostname"] = [f"Invalid hostname: {name!r}"]
        elif any(o.hostname == name and o is not m for o in store.machines.values()):
            errors["hostname"] = [f"Node with hostname '{name}' already exists."]
    choice_error = ["Select a valid choice. That choice is not one of the available choices."]
    if "zone" in d and d.get("zone") not in store.zones:
        errors["zone"] = choice_error
    if "pool" in d and store.pool_by_name(d.get("pool")) is None:
        errors["pool"] = choice_error
    domain = None
    if "domain" in d:
        value = d.get("domain")
        domain = store.domains.get(int(value)) if value.isdigit() else store.domain_by_name(value)
        if domain is None:
            errors["domain"] = choice_error
    if errors:
        raise ValidationError(errors)
    swap = size_param(d.get("swap_size"), "swap_size") if d.get("swap_size") not in (None, "") else None
    memory = size_param(d.get("memory"), "memory") if d.get("memory") not in (None, "") else None
    cpu_count = int_param(d, "cpu_count")
    if "hostname" in d:
        m.hostname = d.get("hostname")
    if "description" in d:
        m.description = d.get("description")
    if "zone" in d:
        m.zone = d.get("zone")
    if "pool" in d:
        m.pool = d.get("pool")
    if domain is not None:
        m.domain = domain["id"]
    for key in ("architecture", "min_hwe_kernel", "power_type"):
        if key in d:
            setattr(m, key, d.get(key))
    if "swap_size" in d:
        m.swap_size = swap
    if memory is not None:
        # MAAS stores memory in MiB; a bare number already is MiB.
        m.memory = memory if d.get("memory").strip().isdigit() else memory // (1024 * 1024)
    if cpu_count is not None:
        m.cpu_count = cpu_count
    return _rendered(ctx, m)


@machine_h.action("DELETE")
def delete_machine(ctx: Ctx, system_id: str):
    """Delete a machine (allowed in any state)."""
    get_machine(ctx.store, system_id)
    _check_admin(ctx)
    del ctx.store.machines[system_id]
    return None


def start(ctx: Ctx, m: Machine, user_data: str | None) -> None:
    """Node.start: an Allocated machine starts deploying; any other just powers on."""
    if user_data is not None:
        # MachineHandler.power_on: b64decode(user_data), stored as the bytes it gives. Python's decoder drops
        # characters outside the alphabet, so text that is not base64 is stored as whatever it decodes to;
        # a length it cannot decode is an unhandled error, which MAAS answers 500 with the exception's text.
        try:
            raw = base64.b64decode(user_data)
        except binascii.Error as exc:
            raise ApiError(str(exc), 500) from None
        m.user_data = base64.b64encode(raw).decode()
    if m.status == model.ALLOCATED:
        transition(ctx.store, m, model.DEPLOYING, "Deploying")
        ctx.store.schedule(m, model.DEPLOYED, "deploy")
    ctx.store.set_power(m, "on")


@machine_h.action("POST", "deploy")
def deploy(ctx: Ctx, system_id: str):
    """Deploy an operating system to a machine (user_data, osystem, distro_series, ephemeral_deploy, ...)."""
    d = ctx.data
    m = get_machine(ctx.store, system_id)
    _check_edit(ctx, m)
    ephemeral = string_bool(d, "ephemeral_deploy")  # get_allocation_options
    for key in ("bridge_all", "bridge_stp", "install_rackd", "enable_hw_sync"):
        string_bool(d, key)
    if (string_bool(d, "install_kvm") or string_bool(d, "register_vmhost")) and ephemeral:
        raise BadRequest("A machine can not be a VM host if it is deployed to memory.")
    if m.status == model.READY:
        if m.owner is not None and m.owner != ctx.user["username"]:
            raise NodeStateViolation("Can't allocate a machine belonging to another user.")
        acquire(ctx, m, d.get("agent_name", ""))
    if model.DEPLOYING not in model.TRANSITIONS[m.status]:
        raise NodeStateViolation(f"Can't deploy a machine that is in the '{model.STATUS_NAMES[m.status]}' state")
    series, osystem = d.get("distro_series"), d.get("osystem")
    if series and "/" in series:
        osystem, series = series.split("/", 1)
    if osystem:
        m.osystem = osystem
    elif not m.osystem:
        m.osystem = ctx.store.config["default_osystem"]
    if series:
        m.distro_series = series
    elif not m.distro_series:
        m.distro_series = ctx.store.config["default_distro_series"]
    if d.get("hwe_kernel"):
        m.hwe_kernel = d.get("hwe_kernel")
    m.ephemeral_deploy = ephemeral
    return power_on(ctx, system_id)


@machine_h.action("POST", "power_on")
def power_on(ctx: Ctx, system_id: str):
    """Power on a machine (deploys it when Allocated)."""
    m = get_machine(ctx.store, system_id)
    _check_edit(ctx, m)
    if m.owner is None:
        raise NodeStateViolation("Can't start node: it hasn't been allocated.")
    start(ctx, m, ctx.data.get("user_data"))
    return _rendered(ctx, m)


@machine_h.action("POST", "power_off")
def power_off(ctx: Ctx, system_id: str):
    """Power off a machine (stop_mode soft or hard)."""
    m = get_machine(ctx.store, system_id)
    _check_edit(ctx, m)
    ctx.store.set_power(m, "off")
    return _rendered(ctx, m)


@machine_h.action("GET", "query_power_state")
def query_power_state(ctx: Ctx, system_id: str):
    """Query the machine's BMC for its power state."""
    return {"state": get_machine(ctx.store, system_id).power_state}


def release_or_erase(store: Store, m: Machine, erase: bool, quick: bool = False) -> None:
    m.pending = None
    if erase or store.config["enable_disk_erasing_on_release"]:
        transition(store, m, model.DISK_ERASING, "Erasing disk")
        store.set_power(m, "on")
        store.schedule(m, model.READY, "erase", power_after="off")
    elif power_target(m) == "off":
        # Node.release: a machine that is already off goes straight to Ready.
        transition(store, m, model.RELEASING)
        store.release_to_ready(m)
    else:
        transition(store, m, model.RELEASING, "Releasing")
        store.set_power(m, "off")
        store.schedule(m, model.READY, "release", power_after="off")


@machine_h.action("POST", "release")
def release(ctx: Ctx, system_id: str):
    """Release a machine (comment, erase, secure_erase, quick_erase, force)."""
    d = ctx.data
    erase = string_bool(d, "erase")
    secure, quick = string_bool(d, "secure_erase", None), string_bool(d, "quick_erase", None)
    string_bool(d, "force", None)
    m = get_machine(ctx.store, system_id)
    _check_edit(ctx, m)
    if m.status in (model.RELEASING, model.READY):
        pass  # already there: a retried release succeeds
    elif m.status in model.RELEASABLE:
        release_or_erase(ctx.store, m, erase or bool(secure) or bool(quick), quick=bool(quick))
    else:
        raise NodeStateViolation(f"Machine cannot be released in its current state ('{model.STATUS_NAMES[m.status]}').")
    return _rendered(ctx, m)


@machine_h.action("POST", "commission")
def commission(ctx: Ctx, system_id: str):
    """Begin commissioning; the machine is Ready when it ends."""
    m = get_machine(ctx.store, system_id)
    _check_admin(ctx)
    transition(ctx.store, m, model.COMMISSIONING, "Commissioning")
    ctx.store.set_power(m, "on")
    ctx.store.schedule(m, model.READY, "commission", power_after="off")
    return _rendered(ctx, m)


@machine_h.action("POST", "abort")
def abort(ctx: Ctx, system_id: str):
    """Abort a machine's current operation."""
    m = get_machine(ctx.store, system_id)
    _check_edit(ctx, m)
    back = {model.DEPLOYING: model.ALLOCATED, model.COMMISSIONING: model.NEW,
            model.DISK_ERASING: model.FAILED_DISK_ERASING, model.TESTING: model.READY}  # fmt: skip
    if m.status not in back:
        raise NodeStateViolation(f"Cannot abort in current state {model.STATUS_NAMES[m.status]}.")
    transition(ctx.store, m, back[m.status])
    ctx.store.set_power(m, "off")
    return _rendered(ctx, m)


@machine_h.action("POST", "mark_broken")
def mark_broken(ctx: Ctx, system_id: str):
    """Mark a machine as Broken."""
    m = get_machine(ctx.store, system_id)
    _check_edit(ctx, m)
    transition(ctx.store, m, model.BROKEN, ctx.data.get("comment", "") or ctx.data.get("error_description", ""))
    mark_broken_release(ctx.store, m)
    return _rendered(ctx, m)


def mark_broken_release(store: Store, m: Machine) -> None:
    """Node.mark_broken: a releasable machine is released on the way (powered off, its deployment and owner
    gone) and stays Broken, ownerless, until an admin marks it fixed."""
    m.owner = None
    m.owner_data = {}
    m.agent_name = ""
    m.user_data = None
    m.ephemeral_deploy = False
    store.set_power(m, "off")


@machine_h.action("POST", "mark_fixed")
def mark_fixed(ctx: Ctx, system_id: str):
    """Mark a broken machine as fixed (Ready)."""
    m = get_machine(ctx.store, system_id)
    _check_admin(ctx)
    if m.status != model.BROKEN:
        raise NodeStateViolation("Can't mark a non-broken node as 'Ready'.")
    transition(ctx.store, m, model.READY)
    ctx.store.release_to_ready(m)
    return _rendered(ctx, m)


@machine_h.action("POST", "set_owner_data")
def set_owner_data(ctx: Ctx, system_id: str):
    """Set key=value owner data; an empty value removes the key."""
    m = get_machine(ctx.store, system_id)
    _check_edit(ctx, m)
    for key, values in ctx.data.lists():
        if key == "op":
            continue
        if values[-1] == "":
            m.owner_data.pop(key, None)
        else:
            m.owner_data[key] = values[-1]
    return _rendered(ctx, m)
