"""Shared test set-up: the collection on sys.path, and the lab on demand.

The collection is importable as ``ansible_collections.baremetal.capi`` through
a link ``build/ansible_collections/baremetal/capi`` -> the work tree.

Integration tests ask for lab services with ``lab.need("kube")``; a service
this test run started is stopped (by PID) when the run ends, one that was
already running is left as it was.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
_COLL = REPO / "build" / "ansible_collections" / "baremetal" / "capi"
if not _COLL.exists():
    _COLL.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.symlink(REPO, _COLL)
    except FileExistsError:
        pass
for path in (str(REPO / "build"), str(REPO)):
    if path not in sys.path:
        sys.path.insert(0, path)


class Lab:
    def __init__(self):
        from lab import config

        self.cfg = config.load()
        self.started: list[str] = []
        self.info: dict[str, dict] = {}

    def need(self, *names: str) -> Lab:
        import importlib

        for name in names:
            if name in self.info:
                continue
            svc = importlib.import_module(f"lab.services.{name}")
            if not svc.status(self.cfg).get("healthy"):
                svc.up(self.cfg)
                self.started.append(name)
            self.info[name] = svc.status(self.cfg)
        return self

    def stop_started(self):
        import importlib

        for name in reversed(self.started):
            importlib.import_module(f"lab.services.{name}").down(self.cfg)
        self.started.clear()


@pytest.fixture(scope="session")
def lab():
    the_lab = Lab()
    try:
        yield the_lab
    finally:
        if os.environ.get("BMCAPI_KEEP_LAB") != "1":
            the_lab.stop_started()
