"""LXD VM hosts: PodsHandler / PodHandler and their 3.x names VmHostsHandler / VmHostHandler
(src/maasserver/api/pods.py, forms/pods.py, models/bmc.py, vmhost.py).

An LXD host "exists" when the control API has declared it (``POST /MAAS/_sim/lxd-hosts``: address, cores,
memory MiB, storage bytes), as a real one exists when LXD answers at its address. Registering a VM host saves
it first and discovers it after (``_try_sync_and_save``): one nobody answers for is kept with nothing
discovered (0 resources, no capabilities); ``op=refresh`` discovers again and answers 503 when it fails.
``op=compose`` carves a VM out of the discovered resources (a machine of power type ``lxd``, commissioned,
then Ready); deleting the VM's machine decomposes it and gives the resources back; deleting the VM host
deletes its machines from MAAS, and with ``decompose=true`` its VMs on LXD too.
"""

from __future__ import annotations

import re

from lab.maas_sim import model, render
from lab.maas_sim.api import Ctx, handler
from lab.maas_sim.api_ipranges import in_ranges
from lab.maas_sim.api_machines import HOSTNAME_RE, _check_admin
from lab.maas_sim.forms import ApiError, NotFound, ValidationError, int_param
from lab.maas_sim.net import CIDR, NET

API = render.API
CAPABILITIES = ["composable", "dynamic_local_storage", "over_commit", "storage_pools"]
HANDLERS = [
    (handler("PodsHandler", "pods/", "Manage VM hosts."), handler("PodHandler", "pods/{id}/", "Manage a VM host.")),
    (handler("VmHostsHandler", "vm-hosts/", "Manage VM hosts."),
     handler("VmHostHandler", "vm-hosts/{id}/", "Manage a VM host.")),
]  # fmt: skip


class PodProblem(ApiError):
    """maasserver.exceptions.PodProblem: 503."""

    status = 503


POD_CONSOLE_LOGGING = "pod-console-logging"  # vmhost.ensure_pod_console_logging_tag: every VM host carries it
MACVLAN_MODES = ("bridge", "passthru", "private", "vepa")  # provisioningserver.enum.MACVLAN_MODE_CHOICES
CHOICE = "Select a valid choice. That choice is not one of the available choices."
_PETNAME = (("able", "brave", "calm", "eager", "fair", "glad", "keen", "neat", "proud", "sunny", "wise"),
            ("otter", "raptor", "heron", "lynx", "mole", "newt", "quail", "robin", "stoat", "wren"))  # fmt: skip


def used(store, pod: dict) -> dict:
    # get_vm_host_used_resources: the VMs MAAS knows on the host
    vms = [m for m in store.machines.values() if m.pod == pod["id"]]
    return {"cores": sum(m.cpu_count for m in vms), "memory": sum(m.memory for m in vms),
            "local_storage": sum(m.disk_bytes for m in vms)}  # fmt: skip


def render_pod(store, pod: dict) -> dict:
    """VmHostHandler's DISPLAYED_POD_FIELDS; ``available`` is total - used (the ratios only gate compose)."""
    total = {"cores": pod["cores"], "memory": pod["memory"], "local_storage": pod["storage"]}
    in_use = used(store, pod)
    available = {k: total[k] - in_use[k] for k in total}
    pools = []
    if pod.get("version"):  # storage pools are what discovery found
        pools = [{"id": "default", "name": "default", "type": "zfs", "path": "default",
                  "total": pod["storage"], "used": in_use["local_storage"],
                  "available": available["local_storage"], "default": True}]  # fmt: skip
    return {
        "id": pod["id"], "name": pod["name"], "tags": list(pod["tags"]), "type": pod.get("type", "lxd"),
        "architectures": list(pod.get("architectures", [])), "capabilities": list(pod.get("capabilities", [])),
        "total": total, "used": in_use, "available": available, "zone": render.zone(store.zones[pod["zone"]]),
        "cpu_over_commit_ratio": pod["cpu_over_commit_ratio"],
        "memory_over_commit_ratio": pod["memory_over_commit_ratio"], "storage_pools": pools,
        "pool": render.pool(store.pool_by_name(pod["pool"])),
        # the LXD host's own machine is not modelled: no host node
        "host": {"system_id": None, "__incomplete__": True},
        "default_macvlan_mode": pod.get("default_macvlan_mode"), "version": pod.get("version", ""),
        "resource_uri": f"{API}/vm-hosts/{pod['id']}/",
    }  # fmt: skip


