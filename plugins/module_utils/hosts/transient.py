# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Transient failures of a service (Ironic, a Kubernetes API): requeued with backoff, failed only when they last.

baremetal-operator and the Cluster API controllers requeue a reconcile that met a dropped connection, a timeout
or a 5xx, with an exponential backoff; only the controller's own deadline ends it. The same here: ``classify``
says whether an exception is such a failure (and how to name it), ``Tracker`` counts them per object and gives
the next delay, and turns the ``limit``-th one in a row into a ServiceUnavailable naming the last error.
"""

from __future__ import annotations

import http.client
import threading

from ansible_collections.baremetal.capi.plugins.module_utils.errors import CapiError, Requeue


class ServiceUnavailable(CapiError):
    """A service failed transiently too many times in a row: the last error is named."""


def classify(exc: BaseException) -> str | None:
    """A short text for a transient failure (dropped connection, timeout, 5xx), or None for any other error."""
    if isinstance(exc, CapiError):
        return None  # the engine's own errors say what they are
    status = getattr(exc, "status_code", None) or getattr(exc, "http_status", None) or getattr(exc, "status", None)
    if isinstance(status, int) and 500 <= status <= 599:
        return f"HTTP {status} {type(exc).__name__}: {getattr(exc, 'details', None) or exc}"
    names = {cls.__name__ for cls in type(exc).__mro__}
    transient = {
        # requests / urllib3 (under openstacksdk, keystoneauth and the kubernetes client)
        "ConnectionError", "Timeout", "ReadTimeout", "ConnectTimeout", "ChunkedEncodingError",
        "ProtocolError", "MaxRetryError", "NewConnectionError", "ReadTimeoutError",
        # keystoneauth1.exceptions.connection
        "ConnectFailure", "RetriableConnectionFailure", "UnknownConnectionError",
    }  # fmt: skip
    if isinstance(exc, (http.client.RemoteDisconnected, ConnectionError, TimeoutError)) or names & transient:
        return f"{type(exc).__name__}: {exc}"
    cause = exc.__cause__  # explicit chaining: keystoneauth's ConnectFailure from requests' ConnectionError
    if cause is not None and cause is not exc:
        inner = classify(cause)
        if inner:
            return f"{type(exc).__name__}: {inner}"
    return None


class Tracker:
    """Consecutive transient failures per key; thread-safe (the runner steps objects in parallel)."""

    def __init__(self, service: str, base: float = 1.0, cap: float = 30.0, limit: int = 8):
        self.service, self.base, self.cap, self.limit = service, base, cap, limit
        self._count: dict = {}
        self._lock = threading.Lock()

    def ok(self, key) -> None:
        with self._lock:
            self._count.pop(key, None)

    def failed(self, key, text: str) -> Requeue:
        """The Requeue for this failure, or ServiceUnavailable (raised) once ``limit`` came in a row."""
        with self._lock:
            n = self._count[key] = self._count.get(key, 0) + 1
        if n >= self.limit:
            raise ServiceUnavailable(f"{self.service} failed {n} times in a row; last error: {text}")
        delay = min(self.base * 2 ** (n - 1), self.cap)
        return Requeue(
            f"{self.service} transient failure {n}/{self.limit}, retrying in {delay:g}s: {text}", after=delay
        )
