"""The simulator's state: machines and the objects around them, in memory.

Statuses, their names and the allowed transitions are MAAS's own
(src/maascommon/enums/node.py, src/maasserver/node_status.py). Timed
transitions (Deploying -> Deployed, Releasing -> Ready, ...) are kept as a
pending change with a due time and applied lazily by ``advance()``, which every
request calls under the store lock; nothing runs in the background.
"""

from __future__ import annotations

import copy
import json
import os
import random
import string
import threading
import time
from dataclasses import asdict, dataclass, field, fields

from lab.maas_sim import names
from lab.maas_sim.net import NET

NEW, COMMISSIONING, FAILED_COMMISSIONING, MISSING, READY, RESERVED = 0, 1, 2, 3, 4, 5
DEPLOYED, RETIRED, BROKEN, DEPLOYING, ALLOCATED, FAILED_DEPLOYMENT = 6, 7, 8, 9, 10, 11
RELEASING, FAILED_RELEASING, DISK_ERASING, FAILED_DISK_ERASING = 12, 13, 14, 15
RESCUE_MODE, ENTERING_RESCUE_MODE, FAILED_ENTERING_RESCUE_MODE = 16, 17, 18
EXITING_RESCUE_MODE, FAILED_EXITING_RESCUE_MODE, TESTING, FAILED_TESTING = 19, 20, 21, 22

STATUS_NAMES = {
    0: "New", 1: "Commissioning", 2: "Failed commissioning", 3: "Missing", 4: "Ready", 5: "Reserved",
    6: "Deployed", 7: "Retired", 8: "Broken", 9: "Deploying", 10: "Allocated", 11: "Failed deployment",
    12: "Releasing", 13: "Releasing failed", 14: "Disk erasing", 15: "Failed disk erasing",
    16: "Rescue mode", 17: "Entering rescue mode", 18: "Failed to enter rescue mode",
    19: "Exiting rescue mode", 20: "Failed to exit rescue mode", 21: "Testing", 22: "Failed testing",
}  # fmt: skip

# NODE_STATUS_SHORT_LABEL_CHOICES: the `status` filter of GET /machines/.
STATUS_SHORT = {
    0: "new", 1: "commissioning", 2: "failed_commissioning", 3: "missing", 4: "ready", 5: "reserved",
    6: "deployed", 7: "retired", 8: "broken", 9: "deploying", 10: "allocated", 11: "failed_deployment",
    12: "releasing", 13: "failed_releasing", 14: "disk_erasing", 15: "failed_disk_erasing",
    16: "rescue_mode", 17: "entering_rescue_mode", 18: "failed_entering_rescue_mode",
    19: "exiting_rescue_mode", 20: "failed_exiting_rescue_mode", 21: "testing", 22: "failed_testing",
}  # fmt: skip

_TESTING_RESET = [COMMISSIONING, FAILED_DEPLOYMENT, MISSING, RETIRED, BROKEN, FAILED_RELEASING, FAILED_DISK_ERASING,
                  FAILED_ENTERING_RESCUE_MODE, FAILED_EXITING_RESCUE_MODE, FAILED_TESTING]  # fmt: skip

