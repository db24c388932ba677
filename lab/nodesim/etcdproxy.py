"""The workload API server's "local etcd": a TCP pass-through to a running member of its cluster.

On a kubeadm control-plane host the API server talks to the etcd member on
the same host (``--etcd-servers=https://127.0.0.1:2379``), and a load balancer
in front of the hosts picks an API server that is up.  The lab runs one API
server per cluster, so it gets a per-cluster port on 127.0.0.1 that passes
each new connection, bytes untouched, to one running member (the TLS session
is the API server's with that member: the member's certificate carries the
``127.0.0.1`` SAN, as kubeadm's does, and checks the API server's client
certificate).  With a minority of members down a connection lands on a live
member and everything works; with a majority down the live member has no
leader and the API's requests fail, as on a real cluster.  It runs inside the
node simulator's process.
"""

from __future__ import annotations

import itertools
import logging
import socket
import threading

LOG = logging.getLogger("nodesim")


class Forwarder:
    def __init__(self, name: str, port: int = 0, host: str = "127.0.0.1", fallback: bool = True):
        self.name = name
        self.targets: tuple[tuple[str, int], ...] = ()  # set by the reconcile loop
        self._turn = itertools.count()
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self._sock.bind((host, port))
        except OSError:
            if not port or not fallback:
                self._sock.close()
                raise
            self._sock.bind((host, 0))  # the old port is taken: a new one (the API server is restarted for it)
        self._sock.listen(64)
        self.port = self._sock.getsockname()[1]
        self._closed = False
        threading.Thread(target=self._accept, name=f"fwd-{name}", daemon=True).start()

    def close(self) -> None:
        self._closed = True
        try:
            self._sock.close()
        except OSError:
            pass

    def _accept(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _connect(self) -> socket.socket | None:
        targets = self.targets
        if not targets:
            return None
        first = next(self._turn) % len(targets)
        for addr in targets[first:] + targets[:first]:
            try:
                return socket.create_connection(addr, timeout=2)
            except OSError:
                continue
        return None

    def _serve(self, conn: socket.socket) -> None:
        upstream = self._connect()
        if upstream is None:
            conn.close()  # no member runs: connection refused, in effect
            return
        upstream.settimeout(None)
        for a, b in ((conn, upstream), (upstream, conn)):
            threading.Thread(target=_pump, args=(a, b), daemon=True).start()


def _pump(src: socket.socket, dst: socket.socket) -> None:
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            try:
                s.close()
            except OSError:
                pass
