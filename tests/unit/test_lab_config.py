"""The lab's ports from one base port per lab dir (two labs side by side), remembered in the lab dir."""

from __future__ import annotations

import dataclasses
import re

import pytest

from lab import config


def test_default_ports_without_a_base(tmp_path, monkeypatch):
    monkeypatch.setenv("BMCAPI_LAB_DIR", str(tmp_path / "lab"))
    monkeypatch.delenv("BMCAPI_LAB_PORT_BASE", raising=False)
    assert config.load().ports == config.Ports()


def test_a_base_gives_every_port_and_is_remembered(tmp_path, monkeypatch):
    monkeypatch.setenv("BMCAPI_LAB_DIR", str(tmp_path / "a"))
    monkeypatch.setenv("BMCAPI_LAB_PORT_BASE", "31000")
    ports = config.load().ports
    values = list(dataclasses.asdict(ports).values())
    assert values == list(range(31000, 31000 + len(values)))
    from lab.services import maas

    # the MAAS simulator's HTTPS port is one of its own, not another service's (it was maas + 1: node_simulator's)
    others = {k: v for k, v in dataclasses.asdict(ports).items() if k != "maas_tls"}
    assert maas.tls_port(config.load()) not in others.values()
    assert (tmp_path / "a" / config.PORT_BASE_FILE).read_text().strip() == "31000"
    monkeypatch.delenv("BMCAPI_LAB_PORT_BASE")
    assert config.load().ports == ports  # a later command on the same lab dir, without the variable
    monkeypatch.setenv("BMCAPI_LAB_DIR", str(tmp_path / "b"))
    monkeypatch.setenv("BMCAPI_LAB_PORT_BASE", "32000")
    other = config.load().ports
    assert set(dataclasses.asdict(other).values()).isdisjoint(values)  # a second lab beside the first


def test_a_base_out_of_range_is_named(tmp_path, monkeypatch):
    monkeypatch.setenv("BMCAPI_LAB_DIR", str(tmp_path / "lab"))
    monkeypatch.setenv("BMCAPI_LAB_PORT_BASE", "65530")
    with pytest.raises(ValueError, match="BMCAPI_LAB_PORT_BASE 65530"):
        config.load()


def test_a_loopback_prefix_is_validated_and_remembered(tmp_path, monkeypatch):
    monkeypatch.setenv("BMCAPI_LAB_DIR", str(tmp_path / "lab"))
    monkeypatch.delenv("BMCAPI_LAB_LOOPBACK", raising=False)
    assert config.load().loopback == "127.0" and config.load().net(7) == "127.0.7"
    monkeypatch.setenv("BMCAPI_LAB_LOOPBACK", "127.42.0.0/16")
    assert config.load().loopback == "127.42"
    monkeypatch.delenv("BMCAPI_LAB_LOOPBACK")
    assert config.load().loopback == "127.42"  # remembered in the lab dir
    for bad in ("10.1", "127.256", "127.1.2"):
        monkeypatch.setenv("BMCAPI_LAB_LOOPBACK", bad)
        with pytest.raises(ValueError, match="BMCAPI_LAB_LOOPBACK"):
            config.load()


def test_two_labs_allocate_their_addresses_side_by_side(tmp_path, monkeypatch):
    """Two lab dirs, two port bases, two loopback prefixes: every address either lab hands out (its Ironic
    hosts, its MAAS machines' subnet, the workload endpoints its tests and the demo pick) is its own."""
    import random

    from lab import addresses
    from lab.ironic import hosts

    labs = {}
    for name, base, loop in (("a", 31000, "127.0"), ("b", 32000, "127.1")):
        monkeypatch.setenv("BMCAPI_LAB_DIR", str(tmp_path / name))
        monkeypatch.setenv("BMCAPI_LAB_PORT_BASE", str(base))
        monkeypatch.setenv("BMCAPI_LAB_LOOPBACK", loop)
        labs[name] = config.load()
    listening: set[tuple[str, int]] = set()  # what both labs' tests have started, interleaved

    def taken(host, port):
        return (host, port) in listening

    rand = random.Random(7)
    picked = {"a": set(), "b": set()}
    for _ in range(100):  # the two labs' tests pick endpoints at the same time
        for name, cfg in labs.items():
            for third in (5, 6, 9):
                host = addresses.free_endpoint(third, cfg=cfg, rand=rand, taken=taken)
                listening.add((host, 6443))
                picked[name].add(host)
    a, b = labs["a"], labs["b"]
    assert all(h.startswith("127.0.") for h in picked["a"]) and all(h.startswith("127.1.") for h in picked["b"])
    assert picked["a"].isdisjoint(picked["b"])
    ips = {n: {h.ip for h in hosts.hosts(12, cfg.net(1))} for n, cfg in labs.items()}
    assert ips["a"].isdisjoint(ips["b"]) and "127.1.1.3" in ips["b"]
    assert hosts.inventory(b)["hosts"][0]["ip"] == "127.1.1.1"
    assert addresses.lab_json(a)["loopback"] == "127.0" and addresses.lab_json(b)["maas_url"].endswith(":32009/MAAS/")
    assert addresses.lab_json(b)["nodesim_url"] == "http://127.0.0.1:32010/"
    assert addresses.here("127.0.6.34", b) == "127.1.6.34"
    assert {cfg.net(2) for cfg in labs.values()} == {"127.0.2", "127.1.2"}  # the MAAS simulators' subnets


def test_scenarios_and_inventories_take_the_lab_ports_from_the_lab():
    """No molecule scenario, inventory, AWX definition or playbook names a default lab port: a second lab (another
    port base) would have its tests talk to the first lab's services (the remediation scenario once did)."""
    defaults = {str(port) for port in dataclasses.asdict(config.Ports()).values()}
    found = []
    for top in ("extensions", "inventory", "awx", "playbooks", "roles"):
        for path in sorted((config.REPO / top).rglob("*")):
            if path.suffix not in (".yml", ".yaml", ".json", ".py", ".j2", ".cfg") or not path.is_file():
                continue
            for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                found += [f"{path.relative_to(config.REPO)}:{n}: {port}" for port in re.findall(r":(\d{4,5})\b", line)
                          if port in defaults]  # fmt: skip
    assert found == []
