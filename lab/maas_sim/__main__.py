"""``python -m lab.maas_sim``: start the simulator in the foreground."""

from __future__ import annotations

import argparse
import json
import signal
import sys

from lab.maas_sim import httpd
from lab.maas_sim.model import Store


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.maas_sim")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=25240)
    parser.add_argument("--user", default="admin", help="the admin user the API keys belong to")
    parser.add_argument("--password", default=None, help="enables the login flow for --user")
    parser.add_argument("--api-key", action="append", default=[], help="consumer:token:secret (repeatable)")
    parser.add_argument("--snapshot", default=None, help="JSON file: loaded at start if present, saved on change")
    parser.add_argument("--machines", type=int, default=12, help="machines to seed when not loading a snapshot")
    parser.add_argument("--timings", default=None, help='JSON, e.g. {"deploy": 3, "release": 1}')
    parser.add_argument("--tls-port", type=int, default=None, help="also serve HTTPS on this port")
    parser.add_argument("--tls-cert", default=None, help="PEM certificate (chain) for --tls-port")
    parser.add_argument("--tls-key", default=None, help="PEM private key for --tls-port")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)

    store = Store(snapshot=args.snapshot)
    if not store.load():
        store.seed(args.machines)
    store.add_user(args.user, args.password, is_superuser=True)
    for key in args.api_key:
        store.add_key(args.user, key)
    if args.timings:
        store.timings.update({k: float(v) for k, v in json.loads(args.timings).items()})
    store.save()
    # SIGTERM (lab stop) ends serve_forever through KeyboardInterrupt's path.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    tls = httpd.tls_context(args.tls_cert, args.tls_key) if args.tls_port else None
    extra = f", https://{args.host}:{args.tls_port}/MAAS/" if tls else ""
    print(f"maas-sim: http://{args.host}:{args.port}/MAAS/{extra} ({len(store.machines)} machines)", flush=True)
    try:
        httpd.serve(store, args.host, args.port, args.verbose, tls_port=args.tls_port, tls=tls)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
