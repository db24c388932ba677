"""`python -m lab up|status|reset|down ironic` as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from lab import process
from lab.config import REPO
from lab.ironic import faults, iso
from lab.services import ironic as service

pytestmark = pytest.mark.timeout(1200)


def _lab(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "lab", *args], cwd=REPO, capture_output=True, text=True, timeout=900, check=False
    )


def _start_times(pids: list[int]) -> dict[int, str | None]:
    return {pid: process._start_time(pid) for pid in pids}


def test_reset_returns_hosts_to_fresh(ironic):
    cfg = ironic.cfg
    host = ironic.host(6)
    node = ironic.register_redfish(host)
    ironic.baremetal.set_node_provision_state(node.id, "manage")
    ironic.wait(node.id, "manageable")
    ironic.baremetal.set_node_power_state(node.id, "power on")
    ironic.baremetal.wait_for_node_power_state(node.id, "power on", timeout=120)
    assert iso.bmc_get(cfg, f"/redfish/v1/Systems/{host['uuid']}")["PowerState"] == "On"
    faults.set_fault(cfg, host["uuid"], delay=1)
    pids_before = {name: s["pid"] for name, s in service.status(cfg)["services"].items()}

    result = _lab("reset", "ironic")
    assert result.returncode == 0, result.stdout + result.stderr

    assert list(ironic.baremetal.nodes()) == []
    assert faults.get(cfg) == {}
    for h in ironic.inventory["hosts"]:
        assert iso.bmc_get(cfg, f"/redfish/v1/Systems/{h['uuid']}")["PowerState"] == "Off"
    media = iso.virtual_media(cfg, host["uuid"])
    assert not any(m["Inserted"] for m in media.values())
    # nothing was reinstalled or restarted but the emulator
    after = service.status(cfg)
    assert after["healthy"]
    for name, pid in pids_before.items():
        if name != service.SUSHY:
            assert after["services"][name]["pid"] == pid, name


def test_up_twice_status_and_down_by_pid(lab, ironic_inventory):
    cfg = lab.cfg
    before = service.status(cfg)
    assert before["healthy"], before

    result = _lab("up", "ironic")
    assert result.returncode == 0, result.stdout + result.stderr
    again = service.status(cfg)
    assert again["healthy"]
    # the second `up` started nothing new
    assert {n: s["pids"] for n, s in again["services"].items()} == {n: s["pids"] for n, s in before["services"].items()}

    result = _lab("status", "ironic")
    assert result.returncode == 0 and "ironic: healthy" in result.stdout, result.stdout + result.stderr

    every_pid = [pid for s in again["services"].values() for pid in s["pids"]]
    assert len(every_pid) >= len(service.PROCESSES)
    started = _start_times(every_pid)
    result = _lab("down", "ironic")
    assert result.returncode == 0, result.stdout + result.stderr
    # gone, or the PID now belongs to some other process
    assert {pid: t for pid, t in _start_times(every_pid).items() if t is not None and t == started[pid]} == {}
    for port in (cfg.ports.ironic, cfg.ports.sushy, cfg.ports.bmc_proxy, cfg.ports.images, cfg.ports.mariadb):
        assert not process.port_open(cfg.host, port), port
    result = _lab("status", "ironic")
    assert result.returncode == 1 and "NOT healthy" in result.stdout

    # and back, for whatever runs next: state kept, nothing reinstalled
    result = _lab("up", "ironic")
    assert result.returncode == 0, result.stdout + result.stderr
    info = json.loads(result.stdout.split(" ", 4)[-1])
    assert info["apt_installed"] == []
    assert service.status(cfg)["healthy"]
    inventory = json.loads((cfg.root / "inventory" / "ironic.json").read_text())
    assert inventory == ironic_inventory
