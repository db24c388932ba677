"""100 clients at once against the MAAS simulator: latency percentiles per request kind.

Each client opens its own connection when all are ready (a barrier), signs with OAuth PLAINTEXT and sends one
request: GET version/, GET machines/{id}/, GET machines/?tags=<tag>, or POST machines/?op=allocate dry_run.
Rounds repeat that burst. Reports connect and request latency (p50/p90/p99/max) and how many connections
stalled (not accepted within 1 s, the first SYN retransmission). Numbers only; the test is
tests/integration/maas_sim/test_maas_sim_load.py.

    python bench/bench_maas_sim_load.py [--clients 100] [--rounds 5]
"""

from __future__ import annotations

import argparse
import http.client
import socket
import sys
import threading
import time
import uuid
from pathlib import Path
from urllib.parse import quote, urlencode, urlsplit

import requests

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO)]


def auth(apikey: str) -> str:
    consumer, token, secret = apikey.split(":")
    return (
        f'OAuth oauth_consumer_key="{consumer}", oauth_token="{token}", oauth_signature_method="PLAINTEXT", '
        f'oauth_signature="{quote("&" + secret)}", oauth_nonce="{uuid.uuid4().hex}", '
        f'oauth_timestamp="{int(time.time())}", oauth_version="1.0"'
    )


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))] if values else float("nan")


def burst(api: str, key: str, clients: int, machines: list[dict], tag: str) -> list[tuple]:
    split = urlsplit(api)
    barrier = threading.Barrier(clients)
    out: list[tuple] = [None] * clients
    kinds = ["version", "machine", "list", "allocate"]

    def one(i: int) -> None:
        kind = kinds[i % len(kinds)]
        m = machines[i % len(machines)]
        if kind == "version":
            method, path, body = "GET", "version/", None
        elif kind == "machine":
            method, path, body = "GET", f"machines/{m['system_id']}/", None
        elif kind == "list":
            method, path, body = "GET", "machines/?" + urlencode({"tags": tag}), None
        else:
            method, path = "POST", "machines/?op=allocate"
            body = urlencode({"tags": tag, "dry_run": "true"})
        headers = {"Authorization": auth(key)}
        if body:
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        barrier.wait()
        t0 = time.perf_counter()
        try:
            sock = socket.create_connection((split.hostname, split.port), timeout=1.0)
        except OSError:
            out[i] = (kind, "stalled", None, None)
            return
        t1 = time.perf_counter()
        sock.settimeout(120)
        conn = http.client.HTTPConnection(split.hostname, split.port)
        conn.sock = sock
        conn.request(method, split.path + path, body=body, headers=headers)
        resp = conn.getresponse()
        resp.read()
        conn.close()
        out[i] = (kind, resp.status, t1 - t0, time.perf_counter() - t1)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--clients", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()

    from lab import config
    from lab.services import maas

    cfg = config.load()
    started = False
    if not maas.status(cfg).get("healthy"):
        maas.up(cfg)
        started = True
    info = maas.status(cfg)
    api, key, control = info["url"] + "api/2.0/", info["api_key"], info["control_url"]
    tag = f"bench{uuid.uuid4().hex[:8]}"
    specs = [{"hostname": f"b-{uuid.uuid4().hex[:8]}", "tags": [tag]} for _ in range(8)]
    machines = requests.post(control + "machines", json={"machines": specs}, timeout=30).json()
    rows: list[tuple] = []
    try:
        for _ in range(args.rounds):
            rows += burst(api, key, args.clients, machines, tag)
    finally:
        for m in machines:
            requests.delete(control + f"machines/{m['system_id']}", timeout=30)
        if started:
            maas.down(cfg)
    stalled = sum(1 for r in rows if r[1] == "stalled")
    errors = sum(1 for r in rows if r[1] not in ("stalled", 200))
    print(f"{args.clients} clients at once x {args.rounds} rounds: {len(rows)} requests, "
          f"{stalled} stalled connects, {errors} non-200 answers")  # fmt: skip
    print(f"{'':22} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8} {'max ms':>8}")
    ok = [r for r in rows if r[1] == 200]
    lines = [("connect", [r[2] for r in ok])]
    lines += [(f"request: {k}", [r[3] for r in ok if r[0] == k]) for k in ("version", "machine", "list", "allocate")]
    lines.append(("all requests", [r[3] for r in ok]))
    for label, values in lines:
        ms = [v * 1000 for v in values]
        print(f"{label:22} {pct(ms, 50):8.1f} {pct(ms, 90):8.1f} {pct(ms, 99):8.1f} {max(ms):8.1f}")


if __name__ == "__main__":
    main()
