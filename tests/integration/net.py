"""The current lab's loopback prefix ``127.A`` (lab/config.py, ``BMCAPI_LAB_LOOPBACK``): the tests write the
addresses they put on loopback as ``f"{LOOP}.X.Y"`` so that two labs' test runs never meet on one address."""

from __future__ import annotations

import socket

from lab.config import load

LOOP = load().loopback


def free_port_base(span: int = 11) -> int:
    """A base port with ``span`` ports from it that can be bound now (a second lab's ``BMCAPI_LAB_PORT_BASE``).

    Bound, not only probed: the candidates come from the kernel's ephemeral range (a port-0 bind), where a
    client connection of any process, or its TIME_WAIT, can hold a port that nothing listens on."""
    for _ in range(100):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + span >= 65535:
            continue
        try:
            for port in range(base, base + span):
                with socket.socket() as probe:
                    probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    probe.bind(("127.0.0.1", port))
        except OSError:
            continue
        return base
    raise RuntimeError(f"no {span} bindable ports in a row")