# NODE_TRANSITIONS, src/maasserver/node_status.py.
TRANSITIONS = {
    NEW: [COMMISSIONING, MISSING, READY, RETIRED, BROKEN, ENTERING_RESCUE_MODE],
    COMMISSIONING: [FAILED_COMMISSIONING, READY, RETIRED, MISSING, NEW, BROKEN, TESTING],
    FAILED_COMMISSIONING: [COMMISSIONING, MISSING, RETIRED, BROKEN, ENTERING_RESCUE_MODE, TESTING],
    READY: [ENTERING_RESCUE_MODE, COMMISSIONING, ALLOCATED, RESERVED, RETIRED, MISSING, BROKEN, TESTING],
    RESERVED: [READY, ALLOCATED, RETIRED, MISSING, BROKEN, DISK_ERASING, RELEASING, ENTERING_RESCUE_MODE, TESTING],
    ALLOCATED: [READY, RETIRED, MISSING, BROKEN, DEPLOYING, DISK_ERASING, RELEASING, ENTERING_RESCUE_MODE, TESTING],
    RELEASING: [ALLOCATED, RESERVED, DEPLOYED, READY, BROKEN, MISSING, FAILED_DEPLOYMENT, FAILED_DISK_ERASING,
                FAILED_RELEASING],
    DEPLOYING: [ALLOCATED, MISSING, BROKEN, FAILED_DEPLOYMENT, DEPLOYED, READY, DISK_ERASING, RELEASING],
    FAILED_DEPLOYMENT: [ALLOCATED, MISSING, BROKEN, READY, DISK_ERASING, RELEASING, ENTERING_RESCUE_MODE, TESTING],
    DEPLOYED: [ALLOCATED, MISSING, BROKEN, READY, DISK_ERASING, RELEASING, ENTERING_RESCUE_MODE, TESTING],
    MISSING: [NEW, READY, ALLOCATED, COMMISSIONING, BROKEN, ENTERING_RESCUE_MODE, TESTING],
    RETIRED: [NEW, READY, MISSING, BROKEN, ENTERING_RESCUE_MODE, TESTING],
    BROKEN: [COMMISSIONING, READY, DISK_ERASING, RELEASING, ENTERING_RESCUE_MODE, TESTING],
    FAILED_RELEASING: [RELEASING, DISK_ERASING, READY, BROKEN, TESTING],
    DISK_ERASING: [BROKEN, DISK_ERASING, FAILED_DISK_ERASING, READY, RELEASING],
    FAILED_DISK_ERASING: [DISK_ERASING, RELEASING, BROKEN, ALLOCATED, READY, ENTERING_RESCUE_MODE, TESTING],
    ENTERING_RESCUE_MODE: [READY, BROKEN, DEPLOYED, RESCUE_MODE, FAILED_ENTERING_RESCUE_MODE, EXITING_RESCUE_MODE],
    FAILED_ENTERING_RESCUE_MODE: [BROKEN, ENTERING_RESCUE_MODE, EXITING_RESCUE_MODE, TESTING],
    RESCUE_MODE: [BROKEN, EXITING_RESCUE_MODE, TESTING],
    EXITING_RESCUE_MODE: [NEW, BROKEN, FAILED_COMMISSIONING, READY, RESERVED, ALLOCATED, FAILED_DEPLOYMENT, DEPLOYED,
                          MISSING, RETIRED, FAILED_RELEASING, FAILED_DISK_ERASING, RESCUE_MODE,
                          FAILED_ENTERING_RESCUE_MODE, FAILED_EXITING_RESCUE_MODE, FAILED_TESTING],
    FAILED_EXITING_RESCUE_MODE: [BROKEN, EXITING_RESCUE_MODE, TESTING],
    TESTING: [BROKEN, NEW, READY, RESERVED, ALLOCATED, DEPLOYED] + _TESTING_RESET,
    FAILED_TESTING: [COMMISSIONING, BROKEN, MISSING, ENTERING_RESCUE_MODE, TESTING, READY, DEPLOYED],
}  # fmt: skip

# src/maasserver/models/node.py
RELEASABLE = {ALLOCATED, RESERVED, BROKEN, DEPLOYING, DEPLOYED, FAILED_DEPLOYMENT, FAILED_DISK_ERASING,
              FAILED_RELEASING}  # fmt: skip

# Seconds each timed step takes; the control API changes them (tests set them near zero).
DEFAULT_TIMINGS = {"deploy": 3.0, "release": 1.0, "erase": 2.0, "commission": 2.0, "power": 0.5}


