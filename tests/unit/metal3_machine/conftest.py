"""Fixtures for the Metal3Machine tests: the Cluster API core test helpers (tests/unit/capi) on sys.path."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "capi"))
