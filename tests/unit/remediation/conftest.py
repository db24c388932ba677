"""The remediation tests' helpers (world.py) sit beside them; the Cluster API core test objects on sys.path."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "capi"))
