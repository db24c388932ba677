"""LXD VM hosts: PodsHandler / PodHandler and their 3.x names VmHostsHandler / VmHostHandler
(src/maasserver/api/pods.py, forms/pods.py).

An LXD host "exists" when the control API has declared it (``POST /MAAS/_sim/lxd-hosts``: address, cores,
memory MiB, storage bytes), as a real one exists when LXD answers at its address. Registering it
(``POST vm-hosts/ type=lxd power_address=...``) reads those resources; ``op=compose`` carves a VM out of them
(a machine of power type ``lxd`` in the pod, commissioned, then Ready); deleting the VM's machine decomposes it
and gives the resources back; deleting the VM host deletes its VMs.
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


def used(store, pod: dict) -> dict:
    vms = [m for m in store.machines.values() if m.pod == pod["id"]]
    return {"cores": sum(m.cpu_count for m in vms), "memory": sum(m.memory for m in vms),
            "local_storage": sum(m.disk_bytes for m in vms)}  # fmt: skip


def render_pod(store, pod: dict) -> dict:
    total = {"cores": pod["cores"], "memory": pod["memory"], "local_storage": pod["storage"]}
    in_use = used(store, pod)
    cores_cap = int(pod["cores"] * pod["cpu_over_commit_ratio"])
    mem_cap = int(pod["memory"] * pod["memory_over_commit_ratio"])
    available = {"cores": cores_cap - in_use["cores"], "memory": mem_cap - in_use["memory"],
                 "local_storage": pod["storage"] - in_use["local_storage"]}  # fmt: skip
    pool = store.pool_by_name(pod["pool"])
    return {
        "id": pod["id"], "name": pod["name"], "type": "lxd", "version": "5.21", "architectures": ["amd64/generic"],
        "capabilities": CAPABILITIES, "zone": render.zone(store.zones[pod["zone"]]),
        "pool": render.pool(pool), "tags": list(pod["tags"]), "total": total, "used": in_use,
        "available": available, "cpu_over_commit_ratio": pod["cpu_over_commit_ratio"],
        "memory_over_commit_ratio": pod["memory_over_commit_ratio"], "default_macvlan_mode": "",
        "host": None, "storage_pools": [{"id": "default", "name": "default", "type": "zfs", "path": "default",
                                         "total": pod["storage"], "used": in_use["local_storage"],
                                         "available": available["local_storage"], "default": True}],
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


def _create(ctx: Ctx):
    """Register a VM host (type=lxd, power_address, name, zone, pool, tags, password or certificate)."""
    _check_admin(ctx)
    d, store = ctx.data, ctx.store
    errors = {}
    kind = d.get("type")
    if kind is None:
        errors["type"] = ["This field is required."]
    elif kind not in ("lxd", "virsh"):
        errors["type"] = [f"Select a valid choice. {kind} is not one of the available choices."]
    address = d.get("power_address")
    if not address:
        errors["power_address"] = ["This field is required."]
    zone = d.get("zone") or "default"
    if zone not in store.zones:
        errors["zone"] = ["Select a valid choice. That choice is not one of the available choices."]
    pool = d.get("pool") or "default"
    if store.pool_by_name(pool) is None:
        errors["pool"] = ["Select a valid choice. That choice is not one of the available choices."]
    name = d.get("name") or f"vmhost-{store.counters['pod'] + 1}"
    if any(p["name"] == name and "address" in p for p in store.pods.values()):
        errors["name"] = ["Pod with this Name already exists."]
    if errors:
        raise ValidationError(errors)
    host = store.lxd_hosts.get(_address_key(address))
    if host is None or kind != "lxd":
        raise PodProblem(f"Failed talking to pod: Unable to connect to: {address}")
    if any(p.get("address") == _address_key(address) for p in store.pods.values()):
        raise ValidationError({"__all__": [f"VM host at {address} is already registered."]})
    pod = store.pod_by_name(name, create=True)
    pod.update({"address": _address_key(address), "zone": zone, "pool": pool,
                "tags": [t for t in re.split(r"[\s,]+", d.get("tags") or "") if t],
                "cores": host["cores"], "memory": host["memory"], "storage": host["storage"],
                "cpu_over_commit_ratio": float(d.get("cpu_over_commit_ratio") or 1.0),
                "memory_over_commit_ratio": float(d.get("memory_over_commit_ratio") or 1.0)})  # fmt: skip
    return render_pod(store, pod)


def _address_key(address: str) -> str:
    # LXD's default port is 8443; "https://10.0.0.1:8443", "10.0.0.1:8443" and "10.0.0.1" are one host
    text = re.sub(r"^https?://", "", address.strip()).rstrip("/")
    return text if ":" in text else f"{text}:8443"


def _read(ctx: Ctx, id: str):
    """A VM host."""
    return render_pod(ctx.store, _pod(ctx, id))


def _delete(ctx: Ctx, id: str):
    """Delete a VM host; its VMs are deleted with it."""
    _check_admin(ctx)
    pod = _pod(ctx, id)
    for m in [m for m in ctx.store.machines.values() if m.pod == pod["id"]]:
        del ctx.store.machines[m.system_id]
    del ctx.store.pods[pod["id"]]
    return None


_STORAGE_RE = re.compile(r"^(?:(?P<label>[a-zA-Z0-9]+):)?(?P<size>[0-9.]+)(?:\((?P<pool>[^)]+)\))?$")


def _compose(ctx: Ctx, id: str):
    """Compose a VM (cores, memory MiB, storage "label:GB(pool)", hostname, zone id, pool id, architecture)."""
    _check_admin(ctx)
    store, d = ctx.store, ctx.data
    pod = _pod(ctx, id)
    cores = int_param(d, "cores", 1)
    memory = int_param(d, "memory", 2048)
    errors = {}
    if cores < 1:
        errors["cores"] = ["Ensure this value is greater than or equal to 1."]
    if memory < 1024:
        errors["memory"] = ["Ensure this value is greater than or equal to 1024."]
    storage_gb = 8.0
    if d.get("storage"):
        first = d.get("storage").split(",")[0]
        match = _STORAGE_RE.match(first)
        if match is None:
            errors["storage"] = [f'Malformed storage constraint, "{d.get("storage")}".']
        else:
            storage_gb = float(match.group("size"))
    hostname = d.get("hostname")
    if hostname and not HOSTNAME_RE.match(hostname):
        errors["hostname"] = [f"Invalid hostname: {hostname!r}"]
    elif hostname and any(m.hostname == hostname for m in store.machines.values()):
        errors["hostname"] = [f"Node with hostname '{hostname}' already exists."]
    zone = pod["zone"]
    if d.get("zone"):
        by_id = {str(z["id"]): name for name, z in store.zones.items()}
        zone = by_id.get(d.get("zone"), d.get("zone"))
        if zone not in store.zones:
            errors["zone"] = ["Select a valid choice. That choice is not one of the available choices."]
    pool = pod["pool"]
    if d.get("pool"):
        found = store.pools.get(int(d.get("pool"))) if d.get("pool").isdigit() else store.pool_by_name(d.get("pool"))
        if found is None:
            errors["pool"] = ["Select a valid choice. That choice is not one of the available choices."]
        else:
            pool = found["name"]
    if errors:
        raise ValidationError(errors)
    free = render_pod(store, pod)["available"]
    disk = int(storage_gb * 1000**3)
    short = [what for what, need in (("cores", cores), ("memory", memory), ("local_storage", disk))
             if need > free[what]]  # fmt: skip
    if short:
        raise PodProblem(f"Unable to compose KVM instance in '{pod['name']}'. "
                         f"There are not enough resources available: {', '.join(short)}.")  # fmt: skip
    n = store.next_id("iface") + 1000
    m = store.add_machine(
        hostname=hostname or f"vm-{n}", ip=_free_ip(store), mac=f"00:16:3e:00:{n // 256 % 256:02x}:{n % 256:02x}",
        zone=zone, pool_name=pool, cpu_count=cores, memory=memory, disk_bytes=disk, power_type="lxd",
        pod=pod["id"], status=model.NEW, tags=[],
    )  # fmt: skip
    # MAAS commissions a composed machine at once; it is Ready when commissioning ends
    store.set_status(m, model.COMMISSIONING, "Commissioning")
    store.set_power(m, "on")
    store.schedule(m, model.READY, "commission", power_after="off")
    return {"system_id": m.system_id, "resource_uri": f"{API}/machines/{m.system_id}/"}


def _free_ip(store) -> str:
    taken = store.all_ips() | set(store.reserved_ips)
    for n in range(100, 250):
        # never an address of a dynamic or reserved IP range (Subnet.get_next_ip_for_allocation)
        if f"{NET}.{n}" not in taken and not in_ranges(store, f"{NET}.{n}"):
            return f"{NET}.{n}"
    raise PodProblem(f"No more IPs available in subnet: {CIDR}.")


def _parameters(ctx: Ctx, id: str):
    """The VM host's power parameters."""
    _check_admin(ctx)
    pod = _pod(ctx, id)
    return {"power_address": pod["address"], "project": "default"}


for collection, one in HANDLERS:
    collection.action("GET")(_list)
    collection.action("POST")(_create)
    one.action("GET")(_read)
    one.action("DELETE")(_delete)
    one.action("POST", "compose")(_compose)
    one.action("GET", "parameters")(_parameters)
