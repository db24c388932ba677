"""The MAAS simulator (lab/maas_sim) as a lab service.

One process on 127.0.0.1:``cfg.ports.maas`` (HTTP) and ``cfg.ports.maas_tls`` (HTTPS, a certificate from the
lab CA in ``cfg.data("maas")/tls/ca.pem``), started and stopped by PID. The
admin API key (``consumer:token:secret``) is made once and kept in
``cfg.data("maas")/api_key`` (mode 0600) so tests and playbooks read it from
there; the admin password for the login flow is in ``.../password``.

Environment knobs: ``BMCAPI_MAAS_SNAPSHOT=<path>`` keeps state across restarts
in that JSON file (default: fresh state every start); ``BMCAPI_MAAS_TIMINGS``
is JSON for the timed transitions, e.g. ``{"deploy": 3, "release": 1}``.
"""

from __future__ import annotations

import os
import secrets
import string
import sys
from pathlib import Path

from lab import process
from lab.config import REPO, LabConfig

NAME = "maas"


def url(cfg: LabConfig) -> str:
    """The MAAS URL clients are given (python-libmaas appends api/2.0/)."""
    return f"http://{cfg.host}:{cfg.ports.maas}/MAAS/"


def tls_port(cfg: LabConfig) -> int:
    """The HTTPS port, a field of its own in lab/config.py (``maas + 1`` was the node simulator's port under a
    port base)."""
    return cfg.ports.maas_tls


def tls_url(cfg: LabConfig) -> str:
    """The same API over HTTPS, with a certificate from the lab's CA (``ca_file``)."""
    return f"https://{cfg.host}:{tls_port(cfg)}/MAAS/"


def tls_files(cfg: LabConfig) -> tuple[Path, Path, Path]:
    """(CA, server certificate, server key), made once per lab dir."""
    from lab.maas_sim import tls

    return tls.make_server_cert(cfg.data(NAME) / "tls", [cfg.host, "localhost"])


def api_key_file(cfg: LabConfig) -> Path:
    return cfg.data(NAME) / "api_key"


def _secret_file(path: Path, make) -> str:
    if not path.exists():
        path.write_text(make() + "\n")
        path.chmod(0o600)
    return path.read_text().strip()


def _random(n: int) -> str:
    alphabet = string.ascii_letters + string.digits
    return "".join(secrets.choice(alphabet) for _ in range(n))


def api_key(cfg: LabConfig) -> str:
    return _secret_file(api_key_file(cfg), lambda: f"{_random(18)}:{_random(18)}:{_random(32)}")


def password(cfg: LabConfig) -> str:
    return _secret_file(cfg.data(NAME) / "password", lambda: _random(16))


def _python() -> str:
    venv = REPO / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def _healthy(cfg: LabConfig) -> bool:
    return process.http_ok(url(cfg) + "api/2.0/version/")


def up(cfg: LabConfig) -> dict:
    if process.pid_of(cfg, NAME) is None and process.port_open(cfg.host, cfg.ports.maas):
        raise process.LabError(f"port {cfg.host}:{cfg.ports.maas} is taken by something that is not the lab's MAAS")
    argv = [_python(), "-m", "lab.maas_sim", "--host", cfg.host, "--port", str(cfg.ports.maas),
            "--api-key", api_key(cfg), "--password", password(cfg)]  # fmt: skip
    if process.port_open(cfg.host, tls_port(cfg)) and process.pid_of(cfg, NAME) is None:
        raise process.LabError(f"port {cfg.host}:{tls_port(cfg)} is taken by something that is not the lab's MAAS")
    _ca, cert, key = tls_files(cfg)
    argv += ["--tls-port", str(tls_port(cfg)), "--tls-cert", str(cert), "--tls-key", str(key)]
    if os.environ.get("BMCAPI_MAAS_SNAPSHOT"):
        argv += ["--snapshot", os.environ["BMCAPI_MAAS_SNAPSHOT"]]
    if os.environ.get("BMCAPI_MAAS_TIMINGS"):
        argv += ["--timings", os.environ["BMCAPI_MAAS_TIMINGS"]]
    env = {"PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "BMCAPI_MAAS_SIM_NET": cfg.net(2)}  # the machines' subnet: this lab's 127.A.2.0/24  # fmt: skip
    process.start(cfg, NAME, argv, env=env, cwd=REPO, ready=lambda: _healthy(cfg), timeout=30)
    return status(cfg)


def down(cfg: LabConfig) -> None:
    process.stop(cfg, NAME)


def status(cfg: LabConfig) -> dict:
    return {
        "healthy": process.pid_of(cfg, NAME) is not None and _healthy(cfg),
        "pid": process.pid_of(cfg, NAME),
        "url": url(cfg),
        "api_key_file": str(api_key_file(cfg)),
        "api_key": api_key(cfg),
        "username": "admin",
        "control_url": url(cfg) + "_sim/",
        "tls_url": tls_url(cfg),
        "ca_file": str(tls_files(cfg)[0]),
    }


def reset(cfg: LabConfig) -> None:
    """Stop it and forget its key and any snapshot."""
    down(cfg)
    for name in ("api_key", "password"):
        (cfg.data(NAME) / name).unlink(missing_ok=True)
    snapshot = os.environ.get("BMCAPI_MAAS_SNAPSHOT")
    if snapshot:
        Path(snapshot).unlink(missing_ok=True)