def _pod(ctx: Ctx, id: str) -> dict:
    pod = ctx.store.pods.get(int(id)) if id.isdigit() else None
    if pod is None or "address" not in pod:
        raise NotFound("No Pod matches the given query.")
    return pod


def _list(ctx: Ctx):
    """List VM hosts."""
    return [render_pod(ctx.store, p) for p in sorted(ctx.store.pods.values(), key=lambda p: p["id"]) if "address" in p]


def _address_key(address: str) -> str:
    # vmhost._clean_power_address: LXD's default port is 8443; "https://10.0.0.1:8443", "10.0.0.1:8443" and
    # "10.0.0.1" are one host
    text = re.sub(r"^https?://", "", address.strip()).rstrip("/")
    return text if ":" in text else f"{text}:8443"


def _form(ctx: Ctx, pod: dict | None) -> dict:
    """PodForm: the fields given, cleaned; a ValidationError with every field's errors."""
    d, store = ctx.data, ctx.store
    errors, out = {}, {}
    kind = d.get("type") if pod is None else d.get("type", pod.get("type", "lxd"))
    if not kind:
        errors["type"] = ["This field is required."]
    elif kind not in ("lxd", "virsh"):
        errors["type"] = [f"Select a valid choice. {kind} is not one of the available choices."]
    elif pod is not None and kind != pod.get("type", "lxd"):
        errors["type"] = ["Cannot change the type of a pod. Delete and re-create the pod with a different type."]
    out["type"] = kind
    for key in ("zone", "pool"):
        if d.get(key):
            found = d.get(key) in store.zones if key == "zone" else store.pool_by_name(d.get(key)) is not None
            if not found:
                errors[key] = [CHOICE]
            out[key] = d.get(key)
    for key in ("cpu_over_commit_ratio", "memory_over_commit_ratio"):
        if d.get(key) not in (None, ""):
            try:
                value = float(d.get(key))
            except ValueError:
                errors[key] = ["Enter a number."]
                continue
            if value < 0:
                errors[key] = ["Ensure this value is greater than or equal to 0."]
            elif value > 10:
                errors[key] = ["Ensure this value is less than or equal to 10."]
            out[key] = value
    if "default_macvlan_mode" in d:
        mode = d.get("default_macvlan_mode")
        if mode and mode not in MACVLAN_MODES:
            errors["default_macvlan_mode"] = [f"Select a valid choice. {mode} is not one of the available choices."]
        out["default_macvlan_mode"] = mode or None
    if "tags" in d:  # the model's ArrayField: one comma-separated value
        out["tags"] = [t.strip() for t in (d.get("tags") or "").split(",") if t.strip()]
    if d.get("name"):
        out["name"] = d.get("name")
    # the LXD driver's parameters (SETTING_SCOPE.BMC): power_address is required, the rest optional
    address = d.get("power_address", pod.get("power_address") if pod else None)
    if not errors and not address:
        errors["power_address"] = ["This field is required."]
    out["power_address"] = address
    for key in ("project", "password", "certificate", "key"):
        if key in d:
            out[key] = d.get(key)
    if "power_pass" in d:  # the collection's name for the LXD trust password
        out["password"] = d.get("power_pass")
    if errors:
        raise ValidationError(errors)
    return out


