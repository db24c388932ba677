"""The HTTP server: MAAS's URL space on one ThreadingHTTPServer.

- ``/MAAS/api/2.0/...``: the API (handler table in ``api``), OAuth-checked.
- ``/MAAS/accounts/authenticate/``: username/password -> a new API key
  (what python-libmaas ``login()`` posts to).
- ``/MAAS/_sim/...``: the test control API (``control``), no auth.

Every request takes the store lock for its whole handling, so concurrent
clients see each change whole. Injected faults (status codes, delays) apply to
the first two groups only.
"""

from __future__ import annotations

import json
import re
import ssl
import sys
import threading
import time
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from lab.maas_sim import (  # noqa: F401  (handlers register on import)
    api,
    api_dns,
    api_dnsdata,
    api_ipranges,
    api_machines,
    api_misc,
    api_network,
    api_pods,
    api_routes,
    control,
    wire,
)
from lab.maas_sim.forms import ApiError, Form, Unauthorized
from lab.maas_sim.model import Store

JSON = "application/json; charset=utf-8"
MUTATING = {"POST", "PUT", "DELETE"}
LISTEN_BACKLOG = 1024  # listen(2); the kernel caps it at net.core.somaxconn


class Server(ThreadingHTTPServer):
    """One thread per connection; a listen backlog that holds a burst of clients.

    socketserver's default backlog is 5: the sixth client connecting at once has its SYN dropped and waits for
    the kernel's retransmission (1 s, then 3 s, ...), which clients see as a stalled MAAS.
    """

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = LISTEN_BACKLOG

    scheme = "http"

    def __init__(self, address, store: Store, verbose: bool = False, tls: ssl.SSLContext | None = None):
        super().__init__(address, RequestHandler)
        self.store = store
        self.verbose = verbose
        if tls is not None:
            # the handshake happens on the first read, in the connection's own thread, not in accept()
            self.socket = tls.wrap_socket(self.socket, server_side=True, do_handshake_on_connect=False)
            self.scheme = "https"

    def handle_error(self, request, client_address):
        # a client that gives up on the handshake (an untrusted certificate) is no server error
        if isinstance(sys.exc_info()[1], (ssl.SSLError, ConnectionError)):
            return
        super().handle_error(request, client_address)


class RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "maas-sim/1.0"
    server: Server

    def do_GET(self):
        self._handle()

    def do_POST(self):
        self._handle()

    def do_PUT(self):
        self._handle()

    def do_DELETE(self):
        self._handle()

    def do_PATCH(self):
        self._handle()

    def log_message(self, fmt, *args):
        if self.server.verbose:
            sys.stderr.write(f"{self.address_string()} - {fmt % args}\n")

    # -- plumbing ------------------------------------------------------------

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _send(self, status: int, ctype: str | None, body: bytes, extra: dict | None = None) -> None:
        self.send_response(status)
        if ctype:
            self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-MAAS-API-Hash", api.api_hash())
        if status == 401:
            self.send_header("WWW-Authenticate", 'OAuth realm="OAuth"')
        for key, value in (extra or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, obj) -> None:
        self._send(status, JSON, json.dumps(obj).encode())

    def _handle(self) -> None:
        try:
            body = self._read_body()
            split = urlsplit(self.path)
            # MAAS's CleanPathRequest collapses repeated slashes (the maas.maas
            # collection's DNS update and delete send dnsresources//{id}/).
            path = re.sub(r"/{2,}", "/", split.path)
            store = self.server.store
            if path.startswith("/MAAS/_sim/"):
                status, obj = control.handle(store, self.command, path[len("/MAAS/_sim/") :], body)
                return self._json(status, obj)
            if self._apply_faults(store, path):
                return
            if path == "/MAAS/accounts/authenticate/" and self.command == "POST":
                return self._login(store, body)
            if not path.startswith(api.API_PATH):
                return self._send(404, "text/plain; charset=utf-8", b"Not Found")
            self._api(store, path[len(api.API_PATH) :], split.query, body)
        except ApiError as exc:
            self._send(*exc.response())
        except (BrokenPipeError, ConnectionResetError):
            pass
        except Exception:  # a simulator bug: say so, the way Django's 500 page would
            traceback.print_exc()
            self._send(500, "text/plain; charset=utf-8", traceback.format_exc().encode())

    def _apply_faults(self, store: Store, path: str) -> bool:
        with store.lock:
            fault = control.take_fault(store, self.command, path)
        if fault is None:
            return False
        if fault.get("delay"):
            time.sleep(float(fault["delay"]))
        if fault.get("status"):
            text = fault.get("body") or {500: "Internal server error.", 503: "Service Unavailable"}.get(
                int(fault["status"]), "Injected fault"
            )
            self._send(int(fault["status"]), "text/plain; charset=utf-8", text.encode())
            return True
        return False

    def _base_url(self) -> str:
        host = self.headers.get("Host") or f"{self.server.server_address[0]}:{self.server.server_address[1]}"
        return f"{self.server.scheme}://{host}"

    def _login(self, store: Store, body: bytes) -> None:
        form = wire.parse_body(self.headers.get("Content-Type", ""), body)
        with store.lock:
            user = store.users.get(form.get("username", ""))
            if user is None or user.get("password") is None or user["password"] != form.get("password"):
                # maasserver.views.account.authenticate: HttpResponseForbidden(), no body
                return self._send(403, "text/html; charset=utf-8", b"")
            consumer, token, secret = store.new_key(user["username"]).split(":")
            store.save()
        self._json(200, {"consumer_key": consumer, "token_key": token, "token_secret": secret,
                         "name": form.get("consumer", "")})  # fmt: skip

    def _api(self, store: Store, rel: str, query_string: str, body: bytes) -> None:
        if rel == "describe/" and self.command == "GET":
            self._send(200, "application/json", json.dumps(api.describe(self._base_url())).encode())
            return
        found = api.route(rel)
        if found is None and not rel.endswith("/") and (rel == "describe" or api.route(rel + "/")):
            # Django's CommonMiddleware (APPEND_SLASH): a path that resolves only with the slash is redirected
            location = api.API_PATH + rel + "/" + (f"?{query_string}" if query_string else "")
            return self._send(301, "text/html; charset=utf-8", b"", {"Location": location})
        if found is None:
            raise ApiError("Not Found", 404)
        handler, params, path_op = found
        query = wire.parse_query(query_string)
        ctype = self.headers.get("Content-Type", "")
        form = wire.parse_body(ctype, body) if self.command in ("POST", "PUT") else Form()
        with store.lock:
            user = wire.authenticate(store, self.headers, self.command, self._base_url() + self.path, ctype, body)
            if user is None and not handler.anon:
                raise Unauthorized("Authorization Error: 'Missing OAuth credentials.'")
            op = query.get("op") or form.get("op") or path_op
            data = form if self.command in ("POST", "PUT") else query
            ctx = api.Ctx(store=store, user=user, method=self.command, data=data, query=query, op=op)
            store.advance()
            # A request that fails changes nothing: Django's ATOMIC_REQUESTS rolls the transaction back.
            saved = store.checkpoint() if self.command in MUTATING else None
            try:
                result = api.dispatch(handler, ctx, params)
            except Exception:
                if saved is not None:
                    store.rollback(saved)
                raise
            if self.command in MUTATING:
                store.save()
        if isinstance(result, api.JsonValue):
            self._json(200, result.value)
        elif result is None:
            if self.command == "DELETE":
                self._send(204, None, b"")
            else:
                self._send(200, "text/plain; charset=utf-8", b"OK")
        else:
            self._json(200, result)


def tls_context(cert: str, key: str) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(cert, key)
    return ctx


def serve(store: Store, host: str, port: int, verbose: bool = False, tls_port: int | None = None,
          tls: ssl.SSLContext | None = None) -> None:  # fmt: skip
    """HTTP on ``port``; with ``tls``, HTTPS on ``tls_port`` too (same store, same API)."""
    servers = [Server((host, port), store, verbose)]
    if tls is not None and tls_port:
        servers.append(Server((host, tls_port), store, verbose, tls=tls))
        threading.Thread(target=servers[1].serve_forever, kwargs={"poll_interval": 0.2}, daemon=True).start()
    try:
        servers[0].serve_forever(poll_interval=0.2)
    finally:
        for server in servers[1:]:
            server.shutdown()
        for server in servers:
            server.server_close()
