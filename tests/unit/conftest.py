"""tests/unit is hermetic: no lab, no port, no network (docs/lab.md has the proof command).

The store and module suites' kubernetes run is tests/integration/stores.  A unit test that asks for the lab
fails here instead of starting (or silently reusing) one, and a unit test that connects or sends an IP socket
anywhere, or binds one to a fixed port, fails naming the address (an audit hook sees the call even when the
code under test catches the error it gets).  Unix sockets, and binding port 0 (urllib3 probes IPv6 support
that way when it is imported), are not the network.
"""

from __future__ import annotations

import socket
import sys

import pytest

_RUNNING: dict = {"test": None}
_SEEN: list[str] = []


def _network_guard(event: str, args: tuple) -> None:
    if _RUNNING["test"] is None or event not in ("socket.connect", "socket.sendto", "socket.sendmsg", "socket.bind"):
        return
    sock, address = args[0], args[1]
    if getattr(sock, "family", None) not in (socket.AF_INET, socket.AF_INET6):
        return
    if event == "socket.bind" and isinstance(address, tuple) and len(address) > 1 and address[1] == 0:
        return
    _SEEN.append(f"{_RUNNING['test']}: {event.split('.')[1]} {address!r}")
    raise ConnectionRefusedError(111, f"tests/unit is hermetic: {event} {address!r} refused")


sys.addaudithook(_network_guard)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _RUNNING["test"] = item.nodeid
    try:
        yield
    finally:
        _RUNNING["test"] = None


@pytest.fixture(autouse=True)
def _no_network():
    seen = len(_SEEN)
    yield
    if len(_SEEN) > seen:
        pytest.fail(
            "tests/unit is hermetic, this test used the network (move it to tests/integration):\n"
            + "\n".join(_SEEN[seen:]),
            pytrace=False,
        )


@pytest.fixture(scope="session")
def lab():
    pytest.fail("tests/unit is hermetic: a test that needs the lab belongs in tests/integration")
