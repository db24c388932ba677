"""Bring a lab up: the one way every path starts it (``python -m lab up``, ``make demo``, the tests' fixture).

The inventories (``inventory/lab``), the molecule scenarios and the tests read files that no service keeps as
its own state: ``<lab>/inventory/lab.json`` (loopback prefix, MAAS and node simulator URLs) and
``<lab>/inventory/ironic.json`` + ``clouds.yaml`` (Ironic's URL, the hosts, the images). ``prepare`` writes all
of them from the lab's configuration alone, before and whether or not a service is started, so a lab whose
services already run and whose files were removed gets them back.
"""

from __future__ import annotations

import importlib
import time

from lab import addresses, process
from lab.config import LabConfig
from lab.ironic import hosts


def prepare(cfg: LabConfig) -> None:
    """Every file of the lab that a playbook, inventory or scenario reads and no service owns."""
    cfg.ensure()
    addresses.write_lab_json(cfg)
    hosts.write_inventory(cfg)


def service(name: str):
    return importlib.import_module(f"lab.services.{name}")


def start(cfg: LabConfig, name: str, *, always: bool = False) -> tuple[dict, bool]:
    """Service ``name`` up (after ``prepare``): ``up`` when it is not healthy (or ``always``: ``up`` is idempotent
    and applies a changed configuration), never over a port another lab holds. Returns (what ``up`` said, or the
    status of a service that was already healthy; whether this call started a process)."""
    prepare(cfg)
    svc = service(name)
    healthy = svc.status(cfg).get("healthy")
    if healthy and not always:
        return svc.status(cfg), False
    if not healthy:
        process.refuse_foreign_ports(cfg, name)  # a healthy service is this lab's own
    before = process.running(cfg)
    info = svc.up(cfg) or {}
    # a health check that timed out under load (the service ran all along) started nothing
    started = bool(set(process.running(cfg).items()) - set(before.items()))
    return info, started


def up(cfg: LabConfig, names, log=print) -> dict:
    """``names`` up in order, each announced and timed through ``log``; their status."""
    info = {}
    for name in names:
        t0 = time.monotonic()
        if not service(name).status(cfg).get("healthy"):
            # a first start installs (the Ironic venv, Debian packages) or builds (the kube binaries) for minutes
            log(f"lab: starting {name} ...")
        _said, started = start(cfg, name)
        if started:
            log(f"lab: {name} up in {time.monotonic() - t0:.0f}s")
        info[name] = service(name).status(cfg)
    return info
