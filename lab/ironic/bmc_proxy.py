"""A small HTTP proxy in front of the Redfish emulator that can make one system misbehave.

``python -m lab.ironic.bmc_proxy --listen 127.0.0.1:28001 --upstream http://127.0.0.1:28000``

Every request is forwarded unchanged (the Host header too, so links the emulator
builds point back at the proxy). A request belongs to a system when its path is
under ``/redfish/v1/Systems/<id>`` or ``/redfish/v1/Managers/<id>`` (the emulator's
manager of a fake system has the system's UUID). Faults per system id:

``unreachable``        drop the connection without an answer, as a dead BMC would
``delay``              seconds to wait before forwarding any request of that system (a slow BMC)
``power_delay``        seconds to wait before forwarding a ComputerSystem.Reset (power action)
``fail_virtual_media`` answer virtual-media inserts with a Redfish 500 error
``fail_power``         answer power actions (ComputerSystem.Reset) with a Redfish 500 error, as a BMC whose
                       chassis has lost its power supply does; the power state stays what it was
``refuse_graceful``    answer a ``GracefulShutdown`` reset with a Redfish 400 error and leave the system on, as
                       the BMC of a host without ACPI support (or whose OS ignores the power button) does; other
                       reset types pass

Control endpoint (no auth, loopback only):
``GET /lab/faults`` all faults; ``PUT /lab/faults/<id>`` set one (JSON object, replaces);
``DELETE /lab/faults/<id>`` clear one; ``DELETE /lab/faults`` clear all.
``GET /lab/resets``: per system id, how many ComputerSystem.Reset actions the emulator
accepted. The node simulator counts a host's boots with it: the emulator's restart is an
Off then an On a few seconds later that a poll can miss, and a restart is a new boot (the
agent ramdisk a host ran before is gone).
``GET /lab/resets/log`` (or ``/lab/resets/log/<id>``): every ComputerSystem.Reset the BMC was asked for, per
system id, in order: ``{"reset_type", "status", "time"}`` (``status`` the HTTP status answered, a refused one
included), so a test can tell a graceful shutdown from a forced one. ``DELETE /lab/resets/log`` empties it.
"""

from __future__ import annotations

import argparse
import json
import re
import threading
import time
import urllib.parse
from http.server import ThreadingHTTPServer

from lab import relay

FAULT_KEYS = {
    "unreachable": bool,
    "delay": float,
    "power_delay": float,
    "fail_virtual_media": bool,
    "fail_power": bool,
    "refuse_graceful": bool,
}

RESET_LOG_KEEP = 200  # entries kept per system

_SYSTEM = re.compile(r"^/redfish/v1/(?:Systems|Managers)/([^/?#]+)")
_RESET = re.compile(r"/Actions/ComputerSystem\.Reset/?$")
_VMEDIA_INSERT = re.compile(r"/VirtualMedia/[^/]+(?:/Actions/VirtualMedia\.InsertMedia)?/?$")


# hop-by-hop headers are the proxy's own business
class Faults:
    def __init__(self):
        self._lock = threading.Lock()
        self._faults: dict[str, dict] = {}

    def get(self, system: str | None) -> dict:
        if system is None:
            return {}
        with self._lock:
            return dict(self._faults.get(system, {}))

    def all(self) -> dict:
        with self._lock:
            return {k: dict(v) for k, v in self._faults.items()}

    def set(self, system: str, fault: dict) -> dict:
        unknown = set(fault) - set(FAULT_KEYS)
        if unknown:
            raise ValueError(f"unknown fault(s) {sorted(unknown)}; known: {sorted(FAULT_KEYS)}")
        clean = {k: FAULT_KEYS[k](v) for k, v in fault.items() if v}
        with self._lock:
            if clean:
                self._faults[system] = clean
            else:
                self._faults.pop(system, None)
        return clean

    def clear(self, system: str | None = None) -> None:
        with self._lock:
            if system is None:
                self._faults.clear()
            else:
                self._faults.pop(system, None)


