"""A lab never starts beside a service on its ports that it did not start (issue 20: "make test never talks to a
lab it did not start"): ``python -m lab up`` and the tests' lab fixture refuse, naming the port, the field and
the process; the lab's own processes on its ports are no reason to refuse. No lab needed: a lab dir of the test's
own, a listener of this test process, and a lab process of that dir."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from lab import config, process
from lab.config import REPO
from tests.integration.net import free_port_base


@pytest.fixture
def cfg(tmp_path):
    cfg = config.LabConfig(root=tmp_path / "lab", ports=config.Ports.from_base(free_port_base()))
    cfg.ensure()
    yield cfg
    for name in process.running(cfg):
        process.stop(cfg, name)


def test_a_listener_the_lab_did_not_start_is_refused_by_name(cfg):
    port = cfg.ports.maas
    with socket.socket() as other:
        other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        other.bind(("127.0.0.1", port))
        other.listen()
        assert process.foreign_listeners(cfg, config.SERVICE_PORTS["kube"]) == []  # not a kube port
        assert process.foreign_listeners(cfg, ["maas"]) == [f"{port} (maas): pid {os.getpid()} ({_comm()})"]
        with pytest.raises(process.LabError, match=rf"{port} \(maas\): pid {os.getpid()} .*BMCAPI_LAB_PORT_BASE"):
            process.refuse_foreign_ports(cfg, "maas")
        # python -m lab up: refused before anything is started
        env = dict(os.environ, BMCAPI_LAB_DIR=str(cfg.root), BMCAPI_LAB_PORT_BASE=str(cfg.ports.etcd_client))
        proc = subprocess.run([sys.executable, "-m", "lab", "up", "maas"], cwd=REPO, env=env, capture_output=True,
                              text=True, timeout=120)  # fmt: skip
        assert proc.returncode == 1 and f"maas: not started: port(s) of the lab in {cfg.root}" in proc.stderr, proc
        # the base the test found free came from the kernel's ephemeral range, as port 0 binds do: said so
        if config.ephemeral_ports(cfg):
            assert "of this lab are in the kernel's ephemeral port range" in proc.stderr, proc.stderr
        assert process.running(cfg) == {}


def test_the_labs_own_process_on_its_port_is_no_reason_to_refuse(cfg):
    port = cfg.ports.node_simulator
    argv = [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(port)]
    pid = process.start(cfg, "ports-test", argv, ready=lambda: process.port_open("127.0.0.1", port), timeout=30)
    assert process.running(cfg) == {"ports-test": pid}
    assert process.foreign_listeners(cfg, ["node_simulator"]) == []
    process.refuse_foreign_ports(cfg, "nodesim")
    process.stop(cfg, "ports-test")
    assert not process.port_open("127.0.0.1", port)


def _comm() -> str:
    with open(f"/proc/{os.getpid()}/comm", encoding="utf-8") as fh:
        return fh.read().strip()
