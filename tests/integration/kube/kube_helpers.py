"""Helpers of the kube integration tests (imported by name: pytest puts this folder on sys.path)."""

from __future__ import annotations

import socket
import time

import pytest
from kubernetes.client.exceptions import ApiException

# How long to wait for a controller to act before calling it broken (not a timing assertion).
PATIENCE = 60.0


def eventually(check, what: str, patience: float = PATIENCE):
    deadline = time.monotonic() + patience
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not after {patience:.0f}s")
        time.sleep(0.2)


def gone(read) -> bool:
    try:
        read()
    except ApiException as exc:
        if exc.status == 404:
            return True
        raise
    return False


def free_port(host: str) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]
