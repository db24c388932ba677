"""Fixtures for the Metal3Machine tests: the Cluster API core test helpers (tests/unit/capi) on sys.path."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "capi"))

from capi_fixtures import workload, workload_kubeconfig  # noqa: E402, F401
