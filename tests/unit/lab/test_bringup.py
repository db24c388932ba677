"""lab/bringup.py: every path that starts a lab writes the files the inventories and scenarios read.

``inventory/lab/group_vars/all.yml`` and the molecule scenarios read ``<lab>/inventory/lab.json`` and
``ironic.json``; ``make demo`` once failed on a fresh clone because only ``python -m lab up`` and the tests'
fixture wrote the first. Here an empty lab folder gets both from ``prepare`` alone (no service runs), and the
demo, the CLI and the tests' fixture all reach ``prepare``.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import yaml

from lab import bringup, config
from lab.config import REPO, LabConfig, Ports


def _cfg(tmp_path) -> LabConfig:
    return LabConfig(root=tmp_path / "lab", cache=tmp_path / "cache", ports=Ports.from_base(31000), loopback="127.7")


def test_an_empty_lab_folder_gets_every_file_the_inventories_read(tmp_path):
    cfg = _cfg(tmp_path)
    bringup.prepare(cfg)
    info = json.loads((cfg.root / "inventory" / "lab.json").read_text())
    assert info["loopback"] == "127.7" and info["maas_url"] == f"http://127.0.0.1:{cfg.ports.maas}/MAAS/"
    ironic = json.loads((cfg.root / "inventory" / "ironic.json").read_text())
    assert ironic["ironic"]["url"] == f"http://127.0.0.1:{cfg.ports.ironic}"
    assert ironic["images"]["boot_iso"].startswith(f"http://127.0.0.1:{cfg.ports.images}/")
    assert (cfg.root / "inventory" / "ironic.json").stat().st_mode & 0o077 == 0  # BMC credentials inside
    clouds = yaml.safe_load((cfg.root / "inventory" / "clouds.yaml").read_text())
    assert clouds["clouds"]["lab-ironic"]["baremetal_endpoint_override"] == ironic["ironic"]["url"]


def test_every_file_the_lab_inventory_looks_up_is_one_prepare_writes(tmp_path):
    """The lookups of inventory/lab and the molecule scenarios under <lab>/inventory: each written by prepare."""
    cfg = _cfg(tmp_path)
    bringup.prepare(cfg)
    sources = [REPO / "inventory" / "lab" / "group_vars" / "all.yml", *REPO.glob("extensions/molecule/*/molecule.yml")]
    read = set()
    for path in sources:
        text = path.read_text()
        read |= {part.split("'")[0] for part in text.split("lab_root ~ '/inventory/")[1:]}
    assert read >= {"lab.json", "ironic.json"}, read
    for name in read:
        assert (cfg.root / "inventory" / name).is_file(), name


def _calls(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {
        f"{node.func.value.id}.{node.func.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name)
    }


def test_the_demo_the_cli_and_the_tests_fixture_start_the_lab_through_bringup():
    """No path starts a service on its own (``svc.up``) past ``prepare``: each calls bringup."""
    for rel in ("lab/demo.py", "lab/__main__.py", "tests/conftest.py"):
        calls = _calls(REPO / rel)
        assert calls & {"bringup.up", "bringup.start", "bringup.prepare"}, rel
        assert not {c for c in calls if c.endswith(".up") and not c.startswith("bringup.")}, (rel, calls)


def test_config_load_of_an_empty_lab_folder_is_enough_for_prepare(tmp_path, monkeypatch):
    monkeypatch.setenv("BMCAPI_LAB_DIR", str(tmp_path / "fresh"))
    monkeypatch.setenv("BMCAPI_CACHE_DIR", str(tmp_path / "cache"))
    for name in ("BMCAPI_LAB_PORT_BASE", "BMCAPI_LAB_LOOPBACK"):
        monkeypatch.delenv(name, raising=False)
    cfg = config.load()
    bringup.prepare(cfg)
    assert json.loads((tmp_path / "fresh" / "inventory" / "lab.json").read_text())["loopback"] == "127.0"
