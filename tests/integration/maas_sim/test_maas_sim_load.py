"""The simulator holds a burst of clients: 100 connecting and asking at once, none stalled.

A stalled connection is one the kernel did not accept at once: with a short listen backlog the SYNs past it
are dropped and retried after the first retransmission interval (1 s), so a connect that has not completed
within that interval stalled. The handshake is the kernel's work, not the server's, so a busy machine does
not make this fail; a short backlog does. Every request must then be answered, whatever it takes.
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
from urllib.parse import urlsplit

CLIENTS = 100
SYN_RETRANSMIT = 1.0  # Linux TCP_TIMEOUT_INIT


def _listen_backlog(port: int) -> int | None:
    """Send-Q of the listening socket in ``ss -ltn``: its backlog."""
    import subprocess

    out = subprocess.run(["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if parts and parts[0] == "LISTEN":
            return int(parts[2])
    return None


def test_listen_backlog_is_not_socketservers_five(sim):
    port = urlsplit(sim.url).port
    backlog = _listen_backlog(port)
    assert backlog is not None and backlog >= CLIENTS, backlog


def test_100_concurrent_clients_none_stalled(sim, tag):
    machines = sim.seed(*({} for _ in range(4)), tag=tag)
    split = urlsplit(sim.api)
    barrier = threading.Barrier(CLIENTS)
    results: list[tuple] = [None] * CLIENTS

    def client(i: int) -> None:
        m = machines[(i // 2) % len(machines)]
        path = split.path + (f"machines/{m['system_id']}/" if i % 2 else "version/")
        barrier.wait()
        try:
            sock = socket.create_connection((split.hostname, split.port), timeout=SYN_RETRANSMIT)
        except OSError as exc:
            results[i] = ("stalled", repr(exc))
            return
        sock.settimeout(120)
        conn = http.client.HTTPConnection(split.hostname, split.port)
        conn.sock = sock
        try:
            conn.request("GET", path, headers={"Authorization": sim.auth_header()})
            resp = conn.getresponse()
            body = resp.read()
            results[i] = (resp.status, json.loads(body))
        except OSError as exc:
            results[i] = ("no answer", repr(exc))
        finally:
            conn.close()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    bad = [r for r in results if r is None or r[0] != 200]
    assert bad == []
    assert {r[1]["system_id"] for r in results[1::2]} == {m["system_id"] for m in machines}