@dataclass
class Machine:
    system_id: str
    hostname: str
    ip: str
    mac: str
    zone: str = "default"
    pool: str = "default"
    domain: int = 0
    architecture: str = "amd64/generic"
    cpu_count: int = 4
    cpu_speed: int = 2400  # MHz
    memory: int = 8192
    disk_bytes: int = 64_000_000_000
    tags: list = field(default_factory=list)
    status: int = READY
    owner: str | None = None
    owner_data: dict = field(default_factory=dict)
    power_state: str = "off"
    power_type: str = "ipmi"
    osystem: str = ""
    distro_series: str = ""
    hwe_kernel: str | None = None
    min_hwe_kernel: str = ""
    swap_size: int | None = None
    description: str = ""
    agent_name: str = ""
    user_data: str | None = None  # base64 of the decoded user data, as stored
    ephemeral_deploy: bool = False
    locked: bool = False
    status_message: str = ""
    netboot: bool = True
    pod: int | None = None  # the VM host (pod) id of a composed machine
    link_mode: str | None = "auto"  # the boot interface's link on the subnet: auto, static, dhcp, link_up, None
    bridges: list = field(default_factory=list)  # [{"id", "name", "params"}] made by interfaces op=create_bridge
    interface_name: str = "eth0"  # the boot (PXE) interface's name
    # more physical interfaces: [{"id", "name", "mac", "mode", "ip", "link_id", "subnet": {id, cidr, gateway_ip}}]
    nics: list = field(default_factory=list)
    interface_id: int = 0
    disk_id: int = 0
    link_id: int = 0
    # [target status, due (epoch s), power after] for a timed transition in progress
    pending: list | None = None
    # [power state, due] for a power change in progress
    power_pending: list | None = None
    # injected faults: "deploy_fails", "release_fails"
    faults: list = field(default_factory=list)
    history: list = field(default_factory=list)


def _rand_id(rng: random.Random, taken) -> str:
    alphabet = string.ascii_lowercase + string.digits
    while True:
        candidate = "".join(rng.choice(alphabet) for _ in range(6))
        if candidate not in taken:
            return candidate


