"""The lab's Kubernetes API behaves like a real cluster's where the collection relies on it."""

from __future__ import annotations

import ssl
import time
import urllib.request

import pytest
from kube_helpers import PATIENCE, eventually, free_port, gone
from kubernetes import client as k

from lab import process
from lab.config import LabConfig, Ports
from lab.kube_build import build, pki
from lab.services import kube as kube_svc


def test_binaries_are_cached_and_found_without_go(lab, kube, monkeypatch):
    first = build.cached(lab.cfg)
    assert first is not None
    # With no Go toolchain reachable, a cached build must still be found (and not rebuilt).
    monkeypatch.setenv("PATH", "/nonexistent")
    assert build.build(lab.cfg) == first
    assert build.stats(lab.cfg)["kubernetes"] == build.K8S_VERSION


def test_committed_gomod_matches_pinned_release():
    committed = (build.HERE / "go.mod").read_text()
    wanted = build.render_gomod(build.upstream_gomod())
    assert build._in_step(committed, wanted)
    staging = build.staging_modules(build.upstream_gomod())
    assert "k8s.io/apiserver" in staging and "k8s.io/client-go" in staging
    assert f"k8s.io/apiserver => k8s.io/apiserver {build.staging_version()}" in committed


def test_status_reports_the_pinned_version(lab, kube):
    st = kube_svc.status(lab.cfg)
    assert st["healthy"] is True
    assert st["version"] == build.K8S_VERSION
    assert all(st["pids"].values())


def test_new_namespace_gets_default_service_account(kube_client, kube_namespace):
    core = k.CoreV1Api(kube_client)
    eventually(lambda: not gone(lambda: core.read_namespaced_service_account("default", kube_namespace)), "default SA")


def test_deleting_an_owner_removes_its_dependents(kube_client, kube_namespace):
    core = k.CoreV1Api(kube_client)
    owner = core.create_namespaced_config_map(kube_namespace, {"metadata": {"name": "owner"}})
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner.metadata.uid}
    core.create_namespaced_config_map(kube_namespace, {"metadata": {"name": "dependent", "ownerReferences": [ref]}})
    core.create_namespaced_config_map(kube_namespace, {"metadata": {"name": "bystander"}})
    core.delete_namespaced_config_map("owner", kube_namespace)
    eventually(lambda: gone(lambda: core.read_namespaced_config_map("dependent", kube_namespace)), "dependent deleted")
    core.read_namespaced_config_map("bystander", kube_namespace)


def test_deleted_namespace_really_goes_away(kube_client):
    core = k.CoreV1Api(kube_client)
    name = f"t-ns-delete-{int(time.time() * 1000) % 100000}"
    core.create_namespace({"metadata": {"name": name}})
    core.create_namespaced_secret(name, {"metadata": {"name": "s"}, "stringData": {"a": "b"}})
    core.delete_namespace(name)
    assert core.read_namespace(name).status.phase == "Terminating"
    eventually(lambda: gone(lambda: core.read_namespace(name)), "namespace gone")


