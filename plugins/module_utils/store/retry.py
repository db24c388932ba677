# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Transient Kubernetes API failures, retried inside one store call.

client-go's rest client retries a request that met a 429 or a 5xx with ``Retry-After`` and a connection reset
on a read; the Cluster API controllers requeue everything else. A store call here does the same inside the call:
a dropped or reset connection, a timeout, 429 Too Many Requests, 500, 502, 503 or 504 is sent again with an
exponential backoff (``Retry-After`` when the server gives one, capped), and only the last of ``attempts`` fails,
as StoreUnavailable naming that error and how many attempts were made.

A Conflict is not retried here: a write at a known resourceVersion that meets a newer one is the store's only
lock (a host claim), and the caller decides what to read again. What a retry can change is the answer to a write
whose first attempt may have been applied before its answer was lost: the second POST then meets AlreadyExists,
the second DELETE NotFound, the second PUT Conflict. ``same_write`` tells whether the object now stored is
what the write asked for (then the write succeeded and the call returns it).
"""

from __future__ import annotations

import time

TRANSIENT_STATUS = frozenset({429, 500, 502, 503, 504})


class Policy:
    """How many attempts and how long between them (seconds); ``sleep`` is injectable for tests."""

    def __init__(self, attempts: int = 6, base: float = 0.25, cap: float = 8.0, sleep=time.sleep):
        self.attempts, self.base, self.cap, self.sleep = max(1, int(attempts)), base, cap, sleep

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds before attempt ``attempt + 1`` (``attempt`` counts from 0)."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.cap)
        return min(self.base * 2**attempt, self.cap)


def retry_after(headers) -> float | None:
    """The ``Retry-After`` header in seconds (the API server sends whole seconds), or None."""
    try:
        value = (headers or {}).get("Retry-After")
    except AttributeError:
        return None
    try:
        return float(value) if value not in (None, "") else None
    except (TypeError, ValueError):
        return None


def tls_dropped(exc) -> bool:
    """The kubernetes client reports a TLS connection that died as an ApiException with status 0 (its SSLError);
    a certificate that does not verify is that too, and is not transient."""
    reason = str(getattr(exc, "reason", "") or "")
    if getattr(exc, "status", None) != 0 or "SSLError" not in reason:
        return False
    return "CERTIFICATE" not in reason.upper() and any(
        t in reason for t in ("EOF", "reset", "Connection aborted", "timed out")
    )


def _meta_view(md: dict) -> dict:
    return {k: md.get(k) or None for k in ("labels", "annotations", "finalizers", "ownerReferences")}


def same_write(stored: dict, sent: dict, status: bool = False) -> bool:
    """Whether ``stored`` holds what ``sent`` asked for: its status (a status write), or everything but the
    server's metadata (labels, annotations, finalizers and owners compared)."""
    if status:
        return (stored.get("status") or {}) == (sent.get("status") or {})
    skip = {"metadata", "status", "apiVersion", "kind"}
    keys = (set(stored) | set(sent)) - skip
    if any(stored.get(k) != sent.get(k) for k in keys):
        return False
    return _meta_view(stored.get("metadata") or {}) == _meta_view(sent.get("metadata") or {})
