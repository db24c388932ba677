"""Which service errors are transient (requeued with backoff) and when they stop being (the run fails, naming it)."""

from __future__ import annotations

import http.client

import pytest
import requests
from keystoneauth1 import exceptions as ksa
from openstack import exceptions as osexc

from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid, Requeue
from ansible_collections.baremetal.capi.plugins.module_utils.hosts import transient


def _chained(outer, inner):
    try:
        try:
            raise inner
        except Exception as exc:
            raise outer from exc
    except Exception as exc:
        return exc


@pytest.mark.parametrize(
    "exc",
    [
        http.client.RemoteDisconnected("Remote end closed connection without response"),
        requests.exceptions.ConnectionError("Connection aborted."),
        requests.exceptions.ReadTimeout("read timed out"),
        ksa.ConnectFailure("Unable to establish connection to http://127.0.0.1:6385"),
        ksa.ConnectTimeout("timed out"),
        osexc.HttpException("Service Unavailable", http_status=503),
        osexc.HttpException("Internal Server Error", http_status=500),
        _chained(RuntimeError("wrapped"), http.client.RemoteDisconnected("closed")),
    ],
    ids=lambda e: type(e).__name__,
)
def test_transient(exc):
    assert transient.classify(exc)


@pytest.mark.parametrize(
    "exc",
    [
        osexc.ConflictException("node is locked", http_status=409),
        osexc.BadRequestException("bad", http_status=400),
        osexc.NotFoundException("gone", http_status=404),
        ValueError("a bug"),
        Invalid("bad input", field="spec"),
    ],
    ids=lambda e: type(e).__name__,
)
def test_not_transient(exc):
    assert transient.classify(exc) is None


def test_backoff_then_the_last_error_named():
    t = transient.Tracker("Ironic", base=1, cap=4, limit=4)
    delays = [t.failed("h", "RemoteDisconnected: closed") for _ in range(3)]
    assert all(isinstance(r, Requeue) for r in delays)
    assert [r.after for r in delays] == [1, 2, 4]
    assert "Ironic transient failure 3/4, retrying in 4s: RemoteDisconnected: closed" == delays[2].message
    with pytest.raises(transient.ServiceUnavailable, match="Ironic failed 4 times in a row; last error: HTTP 503"):
        t.failed("h", "HTTP 503 HttpException: Service Unavailable")
    t.ok("h")
    assert t.failed("h", "x").after == 1  # a success in between starts again
    assert t.failed("other", "x").after == 1  # per object
