"""Two labs on one machine: a second lab (its own dir, port base and loopback prefix) runs its MAAS simulator
beside this run's lab. Each answers on its own port with its own API key, and hands its machines addresses of its
own 127.A.2.0/24, so two labs' clusters never meet on an address; the second lab goes down by PID."""

from __future__ import annotations

import dataclasses
import os
import uuid

import pytest

from lab import config, process
from lab.services import maas as maas_svc
from tests.integration.maas_sim.conftest import Sim
from tests.integration.net import free_port_base


@pytest.fixture
def second_lab(lab, tmp_path, monkeypatch):
    ours = lab.cfg.loopback
    other = "127.77" if ours != "127.77" else "127.78"
    monkeypatch.setenv("BMCAPI_LAB_DIR", str(tmp_path / "lab-b"))
    monkeypatch.setenv("BMCAPI_LAB_PORT_BASE", str(free_port_base()))
    monkeypatch.setenv("BMCAPI_LAB_LOOPBACK", other)
    monkeypatch.delenv("BMCAPI_MAAS_SNAPSHOT", raising=False)
    cfg = config.load()
    try:
        yield cfg, maas_svc.up(cfg)
    finally:
        maas_svc.down(cfg)


def test_a_second_lab_runs_beside_this_one_on_its_own_ports_and_addresses(lab, second_lab):
    lab.need("maas")
    mine = Sim(lab.info["maas"])
    cfg_b, info_b = second_lab
    theirs = Sim(info_b)
    assert info_b["healthy"] and info_b["url"] != mine.url and info_b["api_key"] != mine.apikey
    assert set(dataclasses.asdict(cfg_b.ports).values()).isdisjoint(dataclasses.asdict(lab.cfg.ports).values())
    tag = f"t{uuid.uuid4().hex[:8]}"
    [a] = mine.seed({"cpu_count": 2, "memory": 4096}, tag=tag)
    [b] = theirs.seed({"cpu_count": 2, "memory": 4096}, tag=tag)
    assert a["ip"].startswith(lab.cfg.net(2) + ".") and b["ip"].startswith(cfg_b.net(2) + "."), (a["ip"], b["ip"])
    # the MAAS API of each says the same: its subnet and its machine's addresses
    subnets_b = theirs.call("GET", "subnets/").json()
    assert [s["cidr"] for s in subnets_b] == [f"{cfg_b.net(2)}.0/24"]
    assert mine.call("GET", "subnets/").json()[0]["cidr"] == f"{lab.cfg.net(2)}.0/24"
    # each lab knows only its own machine, and refuses the other's key
    assert tag in theirs.state(b["system_id"])["tags"]
    assert theirs.call("GET", f"machines/{a['system_id']}/").status_code == 404
    assert theirs.call("GET", "machines/", headers={"Authorization": mine.auth_header()}, auth=False).status_code in (
        401,
        403,
    )
    pid = process.pid_of(cfg_b, maas_svc.NAME)
    assert pid and os.path.exists(f"/proc/{pid}")
