"""The galaxy artifact: built from the work tree, it holds the collection and nothing else."""

from __future__ import annotations

import json
import os
import re
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
# Lab-only files and the repository's tooling (the lab's inventory, test runners, the doc generator, the
# molecule scenarios and their lab helpers, work in progress, the repository's ansible.cfg).
FORBIDDEN_TOP |= {".venv-core", ".hypothesis", "wip", "ansible.cfg", "Makefile", "requirements-dev.txt"}
FORBIDDEN_PATHS = (
    "inventory/lab",
    "tests/conftest.py",
    "tests/run_integration.sh",
    "tests/run_sanity.py",
    "tests/core_venvs.py",
    "docs/generate.py",
    "docs/lab.md",
    "extensions/molecule",
)


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
        or any(n == p or n.startswith(p + "/") for p in FORBIDDEN_PATHS)
    ]
    assert bad == []
    assert "CHANGELOG.rst" in names and "changelogs/changelog.yaml" in names
    with tarfile.open(artifact) as tar:
        manifest = json.load(tar.extractfile("MANIFEST.json"))["collection_info"]
        changelog = tar.extractfile("CHANGELOG.rst").read().decode()
    for link in ("repository", "issues", "documentation"):
        assert (manifest.get(link) or "").startswith("https://"), (link, manifest.get(link))
    assert f"v{version}" in changelog, "CHANGELOG.rst has no section for the release (antsibull-changelog release)"

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


def _requirements(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, spec = re.match(r"([A-Za-z0-9_.-]+)\s*(.*)", line).groups()
            out[name.lower()] = spec.replace(" ", "")
    return out


def test_ee_requirements_match_requirements_with_upper_bounds():
    """The EE installs what the collection is tested with: requirements.txt's packages and bounds, none open."""
    runtime = _requirements(ROOT / "requirements.txt")
    ee = _requirements(ROOT / "meta" / "ee-requirements.txt")
    assert ee == {k: v for k, v in runtime.items() if k != "ansible-core"}
    for name, spec in runtime.items():
        assert "<" in spec, f"{name}{spec}: no upper bound"
    ee_def = yaml.safe_load((ROOT / "awx" / "execution-environment.yml").read_text())
    deps = ee_def["dependencies"]
    # the EE's one ansible-core series, the newest that runs on its Python (3.11), within requirements.txt's
    assert deps["python_interpreter"]["python_path"] == "/usr/bin/python3.11"
    assert deps["ansible_core"]["package_pip"] == "ansible-core>=2.19,<2.20"
    assert runtime["ansible-core"] == ">=2.16,<2.22"


def test_every_named_tarball_and_image_tag_is_the_release():
    """The docs, awx/ and meta/ name the tarball and the EE image of galaxy.yml's version (a release bumps them)."""
    version = yaml.safe_load((ROOT / "galaxy.yml").read_text())["version"]
    named = re.compile(r"baremetal-capi-(\d+\.\d+\.\d+)\.tar\.gz|baremetal-capi-ee:(\d+\.\d+\.\d+)")
    files = [ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "awx").rglob("*"), *(ROOT / "meta").glob("*")]
    stale = [
        f"{path.relative_to(ROOT)}: {m.group(0)}"
        for path in files
        if path.is_file() and path.suffix in {".md", ".yml", ".yaml", ".sh", ".txt"}
        for m in named.finditer(path.read_text())
        if version not in m.groups()
    ]
    assert stale == [], f"galaxy.yml is {version}"