class Handler(relay.RelayHandler):
    server: ProxyServer

    def _control(self) -> None:
        faults = self.server.faults
        parts = [urllib.parse.unquote(p) for p in self.path.split("?")[0].strip("/").split("/")]
        system = parts[2] if len(parts) > 2 else None
        if self.command == "GET":
            self.reply_json(200, faults.all() if system is None else faults.get(system))
        elif self.command == "PUT" and system:
            try:
                fault = json.loads(self.read_body() or b"{}")
                if not isinstance(fault, dict):
                    raise ValueError("a fault is a JSON object")
                self.reply_json(200, faults.set(system, fault))
            except ValueError as exc:
                self.reply_json(400, {"error": str(exc)})
        elif self.command == "DELETE":
            faults.clear(system)
            self.reply_json(200, faults.all())
        else:
            self.reply_json(405, {"error": f"{self.command} {self.path} not supported"})

    def _drop(self) -> None:
        # a reset, not a clean close: the client sees the BMC vanish mid-request
        self.drop(reset=True)

    def _redfish_error(self, status: int, message: str) -> None:
        self.reply_json(
            status,
            {
                "error": {
                    "code": "Base.1.0.GeneralError",
                    "message": message,
                    "@Message.ExtendedInfo": [{"MessageId": "Base.1.0.GeneralError", "Message": message}],
                }
            },
        )

    def _handle(self) -> None:
        if self.path.startswith("/lab/faults"):
            return self._control()
        if self.path.startswith("/lab/resets/log"):
            return self._reset_log()
        if self.path.startswith("/lab/resets"):
            with self.server.lock:
                return self.reply_json(200, dict(self.server.resets))
        body = self.read_body()
        match = _SYSTEM.match(self.path)
        fault = self.server.faults.get(match.group(1) if match else None)
        path = self.path.split("?")[0]
        if fault.get("unreachable"):
            return self._drop()
        if fault.get("delay"):
            time.sleep(fault["delay"])
        if match and self.command == "POST" and _RESET.search(path):
            status = self._reset(match.group(1), body, fault)
            if status is not None and 200 <= status < 300:
                with self.server.lock:
                    self.server.resets[match.group(1)] = self.server.resets.get(match.group(1), 0) + 1
            return None
        if fault.get("fail_virtual_media") and self.command in ("POST", "PATCH") and _VMEDIA_INSERT.search(path):
            return self._redfish_error(500, "Lab fault: virtual media insert failed")
        self._forward(body)
        return None

    def _reset(self, system: str, body: bytes, fault: dict) -> int | None:
        """A ComputerSystem.Reset: the faults that concern it, then the emulator; logged with its answer."""
        try:
            reset_type = str((json.loads(body or b"{}") or {}).get("ResetType"))
        except (ValueError, AttributeError):
            reset_type = "?"
        if fault.get("power_delay"):
            time.sleep(fault["power_delay"])
        if fault.get("fail_power"):
            status = 500
            self._redfish_error(status, "Lab fault: power action failed, the chassis has no power")
        elif fault.get("refuse_graceful") and reset_type == "GracefulShutdown":
            status = 400
            self._redfish_error(
                status, "Lab fault: GracefulShutdown refused, the host does not support ACPI power button events"
            )
        else:
            status = self._forward(body)
        with self.server.lock:
            log = self.server.reset_log.setdefault(system, [])
            log.append({"reset_type": reset_type, "status": status, "time": time.time()})
            del log[:-RESET_LOG_KEEP]
        return status

    def _reset_log(self) -> None:
        parts = [urllib.parse.unquote(p) for p in self.path.split("?")[0].strip("/").split("/")]
        system = parts[3] if len(parts) > 3 else None
        with self.server.lock:
            if self.command == "DELETE":
                if system is None:
                    self.server.reset_log.clear()
                else:
                    self.server.reset_log.pop(system, None)
            if system is None:
                out = {k: list(v) for k, v in self.server.reset_log.items()}
            else:
                out = list(self.server.reset_log.get(system, []))
        self.reply_json(200, out)

    def _forward(self, body: bytes) -> int | None:
        return self.relay(
            body, lambda exc: self._redfish_error(502, f"BMC proxy: upstream emulator unreachable: {exc}")
        )

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _handle


class ProxyServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, listen: tuple[str, int], upstream: str):
        super().__init__(listen, Handler)
        self.upstream = urllib.parse.urlsplit(upstream)
        self.faults = Faults()
        self.lock = threading.Lock()
        self.resets: dict[str, int] = {}
        self.reset_log: dict[str, list[dict]] = {}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m lab.ironic.bmc_proxy")
    parser.add_argument("--listen", required=True, help="host:port")
    parser.add_argument("--upstream", required=True, help="the Redfish emulator's base URL")
    args = parser.parse_args(argv)
    host, port = args.listen.rsplit(":", 1)
    server = ProxyServer((host, int(port)), args.upstream)
    print(f"BMC proxy on {args.listen} -> {args.upstream}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
