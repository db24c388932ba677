"""One virtualenv per ansible-core the collection declares at its ends: the oldest and the newest.

The oldest is meta/runtime.yml's ``requires_ansible`` lower bound (``>=2.16.0``); requires_ansible has no upper
bound (none is known to break), so the newest is ``NEWEST``, the newest release series tested (a new series is
added by moving it, after tests/integration/e2e/test_ansible_core_versions.py passed on it).

Each ansible-core series runs its controller on its own Pythons (``CONTROLLER_PYTHONS``: 2.20 and 2.21 need 3.12
or newer, 2.16 runs on 3.10 to 3.12), so each venv is made with an interpreter of that range: the one running
this script (``make core-venvs``: the project venv's) when it is in the range, else the oldest found of
``python3.X`` on PATH, then pyenv's (``$PYENV_ROOT`` or ``~/.pyenv``: ``versions/3.X*/bin/python3.X``), the
pythons this project's machines and CI have (CI runs on a clean clone on the same kind of machine: Python 3.11
is the system's, 3.12.1 and 3.13.0 are pyenv's under /root/.pyenv/versions). None found fails naming the
versions wanted and where they were looked for.

Each venv gets that ansible-core release series and the collection's run-time requirements (requirements.txt),
pip-installed; tests/integration/e2e/test_ansible_core_versions.py runs the playbooks with them.
``make core-venvs`` (part of ``make integration``) builds what is missing; ``python tests/core_venvs.py --list``
prints the versions, ``--python`` each one's interpreter.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
ROOT = REPO / ".venv-core"

# the newest ansible-core release series the e2e test runs (requires_ansible has no upper bound)
NEWEST = "2.21"

# the controller Pythons of each ansible-core series (its release notes' support matrix), oldest first
CONTROLLER_PYTHONS = {
    "2.16": ("3.10", "3.11", "3.12"),
    "2.17": ("3.10", "3.11", "3.12"),
    "2.18": ("3.11", "3.12", "3.13"),
    "2.19": ("3.11", "3.12", "3.13"),
    "2.20": ("3.12", "3.13", "3.14"),
    "2.21": ("3.12", "3.13", "3.14"),
}


def declared() -> tuple[str, str]:
    """(oldest, newest) ansible-core minor versions: requires_ansible's lower bound, and NEWEST."""
    spec = yaml.safe_load((REPO / "meta" / "runtime.yml").read_text())["requires_ansible"]
    low = re.search(r">=\s*(\d+)\.(\d+)", spec)
    if not low:
        raise SystemExit(f"meta/runtime.yml: requires_ansible {spec!r} needs a lower bound")
    high = re.search(r"<\s*(\d+)\.(\d+)", spec)
    if high and (int(high[1]), int(high[2])) <= tuple(int(p) for p in NEWEST.split(".")):
        raise SystemExit(f"meta/runtime.yml: requires_ansible {spec!r} excludes the newest tested, {NEWEST}")
    return f"{low[1]}.{low[2]}", NEWEST


def python(version: str) -> Path:
    return ROOT / version / "bin" / "python"


def _pyenv_root() -> Path:
    return Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")


def candidates(py_version: str) -> list[Path]:
    """Interpreters that may be Python ``py_version``: on PATH first, then pyenv's, newest patch first."""
    found = []
    on_path = shutil.which(f"python{py_version}")
    if on_path:
        found.append(Path(on_path))
    versions = _pyenv_root() / "versions"
    if versions.is_dir():
        pyenv = [p for p in versions.iterdir() if re.fullmatch(rf"{re.escape(py_version)}\.\d+", p.name)]
        pyenv.sort(key=lambda p: int(p.name.rsplit(".", 1)[1]), reverse=True)
        found += [p / "bin" / f"python{py_version}" for p in pyenv]
    return found


def _version_of(interpreter: Path) -> str | None:
    try:
        got = subprocess.run(
            [str(interpreter), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    except OSError:
        return None
    return got.stdout.strip() if got.returncode == 0 else None


def interpreter(version: str) -> Path:
    """A Python that runs ansible-core ``version``'s controller: this one's version (the project venv's) when it
    does, else the oldest supported one found."""
    wanted = CONTROLLER_PYTHONS.get(version)
    if wanted is None:
        raise SystemExit(f"tests/core_venvs.py: no controller Pythons known for ansible-core {version}")
    mine = f"{sys.version_info[0]}.{sys.version_info[1]}"
    if mine in wanted:
        base = Path(getattr(sys, "_base_executable", sys.executable))
        if _version_of(base) == mine:
            return base
    for py_version in wanted:
        for path in candidates(py_version):
            if path.exists() and _version_of(path) == py_version:
                return path
    raise SystemExit(
        f"tests/core_venvs.py: ansible-core {version} needs Python {' or '.join(wanted)}; none found as"
        f" python3.X on PATH or under {_pyenv_root() / 'versions'}/3.X.*/bin"
    )


REPORT = "import sys; from ansible.release import __version__ as v; print(v, '%d.%d' % sys.version_info[:2])"


def _venv_reports(py: Path) -> tuple[str, str] | None:
    """(ansible-core version, Python X.Y) of a venv's python, or None when it cannot say."""
    got = subprocess.run([str(py), "-c", REPORT], capture_output=True, text=True)
    return tuple(got.stdout.split()) if got.returncode == 0 and len(got.stdout.split()) == 2 else None


def build(version: str) -> Path:
    """The venv of ``version`` (built when missing, or holding another series or Python); its python."""
    py = python(version)
    if py.exists():
        got = _venv_reports(py)
        if got and got[0].startswith(version + ".") and got[1] in CONTROLLER_PYTHONS.get(version, ()):
            return py
    base = interpreter(version)
    subprocess.run([str(base), "-m", "venv", "--clear", str(ROOT / version)], check=True)
    subprocess.run(
        [str(py), "-m", "pip", "install", "-q", "-r", str(REPO / "requirements.txt"), f"ansible-core=={version}.*"],
        check=True,
    )
    return py


if __name__ == "__main__":
    if sys.argv[1:] == ["--list"]:
        print(" ".join(declared()))
    elif sys.argv[1:] == ["--python"]:
        for v in declared():
            print(v, interpreter(v))
    else:
        for v in declared():
            print(v, build(v))
