"""The kubernetes store's retry policy (store/retry.py): delays, Retry-After, and whether a retried write that
met AlreadyExists / Conflict finds what it wrote.  The store itself through a faulty API server:
tests/integration/kube/test_kube_store_faults.py."""

from __future__ import annotations

from ansible_collections.baremetal.capi.plugins.module_utils.store import retry


def test_backoff_doubles_up_to_the_cap_and_retry_after_wins():
    p = retry.Policy(attempts=6, base=0.25, cap=2.0)
    assert [p.delay(i) for i in range(5)] == [0.25, 0.5, 1.0, 2.0, 2.0]
    assert p.delay(0, retry_after=1.5) == 1.5
    assert p.delay(0, retry_after=60) == 2.0  # capped: the call's own deadline is not the server's to set
    assert retry.retry_after({"Retry-After": "3"}) == 3.0
    assert retry.retry_after({"Retry-After": "soon"}) is None and retry.retry_after(None) is None


def test_same_write_compares_content_not_server_metadata():
    sent = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "1"},
            "metadata": {"name": "c", "labels": {"x": "y"}, "resourceVersion": "5"}}  # fmt: skip
    stored = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "1"},
              "metadata": {"name": "c", "labels": {"x": "y"}, "resourceVersion": "6", "uid": "u"}}  # fmt: skip
    assert retry.same_write(stored, sent)
    assert not retry.same_write({**stored, "data": {"a": "2"}}, sent)
    assert not retry.same_write({**stored, "metadata": {**stored["metadata"], "finalizers": ["f"]}}, sent)
    both = {"spec": {"b": 1}, "status": {"s": 1}}
    assert retry.same_write({**stored, **both}, {**sent, **both}, status=True)
    assert not retry.same_write({"status": {"s": 2}}, {"status": {"s": 1}}, status=True)


def test_only_a_dropped_tls_connection_is_transient():
    class Exc:
        def __init__(self, status, reason):
            self.status, self.reason = status, reason

    assert retry.tls_dropped(Exc(0, "SSLError\nEOF occurred in violation of protocol"))
    assert not retry.tls_dropped(Exc(0, "SSLError\n[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed"))
    assert not retry.tls_dropped(Exc(503, "Service Unavailable"))