def test_workload_apiserver_on_shared_etcd(lab, kube, kube_client):
    """A second API server under its own etcd prefix, serving with a CA it is given."""
    ca_cert, ca_key = pki.new_ca("workload-ca")
    host = "127.0.0.2"
    prefix = f"/test-workload-{int(time.time())}"
    name = "test-workload-apiserver"
    info = kube_svc.start_apiserver(
        lab.cfg, name, ca_cert=ca_cert, ca_key=ca_key, bind_address=host, port=free_port(host), etcd_prefix=prefix
    )
    try:
        assert info["version"] == build.K8S_VERSION
        assert info["server"].startswith(f"https://{host}:")
        # A client certificate from the cluster CA in group system:masters, as a
        # Cluster API <cluster>-kubeconfig Secret carries, is admitted.
        client_pair = pki.issue(ca_cert, ca_key, "kubernetes-admin", orgs=["system:masters"])
        kcfg = lab.cfg.data(name) / "client-cert.kubeconfig"
        pki.write(kcfg, kube_svc.kubeconfig(info["server"], ca_cert, "kubernetes-admin", client=client_pair), True)
        from kubernetes import config as kconfig

        wl = kconfig.new_client_from_config(config_file=str(kcfg))
        wl_core = k.CoreV1Api(wl)
        wl_core.create_namespace({"metadata": {"name": "only-in-workload"}})
        wl_core.create_node({"metadata": {"name": "wl-node-0"}})
        # Its own keyspace: the management cluster sees neither.
        mgmt = k.CoreV1Api(kube_client)
        assert gone(lambda: mgmt.read_namespace("only-in-workload"))
        assert gone(lambda: mgmt.read_node("wl-node-0"))
        # The serving certificate chains to the given CA, not the lab's.
        ctx = ssl.create_default_context(cadata=ca_cert.decode())
        with pytest.raises(urllib.error.URLError):
            urllib.request.urlopen(info["server"] + "/readyz", context=ssl.create_default_context(), timeout=5)
        req = urllib.request.Request(info["server"] + "/readyz", headers={"Authorization": f"Bearer {info['token']}"})
        with urllib.request.urlopen(req, context=ctx, timeout=5) as resp:
            assert resp.status == 200
        wl.close()
    finally:
        kube_svc.stop_apiserver(lab.cfg, name, purge_prefix=prefix)
    assert process.pid_of(lab.cfg, name) is None
    assert kube_svc.purge_etcd_prefix(lab.cfg, prefix) == 0


def test_up_reset_down_in_a_lab_of_its_own(tmp_path):
    """The whole service life cycle in a separate lab folder and ports, so it disturbs no one."""
    ports = Ports(
        etcd_client=free_port("127.0.0.1"),
        etcd_peer=free_port("127.0.0.1"),
        kube_apiserver=free_port("127.0.0.1"),
        kube_controller_manager=free_port("127.0.0.1"),
    )
    cfg = LabConfig(root=tmp_path / "lab", ports=ports)
    cfg.ensure()
    try:
        info = kube_svc.up(cfg)
        assert info["version"] == build.K8S_VERSION
        pids = kube_svc.status(cfg)["pids"]
        assert kube_svc.up(cfg)["server"] == info["server"]  # idempotent: the same processes
        assert kube_svc.status(cfg)["pids"] == pids
        client = kube_svc.api_client(cfg)
        core = k.CoreV1Api(client)
        core.create_namespace({"metadata": {"name": "scratch"}})
        core.create_namespaced_config_map("scratch", {"metadata": {"name": "c"}})
        core.create_node({"metadata": {"name": "n0"}})
        kube_svc.reset(cfg)
        left = {ns.metadata.name for ns in core.list_namespace().items}
        assert left == set(kube_svc.SYSTEM_NAMESPACES)
        assert core.list_node().items == []
        client.close()
    finally:
        kube_svc.down(cfg)
    st = kube_svc.status(cfg)
    assert st["healthy"] is False
    assert not any(st["pids"].values())
    assert not process.port_open("127.0.0.1", ports.kube_apiserver)


def test_delete_namespace_clears_finalizers_no_controller_here_would(kube_client):
    core = k.CoreV1Api(kube_client)
    custom = k.CustomObjectsApi(kube_client)
    name = f"t-finalized-{int(time.time() * 1000) % 100000}"
    core.create_namespace({"metadata": {"name": name}})
    body = {
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2",
        "kind": "Metal3Machine",
        "metadata": {"name": "m", "finalizers": ["metal3machine.infrastructure.cluster.x-k8s.io"]},
        "spec": {},
    }
    custom.create_namespaced_custom_object("infrastructure.cluster.x-k8s.io", "v1beta2", name, "metal3machines", body)
    assert kube_svc.delete_namespace(kube_client, name, wait=PATIENCE) is True
    assert gone(lambda: core.read_namespace(name))
