"""Where the lab lives and which loopback ports it uses.

One lab per work tree (``<repo>/.lab`` unless ``BMCAPI_LAB_DIR`` says
otherwise); downloads and builds that do not depend on the work tree (the
Go-built Kubernetes binaries, the Ironic venv) are cached under the user's
cache dir so a second clone does not pay for them again.

Ports: the defaults below, or, with a base port, ``base + offset`` for each
service (``Ports.from_base``). The base comes from ``BMCAPI_LAB_PORT_BASE`` and
is remembered in the lab dir (``<lab>/port-base``), so every later command on
that lab dir uses the same ports without the variable: two labs (two clones,
or CI beside a developer) run side by side with two bases.

Addresses: everything a lab puts on loopback besides its services (the Ironic
hosts' 127.0.1.N, the MAAS machines' 127.0.2.N, the workload API endpoints and
the tests' host addresses) is in the lab's own ``127.A.0.0/16``: ``A`` comes from
``BMCAPI_LAB_LOOPBACK`` (``127.A``, default ``127.0``) and is remembered in
``<lab>/loopback`` the same way. ``LabConfig.net(3)`` is ``127.A.3``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(os.environ.get("BMCAPI_CACHE_DIR", os.path.join(base, "baremetal-capi")))


@dataclass(frozen=True)
class Ports:
    etcd_client: int = 23790
    etcd_peer: int = 23800
    kube_apiserver: int = 26443
    kube_controller_manager: int = 26257
    ironic: int = 26385
    sushy: int = 28000
    bmc_proxy: int = 28001
    images: int = 28080
    mariadb: int = 23306
    maas: int = 25240
    node_simulator: int = 25300
    # the MAAS simulator's HTTPS port; its own field (it was maas + 1, which a base port made node_simulator's)
    maas_tls: int = 25241
    # UDP: the IPMI BMC (virtualbmc) of the lab's IPMI host (lab/ironic/vbmc.py), on its own loopback address
    ipmi: int = 26623

    @classmethod
    def from_base(cls, base: int) -> Ports:
        """Every port at ``base + its index`` in the field order (13 consecutive ports)."""
        names = [f for f in cls.__dataclass_fields__]
        if not 1024 <= base <= 65535 - len(names):
            raise ValueError(f"BMCAPI_LAB_PORT_BASE {base}: between 1024 and {65535 - len(names)}")
        return cls(**{name: base + i for i, name in enumerate(names)})


# The ports each service of ``python -m lab`` listens on (its processes': etcd, MariaDB, sushy-tools ...).
SERVICE_PORTS = {
    "kube": ("etcd_client", "etcd_peer", "kube_apiserver", "kube_controller_manager"),
    "ironic": ("ironic", "sushy", "bmc_proxy", "images", "mariadb"),
    "maas": ("maas",),
    "nodesim": ("node_simulator",),
}


@dataclass(frozen=True)
class LabConfig:
    root: Path = field(default_factory=lambda: Path(os.environ.get("BMCAPI_LAB_DIR", REPO / ".lab")))
    cache: Path = field(default_factory=_cache_root)
    ports: Ports = field(default_factory=Ports)
    host: str = "127.0.0.1"
    loopback: str = "127.0"

    def net(self, third: int) -> str:
        """``127.A.<third>``: a /24 of this lab's loopback addresses (append ``.N`` for an address)."""
        if not 0 <= int(third) <= 255:
            raise ValueError(f"third octet {third} out of range")
        return f"{self.loopback}.{int(third)}"

    @property
    def run(self) -> Path:
        """PID files."""
        return self.root / "run"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    def data(self, service: str) -> Path:
        """A service's own data folder, created on first use."""
        path = self.root / "data" / service
        path.mkdir(parents=True, exist_ok=True)
        return path

    def ensure(self) -> None:
        for path in (self.root, self.run, self.logs, self.cache):
            path.mkdir(parents=True, exist_ok=True)


PORT_BASE_FILE = "port-base"


def _ports(root: Path) -> Ports:
    remembered = root / PORT_BASE_FILE
    given = os.environ.get("BMCAPI_LAB_PORT_BASE", "").strip()
    if given:
        base = int(given)
        ports = Ports.from_base(base)
        root.mkdir(parents=True, exist_ok=True)
        if not remembered.exists() or remembered.read_text().strip() != str(base):
            remembered.write_text(f"{base}\n")
        return ports
    if remembered.exists():
        return Ports.from_base(int(remembered.read_text().strip()))
    return Ports()


LOOPBACK_FILE = "loopback"


def parse_loopback(text: str) -> str:
    """``127.A`` (``A`` 0-255); ``127.A.0.0/16`` and ``A`` alone are taken too."""
    value = text.strip().split("/", 1)[0]
    parts = value.split(".")
    if len(parts) == 1:
        parts = ["127", parts[0]]
    parts = parts[:2] if len(parts) == 4 and parts[2:] == ["0", "0"] else parts
    if len(parts) != 2 or parts[0] != "127" or not parts[1].isdigit() or not 0 <= int(parts[1]) <= 255:
        raise ValueError(f"BMCAPI_LAB_LOOPBACK {text!r}: give 127.A with A between 0 and 255 (the lab's 127.A.0.0/16)")
    return f"127.{int(parts[1])}"


def _loopback(root: Path) -> str:
    remembered = root / LOOPBACK_FILE
    given = os.environ.get("BMCAPI_LAB_LOOPBACK", "").strip()
    if given:
        value = parse_loopback(given)
        root.mkdir(parents=True, exist_ok=True)
        if not remembered.exists() or remembered.read_text().strip() != value:
            remembered.write_text(f"{value}\n")
        return value
    if remembered.exists():
        return parse_loopback(remembered.read_text())
    return "127.0"


def ephemeral_ports(cfg: LabConfig) -> tuple[int, int, list[int]] | None:
    """(low, high, the lab's ports in it) when some of the lab's ports are in the kernel's ephemeral range
    (``net.ipv4.ip_local_port_range``): any outgoing connection may take one of them as its source port, and
    while it (or its TIME_WAIT, a minute) holds it, the lab's service cannot bind it ("address already in use")."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range", encoding="ascii") as fh:
            low, high = (int(x) for x in fh.read().split())
    except (OSError, ValueError):
        return None
    inside = sorted(p for p in vars(cfg.ports).values() if low <= p <= high)
    return (low, high, inside) if inside else None


def load() -> LabConfig:
    root = Path(os.environ.get("BMCAPI_LAB_DIR", REPO / ".lab"))
    cfg = LabConfig(root=root, ports=_ports(root), loopback=_loopback(root))
    cfg.ensure()
    return cfg
