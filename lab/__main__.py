"""``python -m lab up|down|status|reset [service ...]``.

Each service is a module in ``lab.services`` with ``up(cfg)``, ``down(cfg)``,
``status(cfg) -> dict`` (with a ``healthy`` key) and ``reset(cfg)``; they are
started in ``ORDER`` and stopped in reverse.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time

from lab import config, process

# Start order; later services may use earlier ones.
ORDER = ["kube", "ironic", "maas", "nodesim"]


def _service(name: str):
    return importlib.import_module(f"lab.services.{name}")


def _available() -> list[str]:
    out = []
    for name in ORDER:
        try:
            _service(name)
        except ModuleNotFoundError as exc:
            if exc.name != f"lab.services.{name}":
                raise
            continue
        out.append(name)
    return out


# what the services report that must not reach a terminal or a CI log (the API key is in api_key_file)
SECRET_KEYS = frozenset({"api_key", "password", "token"})


def _printable(info: dict) -> str:
    return json.dumps({k: "<redacted>" if k in SECRET_KEYS else v for k, v in info.items()}, default=str)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab")
    parser.add_argument("action", choices=["up", "down", "status", "reset"])
    parser.add_argument("services", nargs="*", help="default: all")
    args = parser.parse_args(argv)
    cfg = config.load()
    names = args.services or _available()
    unknown = [n for n in names if n not in ORDER]
    if unknown:
        parser.error(f"unknown service(s): {', '.join(unknown)}; known: {', '.join(ORDER)}")
    rc = 0
    if args.action == "up":
        from lab import bringup

        bringup.prepare(cfg)  # the files the inventories and molecule scenarios read
        ephemeral = config.ephemeral_ports(cfg)
        if ephemeral:
            low, high, inside = ephemeral
            print(
                f"warning: ports {inside[0]}-{inside[-1]} of this lab are in the kernel's ephemeral port range "
                f"{low}-{high}: a client connection can hold one of them and a service then fails to bind it; "
                f"a BMCAPI_LAB_PORT_BASE of at most {low - 11} avoids that (docs/lab.md)",
                file=sys.stderr,
            )
        for name in names:
            t0 = time.monotonic()
            try:
                info, _started = bringup.start(cfg, name, always=True)
            except process.LabError as exc:
                print(f"{name}: not started: {exc}", file=sys.stderr)
                return 1
            print(f"{name}: up in {time.monotonic() - t0:.1f}s {_printable(info)}")
    elif args.action == "down":
        for name in reversed(names):
            _service(name).down(cfg)
            print(f"{name}: down")
        left = process.running(cfg)
        if left and not args.services:
            print(f"still running: {left}", file=sys.stderr)
            rc = 1
    elif args.action == "status":
        for name in names:
            st = _service(name).status(cfg)
            rc |= 0 if st.get("healthy") else 1
            print(f"{name}: {'healthy' if st.get('healthy') else 'NOT healthy'} {_printable(st)}")
    elif args.action == "reset":
        for name in names:
            _service(name).reset(cfg)
            print(f"{name}: reset")
    return rc


if __name__ == "__main__":
    sys.exit(main())
