"""The kubernetes store through the lab's fault proxy: transient API failures are retried inside the call.

The proxy (lab/faultproxy.py) serves HTTPS with a certificate of the lab CA in front of the lab's kube-apiserver
and fails some requests: 503s, 429s with Retry-After, connections closed without an answer or reset, and
answers lost after the write was applied. The store's whole life cycle (create, get, paged list, update at a
resourceVersion, status update, unconditional update, delete through finalizers) goes through it and must end
as it would without faults, checked on the API server directly; the proxy's counters show the faults happened.
A failure that does not stop fails the call, naming the last error and the attempts.
"""

from __future__ import annotations

import secrets
import socket

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.errors import Conflict, StoreUnavailable
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta
from ansible_collections.baremetal.capi.plugins.module_utils.store import retry
from ansible_collections.baremetal.capi.plugins.module_utils.store.kubernetes import KubernetesStore
from lab import faultproxy, process
from lab.kube_build import pki
from lab.services import kube as kube_svc


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def faulty(lab, kube, tmp_path):
    """(proxy URL, a KubernetesStore through it, CA file); the proxy stopped by PID afterwards."""
    cfg = lab.cfg
    server, token, ca_file = kube_svc.admin(cfg)
    ca_cert, ca_key = kube_svc._lab_ca(cfg)
    cert, key = pki.issue(ca_cert, ca_key, "fault-proxy", ips=["127.0.0.1"], server=True)
    pki.write(tmp_path / "proxy.crt", cert)
    pki.write(tmp_path / "proxy.key", key, private=True)
    name = f"faultproxy-kube-{secrets.token_hex(3)}"
    url = faultproxy.start(cfg, name, server, _free_port(), cert=tmp_path / "proxy.crt",
                           key=tmp_path / "proxy.key", upstream_ca=ca_file)  # fmt: skip
    store = KubernetesStore(host=url, api_key=token, ca_cert=str(ca_file))
    store.retry = retry.Policy(attempts=6, base=0.05, cap=1.0)
    try:
        yield url, store, ca_file
    finally:
        store.close()
        process.stop(cfg, name)


def _configmap(name: str, ns: str, value: str) -> dict:
    cm = meta.new("ConfigMap", name, namespace=ns)
    cm["data"] = {"value": value}
    return cm


def _life_cycle(store: KubernetesStore, ns: str, n: int) -> None:
    """What a reconcile does to a store, start to end."""
    for i in range(n):
        store.create(_configmap(f"cm-{i}", ns, "a"))
        secret = meta.new("Secret", f"s-{i}", namespace=ns)
        secret["stringData"] = {"password": f"pw-{i}"}
        store.create(secret)
    for i in range(n):
        cm = store.get("ConfigMap", f"cm-{i}", ns)
        cm["data"]["value"] = "b"
        cm["metadata"].setdefault("finalizers", []).append("test.baremetal.capi/hold")
        store.update(cm)  # at the resourceVersion just read
    pool = meta.new("IPPool", "pool", namespace=ns)
    pool["apiVersion"] = "ipam.metal3.io/v1alpha1"
    pool["spec"] = {"namePrefix": "pool", "prefix": 24, "pools": [{"start": "10.1.0.10", "end": "10.1.0.20"}]}
    pool = store.create(pool)
    pool["status"] = {"indexes": {"a": "10.1.0.10"}}
    store.update_status(pool)
    listed = store.list("ConfigMap", ns, "")
    assert sum(1 for c in listed if c["metadata"]["name"].startswith("cm-")) == n
    for i in range(n):
        store.delete("ConfigMap", f"cm-{i}", ns)  # held by the finalizer: deleting
        cm = store.get("ConfigMap", f"cm-{i}", ns)
        assert meta.is_deleting(cm)
        cm["metadata"] = {"name": f"cm-{i}", "namespace": ns, "finalizers": []}  # no resourceVersion
        store.update(cm)
        store.delete("Secret", f"s-{i}", ns)


def _check_end(kube_store, ns: str, n: int) -> None:
    left = [o["metadata"]["name"] for kind in ("ConfigMap", "Secret") for o in kube_store.list(kind, ns)]
    assert [name for name in left if name.startswith(("cm-", "s-"))] == []
    pool = kube_store.get("IPPool", "pool", ns)
    assert pool["status"]["indexes"] == {"a": "10.1.0.10"}


PLANS = {
    "503 every 3rd request": {"status_every": 3, "status": 503},
    "429 with Retry-After every 2nd": {"status_every": 2, "status": 429, "retry_after": 0},
    "closed without an answer every 3rd": {"drop_every": 3},
    "reset every 4th": {"drop_every": 4, "reset": True},
    "write applied, answer lost, every 3rd write": {"drop_every": 3, "after_forward": True,
                                                     "methods": ["POST", "PUT", "DELETE"]},
}  # fmt: skip


@pytest.mark.parametrize("plan", list(PLANS))
def test_store_life_cycle_converges_through_transient_failures(faulty, kube_store, kube_namespace, plan):
    url, store, ca = faulty
    store.list_page = 2  # several pages per list: a fault can land between two
    faultproxy.control(url, "PUT", PLANS[plan], ca=ca)
    _life_cycle(store, kube_namespace, 4)
    seen = faultproxy.control(url, ca=ca)
    assert seen["dropped"] + seen["statuses"] >= 5, seen  # the faults happened
    _check_end(kube_store, kube_namespace, 4)


def test_a_lost_answer_is_not_taken_for_a_conflict(faulty, kube_store, kube_namespace):
    """The update was applied and its answer lost: the retry meets a newer resourceVersion, and the store sees
    that what is stored is what it wrote.  A real conflict (someone else's write) stays a Conflict."""
    url, store, ca = faulty
    ns = kube_namespace
    store.create(_configmap("c", ns, "a"))
    cm = store.get("ConfigMap", "c", ns)
    faultproxy.control(url, "PUT", {"drop_every": 1, "after_forward": True, "methods": ["PUT"], "limit": 1}, ca=ca)
    cm["data"]["value"] = "mine"
    written = store.update(cm)
    assert written["data"]["value"] == "mine"
    assert faultproxy.control(url, ca=ca)["dropped"] == 1
    stale = dict(cm, metadata=dict(cm["metadata"]))
    other = kube_store.get("ConfigMap", "c", ns)
    other["data"]["value"] = "theirs"
    kube_store.update(other)
    stale["data"] = {"value": "late"}
    with pytest.raises(Conflict):
        store.update(stale)
    assert kube_store.get("ConfigMap", "c", ns)["data"]["value"] == "theirs"


def test_a_failure_that_lasts_fails_the_call_naming_it(faulty, kube_namespace):
    url, store, ca = faulty
    store.retry = retry.Policy(attempts=3, base=0.05)
    faultproxy.control(url, "PUT", {"status_every": 1, "status": 503}, ca=ca)
    with pytest.raises(StoreUnavailable) as err:
        store.get("ConfigMap", "nothing", kube_namespace)
    assert "503" in str(err.value) and "3 attempts" in str(err.value), err.value
    assert faultproxy.control(url, "DELETE", ca=ca)["plan"] == {}
    faultproxy.control(url, "PUT", {"drop_every": 1}, ca=ca)
    with pytest.raises(StoreUnavailable) as err:
        store.get("ConfigMap", "nothing", kube_namespace)
    assert "3 attempts" in str(err.value) and "cannot reach the Kubernetes API" in str(err.value), err.value
