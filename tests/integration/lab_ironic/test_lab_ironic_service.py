"""`python -m lab up|status|reset|down ironic` as a user runs them.

This runs a whole second `ironic` service in a lab folder of its own on free ports,
so bringing it down and resetting it disturbs no one using the shared lab. The CLI
is lab/__main__.py's `main`, run in a subprocess whose `config.load` returns that lab.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import openstack
import pytest

from lab import process
from lab.config import REPO, LabConfig, Ports
from lab.ironic import faults, hosts, iso
from lab.services import ironic as service

pytestmark = pytest.mark.timeout(1200)

HOSTS = 3

_CLI = """
import json, os, sys
from pathlib import Path
from lab import __main__ as cli, config
spec = json.loads(os.environ["TEST_LAB_CFG"])
cfg = config.LabConfig(root=Path(spec["root"]), cache=Path(spec["cache"]), ports=config.Ports(**spec["ports"]))
config.load = lambda: (cfg.ensure(), cfg)[1]
sys.exit(cli.main(sys.argv[1:]))
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def own_lab(tmp_path, monkeypatch, lab):
    lab.need("ironic")  # the shared one: its venv and Debian packages are then in place
    monkeypatch.setenv("BMCAPI_LAB_HOSTS", str(HOSTS))
    ports = Ports(
        ironic=_free_port(),
        sushy=_free_port(),
        bmc_proxy=_free_port(),
        images=_free_port(),
        mariadb=_free_port(),
        ipmi=_free_port(),  # the IPMI host's BMC (UDP): not the shared lab's
    )
    cfg = LabConfig(root=tmp_path / "lab", cache=lab.cfg.cache, ports=ports)
    cfg.ensure()
    spec = {"root": str(cfg.root), "cache": str(cfg.cache), "ports": ports.__dict__}

    def cli(*args: str) -> subprocess.CompletedProcess:
        env = dict(os.environ, TEST_LAB_CFG=json.dumps(spec), BMCAPI_LAB_HOSTS=str(HOSTS))
        return subprocess.run(
            [sys.executable, "-c", _CLI, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=900
        )

    try:
        yield cfg, cli
    finally:
        service.down(cfg)


def _alive(pids_started: dict[int, str | None]) -> dict[int, str | None]:
    """Those of the PIDs that still run the same process (not a recycled PID)."""
    return {pid: t for pid, t in pids_started.items() if t is not None and process._start_time(pid) == t}


def test_up_twice_status_reset_and_down_by_pid(own_lab):
    cfg, cli = own_lab
    result = cli("up", "ironic")
    assert result.returncode == 0, result.stdout + result.stderr
    first = service.status(cfg)
    assert first["healthy"], first

    result = cli("up", "ironic")
    assert result.returncode == 0, result.stdout + result.stderr
    info = json.loads(result.stdout.split(" ", 4)[-1])
    assert info["apt_installed"] == [] and info["hosts"] == HOSTS
    second = service.status(cfg)
    # the second `up` started nothing new
    assert {n: s["pids"] for n, s in second["services"].items()} == {n: s["pids"] for n, s in first["services"].items()}

    result = cli("status", "ironic")
    assert result.returncode == 0 and "ironic: healthy" in result.stdout, result.stdout + result.stderr
    inventory = hosts.load_inventory(cfg)
    assert inventory == hosts.inventory(cfg)
    assert [h["name"] for h in inventory["hosts"]] == [f"host-0{i}" for i in range(1, HOSTS + 1)]
    assert inventory["hosts"][0]["bmc"]["address"].startswith(
        f"redfish-virtualmedia+http://127.0.0.1:{cfg.ports.bmc_proxy}/redfish/v1/Systems/"
    )

    # dirty it: an Ironic node with its system powered on, a fault set
    host = inventory["hosts"][0]
    bm = openstack.connect(auth_type="none", baremetal_endpoint_override=inventory["ironic"]["url"]).baremetal
    node = bm.create_node(
        name="dirty",
        driver="redfish",
        driver_info={
            "redfish_address": f"http://127.0.0.1:{cfg.ports.bmc_proxy}",
            "redfish_system_id": f"/redfish/v1/Systems/{host['uuid']}",
            "redfish_username": hosts.BMC_USERNAME,
            "redfish_password": hosts.BMC_PASSWORD,
        },
    )
    bm.set_node_provision_state(node.id, "manage", wait=True, timeout=300)
    bm.set_node_power_state(node.id, "power on")
    bm.wait_for_node_power_state(node.id, "power on", timeout=120)
    assert iso.bmc_get(cfg, f"/redfish/v1/Systems/{host['uuid']}")["PowerState"] == "On"
    faults.set_fault(cfg, host["uuid"], delay=1)

    result = cli("reset", "ironic")
    assert result.returncode == 0, result.stdout + result.stderr
    assert list(bm.nodes()) == []
    assert faults.get(cfg) == {}
    for h in inventory["hosts"]:
        assert iso.bmc_get(cfg, f"/redfish/v1/Systems/{h['uuid']}")["PowerState"] == "Off"
        assert not any(m["Inserted"] for m in iso.virtual_media(cfg, h["uuid"]).values())
    after_reset = service.status(cfg)
    assert after_reset["healthy"]
    # nothing reinstalled or restarted but the emulator
    for name, st in first["services"].items():
        if name != service.SUSHY:
            assert after_reset["services"][name]["pid"] == st["pid"], name

    every_pid = [pid for st in after_reset["services"].values() for pid in st["pids"]]
    assert len(every_pid) >= len(service.PROCESSES)
    started = {pid: process._start_time(pid) for pid in every_pid}
    result = cli("down", "ironic")
    assert result.returncode == 0, result.stdout + result.stderr
    assert _alive(started) == {}
    for port in (cfg.ports.ironic, cfg.ports.sushy, cfg.ports.bmc_proxy, cfg.ports.images, cfg.ports.mariadb):
        assert not process.port_open(cfg.host, port), port
    assert process.running(cfg) == {}
    result = cli("status", "ironic")
    assert result.returncode == 1 and "ironic: NOT healthy" in result.stdout
