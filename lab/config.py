"""Where the lab lives and which loopback ports it uses.

One lab per work tree (``<repo>/.lab`` unless ``BMCAPI_LAB_DIR`` says
otherwise); downloads and builds that do not depend on the work tree (the
Go-built Kubernetes binaries, the Ironic venv) are cached under the user's
cache dir so a second clone does not pay for them again.
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


@dataclass(frozen=True)
class LabConfig:
    root: Path = field(default_factory=lambda: Path(os.environ.get("BMCAPI_LAB_DIR", REPO / ".lab")))
    cache: Path = field(default_factory=_cache_root)
    ports: Ports = field(default_factory=Ports)
    host: str = "127.0.0.1"

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


def load() -> LabConfig:
    cfg = LabConfig()
    cfg.ensure()
    return cfg
