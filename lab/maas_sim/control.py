"""The test control API under ``/MAAS/_sim/`` (JSON in, JSON out, no auth).

It is not part of MAAS: tests and the lab's node simulator use it to seed
machines, set timings, inject faults and read a machine's whole state
(decoded user data and power state included). See docs/maas-simulator.md.
"""

from __future__ import annotations

import base64
import json
import re
import time

from lab.maas_sim import model, render
from lab.maas_sim.api_ipranges import in_ranges
from lab.maas_sim.model import Machine, Store
from lab.maas_sim.net import NET

_MACHINE_KEYS = ("hostname", "ip", "mac", "zone", "pool_name", "domain", "architecture", "cpu_count", "memory",
                 "disk_bytes", "tags", "status", "power_state", "power_type", "system_id", "description", "cpu_speed",
                 "pod", "interface_name", "nics")  # fmt: skip


def machine_state(store: Store, m: Machine) -> dict:
    raw = base64.b64decode(m.user_data) if m.user_data else None
    return {
        "system_id": m.system_id, "hostname": m.hostname, "fqdn": store.fqdn(m), "status": m.status,
        "status_name": model.STATUS_NAMES[m.status], "status_message": m.status_message,
        "power_state": m.power_state, "ip": m.ip, "ip_addresses": render.addresses(m), "mac_address": m.mac,
        "zone": m.zone, "pool": m.pool, "tags": list(m.tags), "owner": m.owner, "owner_data": dict(m.owner_data),
        "osystem": m.osystem, "distro_series": m.distro_series, "ephemeral_deploy": m.ephemeral_deploy,
        "user_data": raw.decode("utf-8", "replace") if raw is not None else None, "user_data_b64": m.user_data,
        "cpu_count": m.cpu_count, "memory": m.memory, "architecture": m.architecture,
        "pending": None if not m.pending else {"status_name": model.STATUS_NAMES[m.pending[0]],
                                               "in_seconds": round(m.pending[1] - time.time(), 3)},
        "power_pending": m.power_pending[0] if m.power_pending else None,
        "faults": list(m.faults), "history": list(m.history),
        "interfaces": [{"name": i["name"], "mac_address": i["mac_address"],
                        "links": [{"mode": ln["mode"], "cidr": ln["subnet"]["cidr"], "ip_address": ln.get("ip_address")}
                                  for ln in i["links"]]} for i in render.interfaces(m)],
    }  # fmt: skip


def _status_number(value) -> int:
    if isinstance(value, int) or str(value).isdigit():
        return int(value)
    by_name = {n.lower(): k for k, n in model.STATUS_NAMES.items()}
    by_short = {n: k for k, n in model.STATUS_SHORT.items()}
    key = str(value).lower()
    if key in by_name:
        return by_name[key]
    if key in by_short:
        return by_short[key]
    raise ValueError(f"unknown status {value!r}")


def _create(store: Store, spec: dict) -> Machine:
    unknown = set(spec) - set(_MACHINE_KEYS) - {"pool"}
    if unknown:
        raise ValueError(f"unknown machine fields: {sorted(unknown)}")
    kw = dict(spec)
    if "pool" in kw:
        kw["pool_name"] = kw.pop("pool")
    n = len(store.machines) + 1
    taken = {m.ip for m in store.machines.values()}
    # the address MAAS would hand it: none inside a dynamic or reserved IP range
    while f"{NET}.{n}" in taken or (n < 255 and in_ranges(store, f"{NET}.{n}")):
        n += 1
    kw.setdefault("hostname", f"node-{n:02d}")
    kw.setdefault("ip", f"{NET}.{n}")
    kw.setdefault("mac", f"52:54:00:00:{n // 256:02x}:{n % 256:02x}")
    if "status" in kw:
        kw["status"] = _status_number(kw["status"])
    if "pod" in kw:
        # a machine composed on an LXD VM host of that name (the host is made if new)
        kw["pod"] = store.pod_by_name(kw["pod"], create=True)["id"]
        kw.setdefault("power_type", "lxd")
    if isinstance(kw.get("domain"), str):
        kw["domain"] = store.domain_by_name(kw["domain"])["id"]
    nics = kw.pop("nics", None) or []
    machine = store.add_machine(**kw)
    try:
        for nic in nics:
            # {"name": "eno2", "cidr": "10.20.0.0/24", "ip"?, "mode"? (auto), "mac"?, "gateway_ip"?}
            unknown = set(nic) - {"name", "cidr", "ip", "mode", "mac", "gateway_ip"}
            if unknown or "name" not in nic or "cidr" not in nic:
                raise ValueError(f"a nic is {{name, cidr, ip?, mode?, mac?, gateway_ip?}}, got {sorted(nic)}")
            store.add_nic(machine, **nic)
    except (ValueError, TypeError):
        del store.machines[machine.system_id]  # no half-made machine left behind
        raise
    return machine