def _discover(store, pod: dict) -> None:
    """discover_and_sync_vmhost: read the LXD host's resources; PodProblem with the driver's text when it fails."""
    host = store.lxd_hosts.get(_address_key(pod["power_address"])) if pod.get("type", "lxd") == "lxd" else None
    if host is None:
        hostname, _, port = _address_key(pod["power_address"]).rpartition(":")
        # the LXD pod driver's ClientConnectionFailed, with pylxd's (requests') text
        raise PodProblem(
            f"Pod {pod['id']}: Failed to connect to the LXD REST API: HTTPSConnectionPool(host='{hostname}', "
            f"port={port}): Max retries exceeded with url: /1.0 (Caused by NewConnectionError('<urllib3.connection"
            ".HTTPSConnection object>: Failed to establish a new connection: [Errno 111] Connection refused'))"
        )
    pod.pop("password", None)  # Pod.sync drops the trust password once discovery worked
    pod.update(cores=host["cores"], memory=host["memory"], storage=host["storage"], version="5.21",
               architectures=["amd64/generic"], capabilities=list(CAPABILITIES))  # fmt: skip
    if POD_CONSOLE_LOGGING not in pod["tags"]:
        pod["tags"].append(POD_CONSOLE_LOGGING)
    # sync_machines: VMs left on the host (a VM host deleted without decompose) come back as machines
    for vm in host.pop("vms", []):
        if not any(m.hostname == vm["hostname"] for m in store.machines.values()):
            _new_vm(store, pod, vm["hostname"], vm["cores"], vm["memory"], vm["disk"], "default", pod["pool"])


def _create(ctx: Ctx):
    """Register a VM host (type, power_address, name, zone, pool, tags, password, certificate, key, project)."""
    _check_admin(ctx)
    store = ctx.store
    form = _form(ctx, None)
    if form.get("certificate"):
        # PodForm.save: a BMC of the same type and non-secret parameters is a duplicate (a generated
        # certificate never matches another, so only a given one can)
        for other in store.pods.values():
            same = ("address" in other and other.get("certificate") == form["certificate"]
                    and _address_key(other["power_address"]) == _address_key(form["power_address"])
                    and other.get("project", "default") == (form.get("project") or "default"))  # fmt: skip
            if same:
                raise ValidationError(f"Pod {other['name']} with type and parameters already exist.")
    name = form.get("name") or _petname(store)
    pod = {"id": store.next_id("pod")}  # BMC.name is not unique
    store.pods[pod["id"]] = pod
    pod.update(
        name=name, type=form["type"], address=_address_key(form["power_address"]),
        power_address=form["power_address"], project=form.get("project") or "default",
        certificate=form.get("certificate") or _PEM.format(kind="CERTIFICATE", n=pod["id"]),
        key=form.get("key") or _PEM.format(kind="PRIVATE KEY", n=pod["id"]), zone=form.get("zone") or "default",
        pool=form.get("pool") or "default", tags=form.get("tags", []) + [POD_CONSOLE_LOGGING],
        cores=0, memory=0, storage=0, cpu_over_commit_ratio=form.get("cpu_over_commit_ratio", 1.0),
        memory_over_commit_ratio=form.get("memory_over_commit_ratio", 1.0),
        default_macvlan_mode=form.get("default_macvlan_mode"),
    )  # fmt: skip
    if form.get("password"):
        pod["password"] = form["password"]
    _try_discover(store, pod)
    return render_pod(store, pod)


_PEM = "-----BEGIN {kind}-----\nc2ltdWxhdGVkLXZtLWhvc3Qte259\n-----END {kind}-----\n"


def _petname(store) -> str:
    # BMC.set_random_name: petname.Generate(2, "-")
    return f"{store.rng.choice(_PETNAME[0])}-{store.rng.choice(_PETNAME[1])}"


def _try_discover(store, pod: dict) -> None:
    # api/pods.py _try_sync_and_save: if discovery fails, the VM host is still saved as it is
    try:
        _discover(store, pod)
    except PodProblem:
        pass


def _read(ctx: Ctx, id: str):
    """A VM host."""
    return render_pod(ctx.store, _pod(ctx, id))


def _update(ctx: Ctx, id: str):
    """Update a VM host (name, zone, pool, tags, over-commit ratios, default_macvlan_mode, power_address, ...)."""
    _check_admin(ctx)
    pod = _pod(ctx, id)
    form = _form(ctx, pod)
    for key in ("name", "zone", "pool", "cpu_over_commit_ratio", "memory_over_commit_ratio", "default_macvlan_mode",
                "power_address", "project", "certificate", "key", "password"):  # fmt: skip
        if key in form:
            pod[key] = form[key]
    pod["address"] = _address_key(pod["power_address"])
    if "tags" in form:
        # PodForm.save adds the console-logging tag back
        pod["tags"] = form["tags"] + ([POD_CONSOLE_LOGGING] if POD_CONSOLE_LOGGING not in form["tags"] else [])
    _try_discover(ctx.store, pod)
    return render_pod(ctx.store, pod)


