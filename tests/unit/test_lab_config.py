"""The lab's ports from one base port per lab dir (two labs side by side), remembered in the lab dir."""

from __future__ import annotations

import dataclasses

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
