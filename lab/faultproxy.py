"""An HTTP(S) proxy in front of a lab service (Ironic, a kube-apiserver) that fails some of its requests.

``python -m lab.faultproxy --listen 127.0.0.1:PORT --upstream http://127.0.0.1:26385``
(``--cert``/``--key`` to serve HTTPS, ``--upstream-ca`` to verify an HTTPS upstream).

Every request is forwarded unchanged, except the ones the plan picks. What a service under load does to its
clients, and what a client must survive by retrying:

``drop_every: N``       every N-th request: the connection is closed without an answer (the client sees
                        ``RemoteDisconnected: Remote end closed connection without response``, as a busy Ironic's
                        clients did); ``reset: true`` resets it instead (``ConnectionResetError``);
                        ``after_forward: true`` sends the request on first and loses only the answer (the
                        write happened, the client cannot know)
``status_every: N``     every N-th request (counted apart from the drops) answers ``status`` (default 503)
                        without reaching the service; ``retry_after`` adds that header (429 Too Many Requests)
``drop_rate``, ``status_rate``  the same at random, that fraction of the requests (``seed`` for the random
                        generator): with several clients at once an every-N-th rule can fall on the same client
                        every time, which no real service does
``methods``             only requests with these methods count (e.g. ``["POST", "PUT"]``); default all
``path_contains``       only requests whose path contains this text count
``limit``               at most this many faults in all, then everything passes

Control (no auth; the proxy listens on loopback only): ``GET /lab/faultproxy`` the plan and counters
(requests, dropped, statuses, and the last faults as ``[method, path, what]``); ``PUT /lab/faultproxy`` a new
plan (JSON object; replaces the plan and zeroes the counters; unknown keys are a 400); ``DELETE`` clears it.

``start(cfg, name, upstream, ...)`` runs one as a lab process (stopped by PID with ``stop``).
"""

from __future__ import annotations

import argparse
import http.client
import json
import random
import ssl
import sys
import threading
import urllib.parse
from http.server import ThreadingHTTPServer

from lab import relay

CONTROL = "/lab/faultproxy"
PLAN_KEYS = {
    "drop_every": int,
    "drop_rate": float,
    "status_rate": float,
    "seed": int,
    "reset": bool,
    "after_forward": bool,
    "status_every": int,
    "status": int,
    "retry_after": int,
    "methods": list,
    "path_contains": str,
    "limit": int,
}


class Plan:
    """The faults to inject and what was injected; thread-safe (one thread per connection)."""

    def __init__(self):
        self._lock = threading.Lock()
        self.set({})

    def set(self, plan: dict) -> dict:
        unknown = set(plan) - set(PLAN_KEYS)
        if unknown:
            raise ValueError(f"unknown key(s) {sorted(unknown)}; known: {sorted(PLAN_KEYS)}")
        clean = {k: PLAN_KEYS[k](v) for k, v in plan.items() if v is not None}
        if "methods" in clean:
            clean["methods"] = [str(m).upper() for m in clean["methods"]]
        with self._lock:
            self.plan = clean
            self.requests = self.counted = self.dropped = self.statuses = 0
            self._drop_n = self._status_n = 0
            self._rng = random.Random(clean.get("seed"))
            self.log: list[list[str]] = []
        return clean

    def state(self) -> dict:
        with self._lock:
            return {"plan": dict(self.plan), "requests": self.requests, "dropped": self.dropped,
                    "statuses": self.statuses, "faults": list(self.log[-100:])}  # fmt: skip

    def decide(self, method: str, path: str) -> str | None:
        """What to do with this request: "drop", "status", or None (forward it)."""
        with self._lock:
            self.requests += 1
            p = self.plan
            if p.get("methods") and method not in p["methods"]:
                return None
            if p.get("path_contains") and p["path_contains"] not in path:
                return None
            if p.get("limit") is not None and self.dropped + self.statuses >= p["limit"]:
                return None
            self.counted += 1
            what = None
            if p.get("drop_every"):
                self._drop_n += 1
                if self._drop_n % p["drop_every"] == 0:
                    what = "drop"
            if what is None and p.get("drop_rate") and self._rng.random() < p["drop_rate"]:
                what = "drop"
            if what is None and p.get("status_rate") and self._rng.random() < p["status_rate"]:
                what = "status"
            if what is None and p.get("status_every"):
                self._status_n += 1
                if self._status_n % p["status_every"] == 0:
                    what = "status"
            if what == "drop":
                self.dropped += 1
            elif what == "status":
                self.statuses += 1
            if what:
                self.log.append([method, path, what if what == "drop" else str(p.get("status", 503))])
            return what


