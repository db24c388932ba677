"""The BMC proxy's reset log and its refuse_graceful fault: its request handler driven over a socket pair (no
network), the emulator behind it standing in as an answer of 204."""

from __future__ import annotations

import json
import socket
import threading
from types import SimpleNamespace

import pytest

from lab.ironic import bmc_proxy

SYSTEM = "0b9c2f8e-0000-4000-8000-000000000001"


def _accepted(handler, body):
    handler.send_response(204)
    handler.send_header("Content-Length", "0")
    handler.end_headers()
    return 204


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setattr(bmc_proxy.Handler, "_forward", _accepted)
    monkeypatch.setattr(bmc_proxy.Handler, "log_message", lambda *a: None)
    return SimpleNamespace(faults=bmc_proxy.Faults(), lock=threading.Lock(), resets={}, reset_log={}, upstream=None)


def call(server, method: str, path: str, body: dict | None = None) -> tuple[int, object]:
    data = b"" if body is None else json.dumps(body).encode()
    head = f"{method} {path} HTTP/1.0\r\nHost: bmc\r\nContent-Length: {len(data)}\r\n\r\n".encode()
    client, theirs = socket.socketpair()
    with client, theirs:
        client.sendall(head + data)
        bmc_proxy.Handler(theirs, ("bmc", 0), server)
        theirs.close()
        raw = b""
        while chunk := client.recv(65536):
            raw += chunk
    status_line, _, rest = raw.partition(b"\r\n")
    payload = rest.split(b"\r\n\r\n", 1)[1]
    return int(status_line.split()[1]), json.loads(payload) if payload else None


def reset(server, reset_type: str) -> tuple[int, object]:
    return call(server, "POST", f"/redfish/v1/Systems/{SYSTEM}/Actions/ComputerSystem.Reset", {"ResetType": reset_type})


def test_the_log_records_each_reset_type_with_its_answer(server):
    assert reset(server, "GracefulShutdown")[0] == 204
    assert reset(server, "ForceOff")[0] == 204
    status, log = call(server, "GET", f"/lab/resets/log/{SYSTEM}")
    assert status == 200
    assert [(e["reset_type"], e["status"]) for e in log] == [("GracefulShutdown", 204), ("ForceOff", 204)]
    assert call(server, "GET", "/lab/resets")[1] == {SYSTEM: 2}


def test_refuse_graceful_answers_400_and_lets_other_resets_through(server):
    assert call(server, "PUT", f"/lab/faults/{SYSTEM}", {"refuse_graceful": True})[0] == 200
    status, body = reset(server, "GracefulShutdown")
    assert status == 400 and "GracefulShutdown refused" in body["error"]["message"]
    assert reset(server, "ForceOff")[0] == 204
    log = call(server, "GET", "/lab/resets/log")[1][SYSTEM]
    assert [(e["reset_type"], e["status"]) for e in log] == [("GracefulShutdown", 400), ("ForceOff", 204)]
    # only what the emulator accepted counts as a reset (the node simulator counts boots with it)
    assert call(server, "GET", "/lab/resets")[1] == {SYSTEM: 1}
    call(server, "DELETE", "/lab/resets/log")
    assert call(server, "GET", "/lab/resets/log")[1] == {}
