"""The current lab's loopback prefix ``127.A`` (lab/config.py, ``BMCAPI_LAB_LOOPBACK``): the tests write the
addresses they put on loopback as ``f"{LOOP}.X.Y"`` so that two labs' test runs never meet on one address."""

from __future__ import annotations

import dataclasses
import random
import socket

from lab.config import Ports, load

LOOP = load().loopback


def free_port_base(span: int = len(dataclasses.fields(Ports))) -> int:
    """A base port with ``span`` ports from it (every port of a lab, ``Ports.from_base``) that can be bound now: a
    second lab's ``BMCAPI_LAB_PORT_BASE``.

    The candidates lie below the kernel's ephemeral range (``net.ipv4.ip_local_port_range``), as a lab's own
    ports should (lab/config.py ``ephemeral_ports``): in that range any client connection of any process, or
    its TIME_WAIT, can take a port between this probe and the lab's bind ("address already in use")."""
    low = 32768
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range", encoding="ascii") as fh:
            low = int(fh.read().split()[0])
    except (OSError, ValueError, IndexError):
        pass
    for _ in range(200):
        base = random.randrange(10000, max(10001, low - span))
        try:
            for port in range(base, base + span):
                with socket.socket() as probe:
                    probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    probe.bind(("127.0.0.1", port))
        except OSError:
            continue
        return base
    raise RuntimeError(f"no {span} bindable ports in a row below {low}")
