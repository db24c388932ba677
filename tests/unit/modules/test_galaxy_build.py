"""The galaxy artifact: built from the work tree, it holds the collection and nothing else."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent

# Anything under these must never ship: the lab, its state, build and test output, caches, venvs.
FORBIDDEN_TOP = {"lab", ".lab", "build", ".venv", "venv", ".ansible", ".ci", "bench", "bench-results", ".git"}
FORBIDDEN_PARTS = {"__pycache__", ".pytest_cache", ".ruff_cache", "output"}


def test_build_ships_only_the_collection(tmp_path):
    out = tmp_path / "dist"
    subprocess.run(
        [str(BIN / "ansible-galaxy"), "collection", "build", "--output-path", str(out), str(ROOT)],
        check=True,
        capture_output=True,
    )
    version = yaml.safe_load((ROOT / "galaxy.yml").read_text())["version"]
    artifact = out / f"baremetal-capi-{version}.tar.gz"
    with tarfile.open(artifact) as tar:
        names = tar.getnames()
    assert "plugins/modules/object.py" in names and "meta/runtime.yml" in names and "LICENSE" in names
    bad = [
        n
        for n in names
        if n.split("/")[0] in FORBIDDEN_TOP
        or FORBIDDEN_PARTS & set(n.split("/"))
        or n.endswith((".pyc", ".db", ".db-wal", ".db-shm", ".tar.gz"))
        or n.startswith(("tests/unit", "tests/integration", "tests/output"))
    ]
    assert bad == []

    # Installed, ansible-doc lists every module of the tree.  --force, and away from
    # the work tree: ansible-galaxy otherwise finds the collection already "installed".
    subprocess.run(
        [str(BIN / "ansible-galaxy"), "collection", "install", "--force", "-p", str(tmp_path / "coll"), str(artifact)],
        check=True,
        capture_output=True,
        cwd=tmp_path,
    )
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(tmp_path / "coll"))
    listing = subprocess.run(
        [str(BIN / "ansible-doc"), "-l", "baremetal.capi"],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    ).stdout
    listed = {line.split()[0] for line in listing.splitlines() if line.startswith("baremetal.capi.")}
    shipped = {f"baremetal.capi.{n.split('/')[-1][:-3]}" for n in names if n.startswith("plugins/modules/")}
    assert {"baremetal.capi.object", "baremetal.capi.object_info"} <= listed
    assert listed == shipped
