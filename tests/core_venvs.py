"""One virtualenv per ansible-core the collection declares at its ends: the oldest and the newest.

meta/runtime.yml's ``requires_ansible`` (``>=2.16.0,<2.20.0``) names them: the lower bound's minor is the
oldest, the minor below the upper bound the newest. Each venv gets that ansible-core release series and the
collection's run-time requirements (requirements.txt), pip-installed; tests/integration/e2e/
test_ansible_core_versions.py runs the playbooks with them. ``make core-venvs`` (part of ``make integration``)
builds what is missing; ``python tests/core_venvs.py --list`` prints the versions.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
ROOT = REPO / ".venv-core"


def declared() -> tuple[str, str]:
    """(oldest, newest) ansible-core minor versions of meta/runtime.yml's requires_ansible."""
    spec = yaml.safe_load((REPO / "meta" / "runtime.yml").read_text())["requires_ansible"]
    low = re.search(r">=\s*(\d+)\.(\d+)", spec)
    high = re.search(r"<\s*(\d+)\.(\d+)", spec)
    if not low or not high:
        raise SystemExit(f"meta/runtime.yml: requires_ansible {spec!r} needs a lower and an upper bound")
    return f"{low[1]}.{low[2]}", f"{high[1]}.{int(high[2]) - 1}"


def python(version: str) -> Path:
    return ROOT / version / "bin" / "python"


def build(version: str) -> Path:
    """The venv of ``version`` (built when missing or holding another series); its python."""
    py = python(version)
    if py.exists():
        got = subprocess.run(
            [str(py), "-c", "from ansible.release import __version__; print(__version__)"],
            capture_output=True, text=True,
        )  # fmt: skip
        if got.returncode == 0 and got.stdout.startswith(version + "."):
            return py
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--clear", str(ROOT / version)], check=True)
    subprocess.run(
        [str(py), "-m", "pip", "install", "-q", "-r", str(REPO / "requirements.txt"), f"ansible-core=={version}.*"],
        check=True,
    )
    return py


if __name__ == "__main__":
    if sys.argv[1:] == ["--list"]:
        print(" ".join(declared()))
    else:
        for v in declared():
            print(v, build(v))
