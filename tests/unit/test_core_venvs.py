"""tests/core_venvs.py: which ansible-core series make test runs the playbooks on, and on which Python."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests import core_venvs


def test_the_oldest_is_requires_ansibles_lower_bound_and_the_newest_is_admitted():
    spec = yaml.safe_load((core_venvs.REPO / "meta" / "runtime.yml").read_text())["requires_ansible"]
    assert core_venvs.declared() == ("2.16", "2.21")
    from packaging.specifiers import SpecifierSet

    assert SpecifierSet(spec).contains("2.21.5") and not SpecifierSet(spec).contains("2.15.13")


def test_each_declared_series_has_its_controller_pythons():
    for version in core_venvs.declared():
        assert core_venvs.CONTROLLER_PYTHONS[version]
    assert core_venvs.CONTROLLER_PYTHONS["2.21"][0] == "3.12" and "3.11" not in core_venvs.CONTROLLER_PYTHONS["2.21"]


def _fake_python(folder: Path, version: str) -> Path:
    """An interpreter named python<version> that is this one (so it answers with this Python's version)."""
    folder.mkdir(parents=True)
    path = folder / f"python{version}"
    path.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    path.chmod(0o755)
    return path


def test_an_interpreter_of_the_series_range_is_chosen_from_path_or_pyenv(tmp_path, monkeypatch):
    mine = f"{sys.version_info[0]}.{sys.version_info[1]}"
    series = next(v for v, pys in core_venvs.CONTROLLER_PYTHONS.items() if mine in pys)
    monkeypatch.setattr(sys, "_base_executable", str(tmp_path / "gone"), raising=False)  # not this one, found
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path / "pyenv"))
    fake = _fake_python(tmp_path / "pyenv" / "versions" / f"{mine}.99" / "bin", mine)
    assert core_venvs.interpreter(series) == fake
    # a file of that name that is another Python is not taken
    other = next(v for v, pys in core_venvs.CONTROLLER_PYTHONS.items() if mine not in pys)
    for py in core_venvs.CONTROLLER_PYTHONS[other]:
        _fake_python(tmp_path / "pyenv" / "versions" / f"{py}.1" / "bin", py)
    with pytest.raises(SystemExit) as missing:
        core_venvs.interpreter(other)
    message = str(missing.value)
    assert f"ansible-core {other} needs Python {' or '.join(core_venvs.CONTROLLER_PYTHONS[other])}" in message
    assert str(tmp_path / "pyenv" / "versions") in message


def test_the_machines_pythons_serve_both_declared_series():
    """This kind of machine (and CI on it) has a Python for each: 3.11 for 2.16, pyenv's 3.12 for 2.21."""
    for version in core_venvs.declared():
        py = core_venvs.interpreter(version)
        got = subprocess.run([str(py), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
        assert got in core_venvs.CONTROLLER_PYTHONS[version], (version, py, got)
