"""Tests that need a workload API server (the lab's kube-apiserver): moved here from tests/unit, which is hermetic.

They use the unit tests' object builders and worlds (tests/unit/capi, metal3_machine, remediation) and the
fixtures of workload_fixtures.py.
"""

import sys
from pathlib import Path

_UNIT = Path(__file__).resolve().parents[2] / "unit"
for _sub in ("capi", "metal3_machine", "remediation"):
    if str(_UNIT / _sub) not in sys.path:
        sys.path.insert(0, str(_UNIT / _sub))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from workload_fixtures import wkube, workload, workload_kubeconfig  # noqa: E402, F401
