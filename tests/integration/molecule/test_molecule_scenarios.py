"""The molecule scenarios of extensions/molecule, run as a user runs them, with the lab they need up.

    PATH=$PWD/.venv/bin:$PATH molecule test -s <scenario>      # from the collection root

Each scenario converges a small cluster (1 control plane + 1 worker), checks idempotence, verifies the real
state (store, Ironic or the MAAS simulator, the workload API) and deprovisions it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
SCENARIOS = {
    "metal3": ("kube", "ironic", "nodesim"),
    "maas": ("kube", "maas", "nodesim"),
    "remediation": ("kube", "maas", "nodesim"),
}


@pytest.mark.timeout(2400)
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_molecule_scenario(lab, scenario):
    lab.need(*SCENARIOS[scenario])
    bin_dir = str(Path(sys.executable).parent)
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ.get('PATH', '')}", ANSIBLE_FORCE_COLOR="0", PY_COLORS="0")
    proc = subprocess.run(
        [str(Path(bin_dir) / "molecule"), "test", "-s", scenario],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=2300,
    )
    out = proc.stdout + proc.stderr
    log = lab.cfg.root / "logs" / f"molecule-{scenario}.log"  # the whole run: the tail below may be cleanup only
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(out)
    failures = [line for line in out.splitlines() if line.startswith(("fatal:", "failed:")) or "FAILED!" in line]
    assert proc.returncode == 0, "\n".join([f"whole output: {log}", *failures[-10:], out[-6000:]])
