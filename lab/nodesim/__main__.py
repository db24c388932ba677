"""``python -m lab.nodesim``: the node simulator process (the lab service "nodesim" starts it).

It polls the hosts every ``poll`` seconds and serves a small control API on
127.0.0.1:``cfg.ports.node_simulator`` (JSON, no auth; not part of anything upstream):

GET  /status            hosts, clusters, Nodes, timings, stopped kubelets
POST /kubelet           {"node": <name>, "cluster": <name or host:port, optional>, "running": false|true}
POST /etcd              the same for the etcd member of a control-plane Node (its host stays up)
POST /timings           {"grace": 5, "lease_renew": 1, ...}  (seconds; see sim.DEFAULT_TIMINGS)
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from lab import config
from lab.nodesim.sim import LOG, Simulator


def _handler(sim: Simulator):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, fmt, *args):  # requests go to the log at debug level only
            LOG.debug(fmt, *args)

        def _send(self, status: int, obj) -> None:
            body = json.dumps(obj, indent=1).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            if self.path.rstrip("/") == "/status":
                with sim.lock:
                    snap = dict(sim.snapshot)
                    snap["timings"] = dict(sim.state["timings"])
                    snap["kubelet_stopped"] = list(sim.state["kubelet_stopped"])
                    snap["etcd_stopped"] = list(sim.state.get("etcd_stopped") or [])
                return self._send(200, snap)
            self._send(404, {"error": f"no endpoint GET {self.path}"})

        def do_POST(self):
            try:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if self.path.rstrip("/") == "/kubelet":
                    if "node" not in body or "running" not in body:
                        raise ValueError("need node and running")
                    keys = sim.set_kubelet(str(body["node"]), bool(body["running"]), body.get("cluster"))
                    if not keys:
                        return self._send(404, {"error": f"no kubelet registered Node {body['node']!r}"})
                    return self._send(200, {"nodes": keys, "running": bool(body["running"])})
                if self.path.rstrip("/") == "/etcd":
                    if "node" not in body or "running" not in body:
                        raise ValueError("need node and running")
                    keys = sim.set_etcd(str(body["node"]), bool(body["running"]), body.get("cluster"))
                    if not keys:
                        return self._send(404, {"error": f"no etcd member of Node {body['node']!r}"})
                    return self._send(200, {"members": keys, "running": bool(body["running"])})
                if self.path.rstrip("/") == "/timings":
                    return self._send(200, sim.set_timings(body))
            except (ValueError, TypeError) as exc:
                return self._send(400, {"error": str(exc)})
            self._send(404, {"error": f"no endpoint POST {self.path}"})

    return Handler


def _reap() -> None:
    # API servers are our children: one that exited must not linger as a zombie that looks alive by PID
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stdout)
    cfg = config.load()
    sim = Simulator(cfg)
    sim.save()
    server = ThreadingHTTPServer((cfg.host, cfg.ports.node_simulator), _handler(sim))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    LOG.info("node simulator on %s:%s", cfg.host, cfg.ports.node_simulator)
    while not stop.is_set():
        t0 = time.monotonic()
        _reap()
        try:
            sim.step()
        except Exception:  # noqa: BLE001 - one bad round must not end the simulator
            LOG.exception("step failed")
        stop.wait(max(0.0, sim.timing("poll") - (time.monotonic() - t0)))
    server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