def take_fault(store: Store, method: str, path: str) -> dict | None:
    """The first injected HTTP fault matching this request (its count is used up)."""
    for fault in list(store.http_faults):
        if fault.get("method") and fault["method"].upper() != method:
            continue
        if fault.get("path") and not re.search(fault["path"], path):
            continue
        if fault.get("count") is not None:
            fault["count"] -= 1
            if fault["count"] <= 0:
                store.http_faults.remove(fault)
        return dict(fault)
    return None


def handle(store: Store, method: str, rel: str, body: bytes) -> tuple[int, object]:
    try:
        payload = json.loads(body) if body.strip() else {}
    except ValueError as exc:
        return 400, {"error": f"body is not JSON: {exc}"}
    parts = [p for p in rel.split("/") if p]
    with store.lock:
        store.advance()
        try:
            status, obj = _route(store, method, parts, payload)
        except (ValueError, TypeError, KeyError) as exc:
            return 400, {"error": str(exc)}
        if method != "GET":
            store.save()
        return status, obj


def _route(store: Store, method: str, parts: list[str], p: dict) -> tuple[int, object]:
    faults = store.http_faults
    if parts == ["state"] and method == "GET":
        return 200, {"timings": store.timings, "config": store.config, "http_faults": faults,
                     "machines": len(store.machines), "users": sorted(store.users)}  # fmt: skip
    if parts == ["timings"]:
        if method == "POST":
            bad = set(p) - set(model.DEFAULT_TIMINGS)
            if bad:
                raise ValueError(f"unknown timings: {sorted(bad)}; known: {sorted(model.DEFAULT_TIMINGS)}")
            store.timings.update({k: float(v) for k, v in p.items()})
        return 200, store.timings
    if parts == ["faults"]:
        if method == "POST":
            fault = {k: p.get(k) for k in ("status", "delay", "count", "method", "path", "body")}
            if not fault["status"] and not fault["delay"]:
                raise ValueError("a fault needs a status and/or a delay")
            faults.append(fault)
        elif method == "DELETE":
            faults.clear()
        return 200, faults
    if parts == ["reset"] and method == "POST":
        users, tokens = store.users, store.tokens
        store.reset()
        store.users, store.tokens = users, tokens
        store.http_faults = []
        made = store.seed(int(p.get("count", 12)))
        return 200, {"machines": len(made)}
    if parts == ["lxd-hosts"]:
        # LXD hosts that answer at an address (what a VM host registration talks to); not MAAS objects
        if method == "POST":
            from lab.maas_sim.api_pods import _address_key

            for key in ("address", "cores", "memory", "storage"):
                if key not in p:
                    raise ValueError(f"an LXD host needs {key}")
            store.lxd_hosts[_address_key(p["address"])] = {k: int(p[k]) for k in ("cores", "memory", "storage")}
        return 200, store.lxd_hosts
    if parts and parts[0] == "machines":
        return _machines(store, method, parts[1:], p)
    return 404, {"error": f"no control endpoint {method} /MAAS/_sim/{'/'.join(parts)}"}


def _machines(store: Store, method: str, rest: list[str], p: dict) -> tuple[int, object]:
    if not rest:
        if method == "GET":
            return 200, [machine_state(store, m) for m in store.machines.values()]
        if method == "POST":
            specs = p.get("machines") or [{} for _ in range(int(p.get("count", 1)))]
            return 200, [machine_state(store, _create(store, spec)) for spec in specs]
        if method == "DELETE":
            store.machines.clear()
            return 200, []
    m = store.machines.get(rest[0])
    if m is None:
        return 404, {"error": f"no machine {rest[0]}"}
    if len(rest) == 1:
        if method == "GET":
            return 200, machine_state(store, m)
        if method == "DELETE":
            del store.machines[m.system_id]
            return 200, {}
        if method in ("POST", "PATCH"):
            # A direct poke, outside MAAS's rules: for setting up odd states in tests.
            for key, value in p.items():
                if key == "status":
                    m.pending = None
                    store.set_status(m, _status_number(value), "set by control API")
                elif key in ("power_state", "owner", "hostname", "zone", "pool", "tags", "cpu_count", "memory",
                             "architecture", "osystem", "distro_series"):  # fmt: skip
                    setattr(m, key, value)
                    if key == "power_state":
                        m.power_pending = None
                else:
                    raise ValueError(f"cannot set {key!r}")
            return 200, machine_state(store, m)
    if rest[1:] == ["fault"] and method == "POST":
        fault = p.get("fault")
        if fault in ("deploy_fails", "release_fails"):
            m.faults.append(fault)
        elif fault == "broken":
            from lab.maas_sim.api_machines import mark_broken_release

            m.pending = None
            store.set_status(m, model.BROKEN, p.get("message", "Marked broken (injected fault)"))
            mark_broken_release(store, m)
        elif fault == "clear":
            m.faults.clear()
        else:
            raise ValueError("fault must be deploy_fails, release_fails, broken or clear")
        return 200, machine_state(store, m)
    return 404, {"error": f"no control endpoint {method} machines/{'/'.join(rest)}"}
