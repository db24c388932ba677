"""capi/etcd.py against a real 3-member etcd cluster (TLS, client-cert-auth) on loopback addresses."""

from __future__ import annotations

import base64
import datetime
import os
import ssl
import time

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.bootstrap import pki
from ansible_collections.baremetal.capi.plugins.module_utils.capi import etcd
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta

from .etcd_cluster import EtcdCluster

NS = "etcd-client"


@pytest.fixture(scope="module")
def ca():
    return pki.new_ca()


@pytest.fixture
def cluster(tmp_path, ca):
    # Addresses of this run only, so that two runs (or a lab's own members) never share one.
    base = 100 + os.getpid() % 100
    c = EtcdCluster(tmp_path, ca[0], ca[1], [f"127.{base}.7.{i}" for i in (1, 2, 3)])
    c.start_all()
    try:
        c.wait_healthy([0, 1, 2])
        yield c
    finally:
        c.stop_all()


def put_store(store, ca, c: EtcdCluster) -> list[dict]:
    """The ``<cluster>-etcd`` Secret and three control-plane Machines on the members' addresses."""
    secret = meta.new("Secret", "c1-etcd", NS)
    secret["data"] = {
        "tls.crt": base64.b64encode(ca[0].encode()).decode(),
        "tls.key": base64.b64encode(ca[1].encode()).decode(),
    }
    store.create(secret)
    machines = []
    for name, ip in zip(c.names, c.addresses, strict=True):
        m = {
            "metadata": {"name": f"m-{name}", "namespace": NS},
            "status": {
                "nodeRef": {"name": name},
                "addresses": [{"type": "Hostname", "address": name}, {"type": "InternalIP", "address": ip}],
            },
        }
        machines.append(m)
    return machines


def retried(call, timeout=60):
    """etcd refuses a member change until its peers have been connected for 5 s (EtcdBusy): ask again."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return call()
        except etcd.EtcdBusy:
            if time.monotonic() > deadline:
                raise
            time.sleep(1)


def test_list_status_move_leader_and_remove(store, ca, cluster):
    machines = put_store(store, ca, cluster)
    client = etcd.client_for(store, "c1", NS, machines)
    assert client.endpoints == [cluster.client_url(i) for i in range(3)]

    members = client.members()
    assert sorted(m.name for m in members) == cluster.names
    # uint64 ids arrive as decimal strings
    assert all(m.id.isdigit() for m in members)
    assert {etcd.member_for(members, m).name for m in machines} == set(cluster.names)

    statuses = client.statuses(members)
    assert set(statuses) == {m.id for m in members}
    assert client.healthy_ids(members, statuses) == {m.id for m in members}
    leader = client.leader_id(statuses)
    assert leader in statuses and all(st["version"].startswith("3.") for st in statuses.values())

    target = next(m for m in members if m.id != leader)
    assert client.move_leader(target.id) is True
    # the status of every member agrees on the new leader (asked with the test's own client)
    for i in range(3):
        assert str(cluster.call(i, "/v3/maintenance/status")["leader"]) == target.id
    assert client.move_leader(target.id) is False

    victim = next(m for m in members if m.id != target.id)
    assert retried(lambda: client.remove_member(victim.id)) is True
    left = cluster.call(cluster.names.index(target.name), "/v3/cluster/member/list")["members"]
    assert sorted(m["name"] for m in left) == sorted(m.name for m in members if m.id != victim.id)
    assert client.remove_member(victim.id) is False  # not a member any more


def test_a_removal_that_would_lose_quorum_is_refused(store, ca, cluster):
    machines = put_store(store, ca, cluster)
    client = etcd.client_for(store, "c1", NS, machines)
    members = {m.name: m for m in client.members()}
    cluster.stop(1)
    cluster.stop(2)
    # node-0 alone answers: removing either stopped member leaves 2 voters with 1 healthy, 1 short of quorum.
    for name in ("node-1", "node-0"):
        with pytest.raises(etcd.QuorumRefused, match="would lose etcd quorum"):
            client.remove_member(members[name].id)
    cluster.start(1, [0, 1, 2], state="existing")
    cluster.start(2, [0, 1, 2], state="existing")
    cluster.wait_healthy([0, 1, 2])
    assert sorted(m.name for m in client.members()) == cluster.names  # nothing was removed


def test_the_members_require_a_client_certificate_from_the_cluster_ca(cluster):
    bare = ssl.create_default_context(cafile=str(cluster.root / "ca.crt"))
    with pytest.raises(etcd.EtcdUnavailable):
        etcd.EtcdClient([cluster.client_url(0)], bare)._post(cluster.client_url(0), "/v3/cluster/member/list")
    other_ca = pki.new_ca()
    cert, key = etcd.client_certificate(*other_ca)
    wrong = etcd.ssl_context(cluster.ca_crt, cert, key)
    with pytest.raises(etcd.EtcdUnavailable):
        etcd.EtcdClient([cluster.client_url(0)], wrong).members()


def test_the_client_certificate_is_short_lived_and_named_like_kcps(ca):
    from cryptography import x509

    cert, _key = etcd.client_certificate(*ca)
    parsed = x509.load_pem_x509_certificate(cert.encode())
    assert parsed.subject.rfc4514_string() == "CN=cluster-api.x-k8s.io"
    lifetime = parsed.not_valid_after_utc - parsed.not_valid_before_utc
    assert lifetime <= etcd.CLIENT_CERT_LIFETIME + datetime.timedelta(minutes=5)