class Handler(relay.RelayHandler):
    server: FaultProxy

    def _control(self, body: bytes) -> None:
        plan = self.server.plan
        if self.command == "GET":
            return self.reply_json(200, plan.state())
        if self.command == "PUT":
            try:
                new = json.loads(body or b"{}")
                if not isinstance(new, dict):
                    raise ValueError("a plan is a JSON object")
                return self.reply_json(200, {"plan": plan.set(new)})
            except ValueError as exc:
                return self.reply_json(400, {"error": str(exc)})
        if self.command == "DELETE":
            plan.set({})
            return self.reply_json(200, plan.state())
        return self.reply_json(405, {"error": f"{self.command} {CONTROL} not supported"})

    def _drop(self) -> None:
        self.drop(reset=bool(self.server.plan.plan.get("reset")), shutdown=True)

    def _handle(self) -> None:
        body = self.read_body()
        if self.path.split("?")[0].rstrip("/") == CONTROL:
            return self._control(body)
        what = self.server.plan.decide(self.command, self.path)
        if what == "drop":
            if self.server.plan.plan.get("after_forward"):
                self._forward(body, answer=False)
            return self._drop()
        if what == "status":
            p = self.server.plan.plan
            status = p.get("status", 503)
            headers = {"Retry-After": str(p["retry_after"])} if p.get("retry_after") is not None else None
            # the shape of a Kubernetes Status (Ironic's clients only read the code)
            reason = http.client.responses.get(status, "Error")
            return self.reply_json(status, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                            "message": f"lab fault proxy: {status} {reason}",
                                            "reason": reason.replace(" ", ""), "code": status}, headers)  # fmt: skip
        self._forward(body)

    def _forward(self, body: bytes, answer: bool = True) -> None:
        self.relay(
            body, lambda exc: self.reply_json(502, {"error": f"fault proxy: upstream unreachable: {exc}"}), answer
        )

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _handle


class FaultProxy(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def __init__(self, listen, upstream: str, cert=None, key=None, upstream_ca=None):
        super().__init__(listen, Handler)
        self.upstream = urllib.parse.urlsplit(upstream)
        self.upstream_ctx = ssl.create_default_context(cafile=upstream_ca) if upstream_ca else None
        if self.upstream.scheme == "https" and not upstream_ca:
            self.upstream_ctx = ssl._create_unverified_context()  # noqa: S323 - a lab hop on loopback
        self.plan = Plan()
        if cert:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(cert, key)
            self.socket = ctx.wrap_socket(self.socket, server_side=True)


def start(cfg, name: str, upstream: str, port: int, *, cert=None, key=None, upstream_ca=None) -> str:
    """Run a fault proxy as lab process ``name`` on 127.0.0.1:``port``; its base URL."""
    from lab import process

    argv = [sys.executable, "-m", "lab.faultproxy", "--listen", f"127.0.0.1:{port}", "--upstream", upstream]
    if cert:
        argv += ["--cert", str(cert), "--key", str(key)]
    if upstream_ca:
        argv += ["--upstream-ca", str(upstream_ca)]
    from lab.config import REPO

    process.start(cfg, name, argv, cwd=REPO, ready=lambda: process.port_open("127.0.0.1", port), timeout=30)
    return f"{'https' if cert else 'http'}://127.0.0.1:{port}"


def control(url: str, method: str = "GET", plan: dict | None = None, ca=None) -> dict:
    """The proxy's control endpoint (``url`` is the proxy's base URL)."""
    import requests

    verify = str(ca) if ca else True
    resp = requests.request(method, url.rstrip("/") + CONTROL, json=plan, timeout=30, verify=verify)
    resp.raise_for_status()
    return resp.json()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m lab.faultproxy")
    parser.add_argument("--listen", required=True, help="host:port")
    parser.add_argument("--upstream", required=True, help="the service's base URL")
    parser.add_argument("--cert", help="serve HTTPS with this certificate (PEM)")
    parser.add_argument("--key", help="the certificate's key (PEM)")
    parser.add_argument("--upstream-ca", help="CA bundle to verify an HTTPS upstream")
    args = parser.parse_args(argv)
    host, port = args.listen.rsplit(":", 1)
    server = FaultProxy((host, int(port)), args.upstream, args.cert, args.key, args.upstream_ca)
    print(f"fault proxy on {args.listen} -> {args.upstream}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
