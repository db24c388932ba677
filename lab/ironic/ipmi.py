"""The IPMI BMCs of the lab's IPMI hosts: one virtualbmc process per host (lab/ironic/vbmc.py), and ipmitool.

``ironic-vbmc-<host>`` answers IPMI 2.0 (RMCP+) on UDP ``127.A.11.N:ports.ipmi`` (``hosts.ipmi_bmc``) with the lab's
BMC credentials, and acts on host N's machine in the Redfish emulator through the BMC proxy. It runs in
virtualbmc's own venv (``install.ensure_vbmc_venv``) with the work tree on its path, and is stopped by PID with the
rest of the ``ironic`` service. Every command it carries out is a line of ``events(cfg, host)``.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from lab import process
from lab.config import REPO, LabConfig
from lab.ironic import hosts, install

PREFIX = "ironic-vbmc-"


def name(host: hosts.Host) -> str:
    return PREFIX + host.name


def ipmi_hosts(cfg: LabConfig) -> list[hosts.Host]:
    return hosts.ipmi_hosts(net=cfg.net(1))


def names(cfg: LabConfig) -> list[str]:
    return [name(h) for h in ipmi_hosts(cfg)]


def _folder(cfg: LabConfig) -> Path:
    path = cfg.data("ironic") / "vbmc"
    path.mkdir(exist_ok=True)
    return path


def events_file(cfg: LabConfig, host: hosts.Host) -> Path:
    return _folder(cfg) / f"{host.name}.events.jsonl"


def events(cfg: LabConfig, host: hosts.Host) -> list[dict]:
    """What the host's BMC carried out, oldest first: {time, command, argument, result}."""
    try:
        lines = events_file(cfg, host).read_text().splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        try:
            out.append(json.loads(line))
        except ValueError:
            continue  # the line the BMC is writing now
    return out


def ipmitool(cfg: LabConfig, host: hosts.Host, *args: str, password: str | None = None, timeout: float = 30):
    """Run the real ipmitool against the host's BMC (lanplus, the lab credentials; the password through the
    environment, not the command line)."""
    address, port = hosts.ipmi_bmc(cfg, host)
    argv = [install.tool("ipmitool"), "-I", "lanplus", "-H", address, "-p", str(port), "-U", hosts.BMC_USERNAME]
    argv += ["-E", "-R", "1", "-N", "2", *args]
    env = dict(os.environ, IPMI_PASSWORD=hosts.BMC_PASSWORD if password is None else password)
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout, check=False)


def healthy(cfg: LabConfig, host: hosts.Host) -> bool:
    """The BMC answers a power status query (so its machine's Redfish side answers too)."""
    try:
        return ipmitool(cfg, host, "chassis", "power", "status", timeout=15).returncode == 0
    except (subprocess.TimeoutExpired, OSError, process.LabError):
        return False


def start(cfg: LabConfig, venv: Path, host: hosts.Host) -> int:
    address, port = hosts.ipmi_bmc(cfg, host)
    conf = _folder(cfg) / f"{host.name}.json"
    text = json.dumps(
        {
            "name": host.name,
            "address": address,
            "port": port,
            "username": hosts.BMC_USERNAME,
            "password": hosts.BMC_PASSWORD,
            # through the fault proxy: its faults and its count of resets (a reset is a new boot) cover IPMI too
            "system_url": f"http://{cfg.host}:{cfg.ports.bmc_proxy}/redfish/v1/Systems/{host.uuid}",
            "redfish_username": hosts.BMC_USERNAME,
            "redfish_password": hosts.BMC_PASSWORD,
            "events": str(events_file(cfg, host)),
        },
        indent=1,
    )
    if not conf.exists() or conf.read_text() != text:
        process.stop(cfg, name(host))  # another port or address: start again
        tmp = conf.with_name(conf.name + ".tmp")
        tmp.write_text(text)
        tmp.chmod(0o600)
        tmp.replace(conf)
    return process.start(
        cfg,
        name(host),
        [str(venv / "bin" / "python"), "-m", "lab.ironic.vbmc", "--config", str(conf)],
        cwd=REPO,
        env={"PYTHONPATH": str(REPO)},
        ready=lambda: healthy(cfg, host),
        timeout=60,
    )


def start_all(cfg: LabConfig, venv: Path) -> dict[str, int]:
    return {name(h): start(cfg, venv, h) for h in ipmi_hosts(cfg)}