class Store:
    """Everything the simulator knows; ``lock`` guards it all (requests are short)."""

    def __init__(self, snapshot: str | None = None):
        self.lock = threading.RLock()
        self.snapshot = snapshot
        self.rng = random.Random()
        self.reset()

    def reset(self):
        self.machines: dict[str, Machine] = {}
        self.zones: dict[str, dict] = {"default": {"id": 1, "name": "default", "description": ""}}
        self.pools: dict[int, dict] = {0: {"id": 0, "name": "default", "description": "Default pool"}}
        self.domains: dict[int, dict] = {0: {"id": 0, "name": "maas", "authoritative": True, "ttl": None}}
        self.default_domain = 0
        self.tags: dict[str, dict] = {}
        self.pods: dict[int, dict] = {}  # VM hosts, by id
        self.reserved_ips: dict[str, dict] = {}  # ipaddresses op=reserve: ip -> {ip, owner, hostname}
        self.ipranges: dict[int, dict] = {}  # ipranges/: id -> {id, type, start_ip, end_ip, subnet, user, comment}
        self.static_routes: dict[int, dict] = {}  # static-routes/: id -> {id, source, destination, gateway_ip, metric}
        self.sshkeys: dict[int, dict] = {}
        self.devices: dict[str, dict] = {}
        self.lxd_hosts: dict[str, dict] = {}  # "address:port" -> {cores, memory, storage}: LXD hosts that answer
        self.dnsresources: dict[int, dict] = {}
        self.subnets: dict[int, dict] = {}  # subnets beyond the lab's one (id 1): {id, cidr, gateway_ip}
        self.users: dict[str, dict] = {}
        self.tokens: dict[str, dict] = {}  # token_key -> {consumer_key, token_secret, username}
        self.config = names.default_config("maas-sim")
        self.nonces: dict[tuple, float] = {}  # (consumer, token, nonce) -> first seen (piston's Nonce table)
        self.timings = dict(DEFAULT_TIMINGS)
        self.http_faults: list[dict] = []  # injected HTTP faults (control API)
        self.counters = {
            "zone": 1,
            "pool": 0,
            "domain": 0,
            "dnsresource": 0,
            "ip": 0,
            "iface": 0,
            "disk": 0,
            "pod": 0,
            "sshkey": 0,
            "device": 0,
            "subnet": 1,
            "iprange": 0,
            "staticroute": 0,
            "dnsdata": 0,
        }

    def next_id(self, kind: str) -> int:
        self.counters[kind] += 1
        return self.counters[kind]

    # -- users and keys ----------------------------------------------------

    def add_user(self, username: str, password: str | None = None, is_superuser: bool = True, email: str = ""):
        self.users[username] = {"username": username, "password": password, "is_superuser": is_superuser,
                                "email": email or f"{username}@example.com"}  # fmt: skip

    def add_key(self, username: str, apikey: str) -> None:
        consumer, token, secret = apikey.split(":")
        self.tokens[token] = {"consumer_key": consumer, "token_secret": secret, "username": username}

    def new_key(self, username: str) -> str:
        alphabet = string.ascii_letters + string.digits
        parts = ["".join(self.rng.choice(alphabet) for _ in range(n)) for n in (18, 18, 32)]
        key = ":".join(parts)
        self.add_key(username, key)
        return key

    # -- machines ----------------------------------------------------------

    def add_machine(self, **kw) -> Machine:
        kw.setdefault("system_id", _rand_id(self.rng, self.machines))
        kw["interface_id"] = self.next_id("iface")
        kw["disk_id"] = self.next_id("disk")
        kw["link_id"] = self.next_id("ip")
        for tag in kw.get("tags", []):
            self.tags.setdefault(tag, {"name": tag, "comment": "", "definition": "", "kernel_opts": ""})
        zone = kw.get("zone", "default")
        if zone not in self.zones:
            self.zones[zone] = {"id": self.next_id("zone"), "name": zone, "description": ""}
        pool = kw.pop("pool_name", None)
        if pool is not None:
            kw["pool"] = self.pool_by_name(pool, create=True)["name"]
        machine = Machine(**kw)
        self.machines[machine.system_id] = machine
        return machine

    def subnet_for(self, cidr: str, gateway_ip: str | None = None) -> dict:
        """The subnet of ``cidr`` (the lab's own is id 1), made on fabric-0's untagged VLAN if new."""
        import ipaddress

        from lab.maas_sim.net import CIDR, GATEWAY

        net = str(ipaddress.ip_network(cidr, strict=False))
        if net == CIDR:
            return {"id": 1, "cidr": CIDR, "gateway_ip": GATEWAY}
        for sub in self.subnets.values():
            if sub["cidr"] == net:
                return sub
        sub = {"id": self.next_id("subnet"), "cidr": net, "gateway_ip": gateway_ip}
        self.subnets[sub["id"]] = sub
        return sub

    def all_ips(self, but=None) -> set[str]:
        """Every address a machine holds (boot interface and the others), ``but`` one machine."""
        out = set()
        for m in self.machines.values():
            if m is not but:
                out.add(m.ip)
                out.update(n["ip"] for n in m.nics if n.get("ip"))
        return out

    def add_nic(self, m: Machine, name: str, cidr: str, ip: str | None = None, mode: str = "auto",
                mac: str | None = None, gateway_ip: str | None = None) -> dict:  # fmt: skip
        """Another physical interface on ``m`` with one link on ``cidr`` (an AUTO address shows once deployed)."""
        import ipaddress

        if not name or name == m.interface_name or any(n["name"] == name for n in m.nics):
            raise ValueError(f"interface name {name!r} is empty or already taken on {m.hostname}")
        mode = (mode or "").lower()
        if mode not in ("auto", "static", "dhcp", "link_up"):
            raise ValueError(f"link mode {mode!r}: one of auto, static, dhcp, link_up")
        net = ipaddress.ip_network(cidr, strict=False)
        taken = self.all_ips()
        if ip is not None and ipaddress.ip_address(ip) not in net:
            raise ValueError(f"{ip} is not in {net}")
        if ip is None and mode in ("auto", "static"):
            hosts = [str(h) for h in net.hosts() if str(h) not in taken and str(h) != gateway_ip]
            same = f"{'.'.join(str(net.network_address).split('.')[:3])}.{m.ip.rsplit('.', 1)[-1]}"
            ip = same if same in hosts else hosts[0]
        elif ip in taken:
            raise ValueError(f"{ip} is already in use")
        index = len(m.nics) + 1
        nic = {"id": self.next_id("iface"), "name": name, "mode": mode, "ip": ip, "link_id": self.next_id("ip"),
               "mac": mac or f"{m.mac[:-5]}{(int(m.mac[-5:-3], 16) + 16 * index) % 256:02x}:{m.mac[-2:]}",
               "subnet": dict(self.subnet_for(cidr, gateway_ip))}  # fmt: skip
        m.nics.append(nic)
        return nic

    def pool_by_name(self, name: str, create: bool = False) -> dict | None:
        for pool in self.pools.values():
            if pool["name"] == name:
                return pool
        if not create:
            return None
        pool = {"id": self.next_id("pool"), "name": name, "description": ""}
        self.pools[pool["id"]] = pool
        return pool

    def pod_by_name(self, name: str, create: bool = False) -> dict | None:
        for pod in self.pods.values():
            if pod["name"] == name:
                return pod
        if not create:
            return None
        pod = {"id": self.next_id("pod"), "name": name, "type": "lxd"}
        self.pods[pod["id"]] = pod
        return pod

    def domain_by_name(self, name: str) -> dict | None:
        return next((d for d in self.domains.values() if d["name"] == name), None)

    def fqdn(self, machine: Machine) -> str:
        return f"{machine.hostname}.{self.domains[machine.domain]['name']}"

    def set_status(self, machine: Machine, status: int, message: str = "") -> None:
        machine.history.append([round(time.time(), 3), STATUS_NAMES[machine.status], STATUS_NAMES[status]])
        del machine.history[:-20]
        machine.status = status
        machine.status_message = message

    def schedule(self, machine: Machine, target: int, seconds_key: str, power_after: str | None = None) -> None:
        machine.pending = [target, time.time() + self.timings[seconds_key], power_after]

    def set_power(self, machine: Machine, state: str) -> None:
        """A power action: takes ``timings['power']`` to show, as a BMC's would."""
        if self.timings["power"] <= 0:
            machine.power_state, machine.power_pending = state, None
        else:
            machine.power_pending = [state, time.time() + self.timings["power"]]

    def advance(self) -> None:
        now = time.time()
        for m in self.machines.values():
            if m.power_pending and now >= m.power_pending[1]:
                m.power_state, m.power_pending = m.power_pending[0], None
            if m.pending and now >= m.pending[1]:
                target, _, power_after = m.pending
                m.pending = None
                self._finish(m, target, power_after)

    def _finish(self, m: Machine, target: int, power_after: str | None) -> None:
        if target == DEPLOYED and "deploy_fails" in m.faults:
            m.faults.remove("deploy_fails")
            self.set_status(m, FAILED_DEPLOYMENT, "Failed deployment (injected fault)")
            return
        if target == READY and m.status == RELEASING and "release_fails" in m.faults:
            m.faults.remove("release_fails")
            self.set_status(m, FAILED_RELEASING, "Failed to release (injected fault)")
            return
        if target == READY and m.status in (RELEASING, DISK_ERASING):
            self.release_to_ready(m)
        else:
            self.set_status(m, target, "Deployed" if target == DEPLOYED else "")
        if power_after:
            m.power_state, m.power_pending = power_after, None

    def release_to_ready(self, m: Machine) -> None:
        """Node._release_to_ready plus what release() clears."""
        self.set_status(m, READY)
        m.owner = None
        m.owner_data = {}
        m.agent_name = ""
        m.osystem = ""
        m.distro_series = ""
        m.hwe_kernel = None
        m.user_data = None
        m.ephemeral_deploy = False
        m.power_state, m.power_pending = "off", None

    # -- transactions --------------------------------------------------------

    _TX_ATTRS = ("machines", "zones", "pools", "domains", "tags", "dnsresources", "pods", "users", "tokens", "config",
                 "counters", "default_domain", "reserved_ips", "sshkeys", "devices", "lxd_hosts",
                 "subnets", "ipranges", "static_routes")  # fmt: skip

    def checkpoint(self) -> dict:
        """The state a request may change: MAAS runs each API request in one database transaction."""
        return copy.deepcopy({name: getattr(self, name) for name in self._TX_ATTRS})

    def rollback(self, saved: dict) -> None:
        for name, value in saved.items():
            setattr(self, name, value)

    # -- snapshot ----------------------------------------------------------

    _SNAP_ATTRS = ("zones", "tags", "users", "tokens", "config", "timings", "counters", "default_domain")
    _SNAP_OPTIONAL = ("reserved_ips", "devices", "lxd_hosts")  # keyed by strings: JSON keeps them

    def save(self) -> None:
        if not self.snapshot:
            return
        data = {name: getattr(self, name) for name in self._SNAP_ATTRS}
        data["pools"] = list(self.pools.values())
        data["domains"] = list(self.domains.values())
        data["dnsresources"] = list(self.dnsresources.values())
        data["pods"] = list(self.pods.values())
        data["sshkeys"] = list(self.sshkeys.values())
        data["subnets"] = list(self.subnets.values())
        data["ipranges"] = list(self.ipranges.values())
        data["static_routes"] = list(self.static_routes.values())
        for name in self._SNAP_OPTIONAL:
            data[name] = getattr(self, name)
        data["machines"] = [asdict(m) for m in self.machines.values()]
        tmp = f"{self.snapshot}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(data, fh)
        os.replace(tmp, self.snapshot)

    def load(self) -> bool:
        if not self.snapshot or not os.path.exists(self.snapshot):
            return False
        with open(self.snapshot, encoding="utf-8") as fh:
            data = json.load(fh)
        for name in self._SNAP_ATTRS:
            setattr(self, name, data[name])
        self.pools = {p["id"]: p for p in data["pools"]}
        self.domains = {d["id"]: d for d in data["domains"]}
        self.dnsresources = {r["id"]: r for r in data["dnsresources"]}
        self.pods = {p["id"]: p for p in data.get("pods", [])}
        self.config = {**names.default_config("maas-sim"), **self.config}
        self.sshkeys = {k["id"]: k for k in data.get("sshkeys", [])}
        self.subnets = {s["id"]: s for s in data.get("subnets", [])}
        self.ipranges = {r["id"]: r for r in data.get("ipranges", [])}
        self.static_routes = {r["id"]: r for r in data.get("static_routes", [])}
        for name in self._SNAP_OPTIONAL:
            setattr(self, name, data.get(name, {}))
        for kind in ("pod", "sshkey", "device", "iprange", "staticroute", "dnsdata"):
            self.counters.setdefault(kind, 0)
        self.counters.setdefault("subnet", max([1, *self.subnets]))
        known = {f.name for f in fields(Machine)}
        machines = [Machine(**{k: v for k, v in m.items() if k in known}) for m in data["machines"]]
        self.machines = {m.system_id: m for m in machines}
        return True

    # -- default lab inventory ------------------------------------------------

    def seed(self, count: int = 12, zones=("az-1", "az-2", "az-3"), pools=("default", "compute"), seed: int = 5240):
        """``count`` Ready machines spread over ``zones`` and ``pools``, machine N on 127.0.2.N."""
        rng = random.Random(seed)
        made = []
        for n in range(1, count + 1):
            tags = ["ssd"] if n % 2 == 0 else ["hdd"]
            if n % 4 == 0:
                tags.append("gpu")
            cpu = 8 if n % 2 == 0 else 4
            if cpu >= 8:
                tags.append("large")
            made.append(self.add_machine(
                system_id=_rand_id(rng, self.machines), hostname=f"node-{n:02d}",
                ip=f"{NET}.{n}", mac=f"52:54:00:00:02:{n:02x}", zone=zones[(n - 1) % len(zones)],
                pool_name=pools[(n - 1) * len(pools) // count], cpu_count=cpu,
                memory=16384 if n % 3 == 0 else 8192, tags=tags,
            ))  # fmt: skip
        return made
