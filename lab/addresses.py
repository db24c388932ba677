"""A lab's loopback addresses: all inside its own ``127.A.0.0/16`` (lab/config.py, ``BMCAPI_LAB_LOOPBACK``).

The lab's services listen on 127.0.0.1 at the lab's own ports; everything else a lab puts on loopback - the
emulated Ironic hosts (``127.A.1.N``), the MAAS simulator's machines (``127.A.2.N``), the workload API servers
the node simulator starts on the clusters' endpoints, the tests' and the demo's host addresses and endpoints - is
in ``127.A``, so two labs with two prefixes (and two port bases) never pick the same address. The tests and
inventories write addresses as ``127.0.X.Y`` (the default lab) and ask ``here`` for the current lab's one.

``python -m lab.addresses`` prints ``<lab>/inventory/lab.json`` (what ``python -m lab up`` writes for the
inventories and molecule scenarios: the loopback prefix and the MAAS simulator's URLs).
"""

from __future__ import annotations

import contextlib
import json
import os
import random

from lab.config import LabConfig, load
from lab.process import port_open

# The /24s of a lab's 127.A.0.0/16 and what uses them.
USES = {
    1: "Ironic lab hosts (127.A.1.N, host N)",
    2: "MAAS simulator machines (127.A.2.N)",
    3: "node simulator and MAAS tests: endpoints and VM hosts",
    4: "metal3_machine tests: hosts",
    5: "metal3_machine tests: workload endpoints",
    6: "demo and molecule: workload endpoints",
    7: "demo: host addresses and IP pool",
    8: "etcd quorum test: endpoints",
    9: "end-to-end tests, kcpsafe, ipam: workload endpoints; molecule metal3: hosts and pool",
    10: "AWX cluster job test: hosts and pool",
    11: "IPMI BMCs of the IPMI lab hosts (127.A.11.N: host N's virtualbmc, UDP port ports.ipmi)",
    12: "day-2 tests, first line (Metal3 upgrade, quorum loss): workload endpoints",
    13: "day-2 tests, second line (kill -9, racing playbooks): workload endpoints",
    # the test clusters' IP pools: 127.A.<100-199> the e2e and other tests, <200-219> the first day-2 line,
    # <220-249> the second (tests/run_integration.sh runs the lines side by side)
}


def here(text: str, cfg: LabConfig | None = None) -> str:
    """``127.0.X[.Y]`` (as written for the default lab) in the current lab's ``127.A``."""
    if not text.startswith("127.0."):
        raise ValueError(f"{text!r} is not a 127.0.X address of the default lab")
    return f"{(cfg or load()).loopback}.{text[len('127.0.') :]}"


def free_endpoint(third: int, port: int = 6443, cfg: LabConfig | None = None, rand=random, taken=None) -> str:
    """An address ``127.A.<third>.x`` (x in 2..250) of this lab with nothing listening on ``port``
    (``taken(host, port)`` says; default: a connection is answered there)."""
    net = (cfg or load()).net(third)
    taken = taken or port_open
    for _ in range(50):
        host = f"{net}.{rand.randint(2, 250)}"
        if not taken(host, port):
            return host
    raise RuntimeError(f"no free {net}.x:{port}")


def lab_json(cfg: LabConfig) -> dict:
    from lab.services import maas

    return {
        "loopback": cfg.loopback,
        "maas_url": maas.url(cfg),
        "maas_control_url": maas.url(cfg) + "_sim/",
        "maas_tls_url": maas.tls_url(cfg),
        "kube_apiserver": f"https://{cfg.host}:{cfg.ports.kube_apiserver}",
        "nodesim_url": f"http://{cfg.host}:{cfg.ports.node_simulator}/",
    }


def write_lab_json(cfg: LabConfig) -> None:
    out = cfg.root / "inventory"
    out.mkdir(parents=True, exist_ok=True)
    text = json.dumps(lab_json(cfg), indent=1) + "\n"
    path = out / "lab.json"
    with contextlib.suppress(OSError):
        if path.read_text() == text:
            return
    # whole or not at all: playbooks of the other test line read it while tests write it
    tmp = out / f".lab.json.{os.getpid()}"
    tmp.write_text(text)
    os.replace(tmp, path)


if __name__ == "__main__":
    print(json.dumps(lab_json(load()), indent=1))