def _refresh(ctx: Ctx, id: str):
    """Discover the VM host again: its resources re-read; 503 when the host does not answer."""
    _check_admin(ctx)
    pod = _pod(ctx, id)
    _discover(ctx.store, pod)
    return render_pod(ctx.store, pod)


def _delete(ctx: Ctx, id: str):
    """Delete a VM host (``decompose`` in the query string): its machines leave MAAS either way."""
    _check_admin(ctx)
    pod = _pod(ctx, id)
    decompose = (ctx.query.get("decompose") or "").lower() in ("true", "1", "on", "yes")
    vms = [m for m in ctx.store.machines.values() if m.pod == pod["id"]]
    host = ctx.store.lxd_hosts.get(pod["address"])
    for m in vms:
        # Pod.async_delete: without decompose the VMs stay on LXD; MAAS forgets their machines all the same
        if not decompose and host is not None:
            host.setdefault("vms", []).append({"hostname": m.hostname, "cores": m.cpu_count, "memory": m.memory,
                                               "disk": m.disk_bytes})  # fmt: skip
        del ctx.store.machines[m.system_id]
    del ctx.store.pods[pod["id"]]
    return None


_STORAGE_RE = re.compile(r"^(?:(?P<label>[a-zA-Z0-9]+):)?(?P<size>[0-9.]+)(?:\((?P<pool>[^)]+)\))?$")


def _bounded(d, key: str, default: int, low: int, high: int, errors: dict) -> int:
    # Django IntegerField(min_value, max_value): both bounds are checked, each its own message
    try:
        value = int_param(d, key, default)
    except ValidationError as e:
        errors.update(e.errors)
        return default
    msgs = []
    if value > high:
        msgs.append(f"Ensure this value is less than or equal to {high}.")
    if value < low:
        msgs.append(f"Ensure this value is greater than or equal to {low}.")
    if msgs:
        errors[key] = msgs
    return value


def _compose(ctx: Ctx, id: str):
    """Compose a VM (cores, memory MiB, storage "label:GB(tags),...", hostname, zone id, pool id)."""
    _check_admin(ctx)
    store, d = ctx.store, ctx.data
    pod = _pod(ctx, id)
    if "composable" not in pod.get("capabilities", []):
        raise ValidationError("VM host does not support composability.")
    errors = {}
    # ComposeMachineForm: the fields' bounds are the pod's hints (the LXD host's own cores and memory)
    cores = _bounded(d, "cores", 1, 1, pod["cores"], errors)
    memory = _bounded(d, "memory", 2048, 1024, pod["memory"], errors)
    disks = [8 * 1000**3]  # DEFAULT_COMPOSED_STORAGE: "root:8(local)"
    if d.get("storage"):
        matches = [_STORAGE_RE.match(part.strip()) for part in d.get("storage").split(",") if part.strip()]
        if not matches or None in matches:
            errors["storage"] = [f'Malformed storage constraint, "{d.get("storage")}".']
        else:
            disks = [int(float(m.group("size")) * 1000**3) for m in matches]
    hostname = d.get("hostname")
    if hostname and any(m.hostname == hostname for m in store.machines.values()):
        errors["hostname"] = [f'Node with hostname "{hostname}" already exists']
    elif hostname and not HOSTNAME_RE.match(hostname):
        errors["hostname"] = [f"Invalid hostname: {hostname!r}"]
    zone = "default"  # the form's initial zone is the default zone, not the VM host's
    if d.get("zone"):
        by_id = {str(z["id"]): name for name, z in store.zones.items()}
        zone = by_id.get(d.get("zone"))
        if zone is None:
            errors["zone"] = [CHOICE]
    pool = pod["pool"]
    if d.get("pool"):
        found = store.pools.get(int(d.get("pool"))) if d.get("pool").isdigit() else None
        if found is None:
            errors["pool"] = [CHOICE]
        else:
            pool = found["name"]
    if errors:
        raise ValidationError(errors)
    # Pod.check_over_commit_ratios
    in_use = used(store, pod)
    message = ""
    if pod["cores"] * pod["cpu_over_commit_ratio"] - (in_use["cores"] + cores) < 0:
        message = (f"CPU overcommit ratio is {pod['cpu_over_commit_ratio']} and there are "
                   f"{pod['cores'] - in_use['cores']} available resources; {cores} requested.")  # fmt: skip
    if pod["memory"] * pod["memory_over_commit_ratio"] - (in_use["memory"] + memory) < 0:
        message += (f"Memory overcommit ratio is {pod['memory_over_commit_ratio']} and there are "
                    f"{pod['memory'] - in_use['memory']} available resources; {memory} requested.")  # fmt: skip
    if message:
        raise PodProblem(f"Unable to compose KVM instance in '{pod['name']}'. {message}")
    if sum(disks) > pod["storage"] - in_use["local_storage"]:
        # the LXD driver's storage pool choice, wrapped by clusterrpc.pods.compose_machine
        raise PodProblem("Unable to compose machine because: Not enough storage space on any storage pools: default")
    m = _new_vm(store, pod, hostname, cores, memory, sum(disks), zone, pool)
    return {"system_id": m.system_id, "resource_uri": f"{API}/machines/{m.system_id}/"}


