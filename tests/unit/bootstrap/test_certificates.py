"""Certificate lifetimes: kubeconfig renewal driven by an injected clock, the expiry annotation, the CA's expiry."""

from __future__ import annotations

import base64
import datetime

import yaml
from cryptography import x509
from test_kubeadm import CP_SPEC, NS, make_cluster, make_machine

from ansible_collections.baremetal.capi.plugins.module_utils.bootstrap import certificates, kubeadm
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta, names

DAY = datetime.timedelta(days=1)


def _kubeconfig(store):
    secret = store.get("Secret", "c1-kubeconfig", NS)
    return secret, base64.b64decode(secret["data"]["value"]).decode()


def _client_cert(text):
    user = yaml.safe_load(text)["users"][0]["user"]
    return x509.load_pem_x509_certificate(base64.b64decode(user["client-certificate-data"]))


def _cluster_with_kubeconfig(store, now):
    cluster = make_cluster(store)
    certs, _ = kubeadm.ensure_certificates(store, cluster)
    # made as ensure_kubeconfig makes it, at the injected time
    value = kubeadm.pki.admin_kubeconfig(
        "c1", "https://127.0.3.1:6443", certs["ca"]["crt"], certs["ca"]["key"], now=now
    )
    secret = kubeadm._cluster_secret(cluster, "c1-kubeconfig", {"value": value}, None)
    store.create(secret)
    return cluster


def test_client_certificate_is_renewed_with_less_than_six_months_left(store):
    t0 = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
    cluster = _cluster_with_kubeconfig(store, t0)
    before_secret, before = _kubeconfig(store)
    assert _client_cert(before).not_valid_after_utc == t0 + 365 * DAY
    # seven months of validity left: kept
    assert not certificates.renew_kubeconfig(store, cluster, now=t0 + 150 * DAY)
    assert _kubeconfig(store)[1] == before
    # check mode says it would, and writes nothing
    assert certificates.renew_kubeconfig(store, cluster, now=t0 + 190 * DAY, check=True)
    assert _kubeconfig(store)[1] == before
    # less than six months left: a new key pair, valid a year from the (injected) now, same CA and server
    t1 = t0 + 190 * DAY
    assert certificates.renew_kubeconfig(store, cluster, now=t1)
    after_secret, after = _kubeconfig(store)
    cert = _client_cert(after)
    assert cert.not_valid_after_utc == t1 + 365 * DAY
    assert cert.subject.rfc4514_string() == "CN=kubernetes-admin,O=system:masters"
    old_cfg, new_cfg = yaml.safe_load(before), yaml.safe_load(after)
    assert old_cfg["clusters"] == new_cfg["clusters"] and old_cfg["contexts"] == new_cfg["contexts"]
    assert new_cfg["users"][0]["user"]["client-key-data"] != old_cfg["users"][0]["user"]["client-key-data"]
    ca = x509.load_pem_x509_certificate(base64.b64decode(store.get("Secret", "c1-ca", NS)["data"]["tls.crt"]))
    cert.verify_directly_issued_by(ca)
    assert after_secret["metadata"]["ownerReferences"] == before_secret["metadata"]["ownerReferences"]
    # and then it is young again
    assert not certificates.renew_kubeconfig(store, cluster, now=t1 + DAY)


def test_a_kubeconfig_the_user_brought_is_left_alone(store):
    t0 = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
    cluster = _cluster_with_kubeconfig(store, t0)
    secret, before = _kubeconfig(store)
    secret["metadata"]["ownerReferences"] = []
    store.update(secret)
    assert not certificates.renew_kubeconfig(store, cluster, now=t0 + 300 * DAY)
    assert _kubeconfig(store)[1] == before


def test_reconcile_config_renews_through_its_clock(store):
    t0 = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
    _cluster_with_kubeconfig(store, t0)
    _machine, config = make_machine(store, "cp-0", control_plane=True, spec=CP_SPEC)
    step = kubeadm.reconcile_config(store, config, now=lambda: t0 + 200 * DAY)
    assert step.changed
    assert _client_cert(_kubeconfig(store)[1]).not_valid_after_utc == t0 + 565 * DAY
    # the machine has its data now: a later round with the real time leaves the kubeconfig alone
    config = store.get("KubeadmConfig", "cp-0", NS)
    kubeadm.reconcile_config(store, config)
    assert _client_cert(_kubeconfig(store)[1]).not_valid_after_utc == t0 + 565 * DAY


