"""The HTTP relay both lab proxies are built on: lab/faultproxy.py (API servers, Ironic) and
lab/ironic/bmc_proxy.py (the Redfish emulator). Each adds only the faults it injects."""

from __future__ import annotations

import http.client
import json
import socket
from http.server import BaseHTTPRequestHandler

# hop-by-hop headers: never relayed
HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade"}
# SO_LINGER on, 0 seconds: closing the socket sends a reset instead of a clean FIN
_LINGER_RESET = b"\x01\x00\x00\x00\x00\x00\x00\x00"


class RelayHandler(BaseHTTPRequestHandler):
    """Request plumbing: JSON answers, the body, dropping the connection, relaying upstream.

    ``self.server`` carries ``upstream`` (a ``urllib.parse.SplitResult``) and, for an https upstream,
    ``upstream_ctx`` (an ``ssl.SSLContext``).
    """

    # one request per connection: a drop then always meets a request the client has sent
    protocol_version = "HTTP/1.0"

    def log_message(self, fmt, *args):  # one line per request, to the lab log
        print(f"{self.address_string()} {fmt % args}", flush=True)

    def reply_json(self, status: int, body, headers: dict | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def drop(self, *, reset: bool, shutdown: bool = False) -> None:
        """Close the connection without an answer: with ``reset`` the client sees a reset, not a clean close."""
        self.close_connection = True
        if reset:
            try:
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RESET)
            except OSError:
                pass
        if shutdown:
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.connection.close()

    def relay(self, body: bytes, unreachable, answer: bool = True) -> int | None:
        """Send the request upstream unchanged (Host header too) and write its answer back; its status.

        ``unreachable(exc)`` answers when upstream cannot be reached; with ``answer=False`` the request is sent
        and whatever comes back (or fails) is thrown away.
        """
        up = self.server.upstream
        if up.scheme == "https":
            ctx = getattr(self.server, "upstream_ctx", None)
            conn = http.client.HTTPSConnection(up.hostname, up.port, timeout=120, context=ctx)
        else:
            conn = http.client.HTTPConnection(up.hostname, up.port, timeout=120)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
        try:
            conn.request(self.command, self.path, body=body or None, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
        except OSError as exc:
            if answer:
                unreachable(exc)
            return None
        finally:
            conn.close()
        if not answer:
            return resp.status
        self.send_response(resp.status, resp.reason)
        for key, value in resp.getheaders():
            if key.lower() not in HOP and key.lower() != "content-length":
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        return resp.status