def _new_vm(store, pod: dict, hostname, cores: int, memory: int, disk: int, zone: str, pool: str):
    n = store.next_id("iface") + 1000
    m = store.add_machine(
        hostname=hostname or f"vm-{n}", ip=_free_ip(store), mac=f"00:16:3e:00:{n // 256 % 256:02x}:{n % 256:02x}",
        zone=zone, pool_name=pool, cpu_count=cores, memory=memory, disk_bytes=disk, power_type="lxd",
        pod=pod["id"], status=model.NEW, tags=list(pod["tags"]),  # Pod._sync_tags: the VM host's tags
    )  # fmt: skip
    # Pod.create_machine starts commissioning at once; the machine is Ready when it ends
    store.set_status(m, model.COMMISSIONING, "Commissioning")
    store.set_power(m, "on")
    store.schedule(m, model.READY, "commission", power_after="off")
    return m


def _free_ip(store) -> str:
    taken = store.all_ips() | set(store.reserved_ips)
    for n in range(100, 250):
        # never an address of a dynamic or reserved IP range (Subnet.get_next_ip_for_allocation)
        if f"{NET}.{n}" not in taken and not in_ranges(store, f"{NET}.{n}"):
            return f"{NET}.{n}"
    raise PodProblem(f"No more IPs available in subnet: {CIDR}.")


def _parameters(ctx: Ctx, id: str):
    """The VM host's power parameters (Pod.get_power_parameters: secrets included)."""
    _check_admin(ctx)
    pod = _pod(ctx, id)
    params = {k: pod[k] for k in ("power_address", "project", "certificate", "key")}
    if pod.get("password"):
        params["password"] = pod["password"]
    return params


def _add_tag(ctx: Ctx, id: str):
    """Add a tag to a VM host."""
    _check_admin(ctx)
    tag = _mandatory(ctx, "tag")
    if "," in tag:
        raise ValidationError('Tag may not contain a ",".')
    pod = _pod(ctx, id)
    if tag not in pod["tags"]:
        pod["tags"].append(tag)
    return render_pod(ctx.store, pod)


def _remove_tag(ctx: Ctx, id: str):
    """Remove a tag from a VM host."""
    _check_admin(ctx)
    tag = _mandatory(ctx, "tag")
    pod = _pod(ctx, id)
    if tag in pod["tags"]:
        pod["tags"].remove(tag)
    return render_pod(ctx.store, pod)


def _mandatory(ctx: Ctx, key: str) -> str:
    # api/utils.get_mandatory_param
    if not ctx.data.get(key):
        raise ValidationError(f"No provided {key}!")
    return ctx.data.get(key)


for collection, one in HANDLERS:
    collection.action("GET")(_list)
    collection.action("POST")(_create)
    one.action("GET")(_read)
    one.action("PUT")(_update)
    one.action("DELETE")(_delete)
    one.action("POST", "refresh")(_refresh)
    one.action("POST", "add_tag")(_add_tag)
    one.action("POST", "remove_tag")(_remove_tag)
    one.action("POST", "compose")(_compose)
    one.action("GET", "parameters")(_parameters)