def test_certificates_expiry_annotation_on_the_control_plane_config(store):
    cluster = make_cluster(store)
    machine, config = make_machine(store, "cp-0", control_plane=True, spec=CP_SPEC)
    kubeadm.reconcile_config(store, config)
    config = store.get("KubeadmConfig", "cp-0", NS)
    # no Node yet: nothing written
    assert not certificates.annotate_certificates_expiry(store, config, machine, cluster, probe=lambda h, p: None)
    machine = store.get("Machine", "cp-0", NS)
    machine["status"] = {"nodeRef": {"name": "cp-0"}, "addresses": [{"type": "InternalIP", "address": "192.0.2.7"}]}
    machine = store.update_status(machine)
    asked = []
    served = datetime.datetime(2027, 5, 1, 8, 30, tzinfo=datetime.UTC)

    def probe(host, port):
        asked.append((host, port))
        return served

    assert certificates.annotate_certificates_expiry(store, config, machine, cluster, probe=probe)
    assert asked == [("192.0.2.7", 6443)]
    config = store.get("KubeadmConfig", "cp-0", NS)
    assert meta.annotations(config)[names.CERTIFICATES_EXPIRY_ANNOTATION] == "2027-05-01T08:30:00Z"
    # written once
    assert not certificates.annotate_certificates_expiry(store, config, machine, cluster, probe=probe)


def test_certificates_expiry_lower_bound_when_the_machine_does_not_answer(store):
    cluster = make_cluster(store)
    spec = {**CP_SPEC, "clusterConfiguration": {"certificateValidityPeriod": "720h"}}
    machine, config = make_machine(store, "cp-0", control_plane=True, spec=spec)
    kubeadm.reconcile_config(store, config)
    config = store.get("KubeadmConfig", "cp-0", NS)
    machine["status"] = {"nodeRef": {"name": "cp-0"}}
    assert certificates.annotate_certificates_expiry(store, config, machine, cluster, probe=lambda h, p: None)
    written = store.get("Secret", "cp-0", NS)["metadata"]["creationTimestamp"]
    expected = datetime.datetime.strptime(written, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.UTC) + 30 * DAY
    config = store.get("KubeadmConfig", "cp-0", NS)
    assert meta.annotations(config)[names.CERTIFICATES_EXPIRY_ANNOTATION] == certificates.rfc3339(expected)


def test_workers_get_no_annotation(store):
    cluster = make_cluster(store)
    kubeadm.ensure_certificates(store, cluster)
    machine, config = make_machine(store, "w-0", control_plane=False)
    machine["status"] = {"nodeRef": {"name": "w-0"}}
    assert not certificates.annotate_certificates_expiry(store, config, machine, cluster, probe=lambda h, p: None)


def test_ca_expiry(store):
    cluster = make_cluster(store)
    assert certificates.ca_expiry(store, "c1", NS) is None
    kubeadm.ensure_certificates(store, cluster)
    crt = base64.b64decode(store.get("Secret", "c1-ca", NS)["data"]["tls.crt"])
    expected = x509.load_pem_x509_certificate(crt).not_valid_after_utc
    assert certificates.ca_expiry(store, "c1", NS) == certificates.rfc3339(expected)
    assert expected - datetime.datetime.now(datetime.UTC) > 3600 * DAY  # ten years, as CAPI makes it


def test_init_lock_of_a_machine_that_is_gone_is_released(store):
    """A first control plane remediated before it initialized: its replacement takes the lock and gets init."""
    make_cluster(store)
    _first, config = make_machine(store, "cp-0", control_plane=True, spec=CP_SPEC)
    assert kubeadm.reconcile_config(store, config).data["bootstrap"] == "init"
    store.delete("KubeadmConfig", "cp-0", NS)
    store.delete("Machine", "cp-0", NS)
    _second, config = make_machine(store, "cp-1", control_plane=True, spec=CP_SPEC)
    assert kubeadm.reconcile_config(store, config).data["bootstrap"] == "init"
    lock = store.get("ConfigMap", "c1-lock", NS)
    assert '"machineName": "cp-1"' in lock["data"]["lock-information"]


def test_report_prefers_the_machine_annotation_then_the_config(store):
    cluster = make_cluster(store)
    kubeadm.ensure_certificates(store, cluster)
    machine, config = make_machine(store, "cp-0", control_plane=True, spec=CP_SPEC)
    machine["spec"]["bootstrap"] = {"configRef": {"kind": "KubeadmConfig", "name": "cp-0"}}
    assert certificates.report(store, machine)["certificatesExpiry"] is None
    config["metadata"]["annotations"] = {names.CERTIFICATES_EXPIRY_ANNOTATION: "2027-01-01T00:00:00Z"}
    store.update(config)
    out = certificates.report(store, machine)
    assert out == {"caExpiry": certificates.ca_expiry(store, "c1", NS), "certificatesExpiry": "2027-01-01T00:00:00Z"}
    machine["metadata"]["annotations"] = {names.CERTIFICATES_EXPIRY_ANNOTATION: "2026-12-01T00:00:00Z"}
    assert certificates.report(store, machine)["certificatesExpiry"] == "2026-12-01T00:00:00Z"
