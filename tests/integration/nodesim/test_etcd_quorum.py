"""Each workload cluster's own etcd: one member per control-plane host, added by kubeadm join, quorum lost
with a majority of the hosts off, a member removed through the etcd API staying removed.

The etcd is read the way Cluster API's KCP reads it: etcd's v3 API (here its JSON gateway) at the
member's address, with a client certificate CN=cluster-api.x-k8s.io signed by the cluster's etcd CA.
"""

from __future__ import annotations

import random
import ssl
import urllib.request

import pytest
from kubernetes import client as k

from ansible_collections.baremetal.capi.plugins.module_utils.bootstrap import kubeadm as cabpk_engine
from ansible_collections.baremetal.capi.plugins.module_utils.bootstrap import pki as cabpk_pki
from lab import process
from lab.kube_build import pki
from lab.nodesim import client as nodesim
from lab.nodesim import clusters, etcd

from .conftest import UNREACHABLE, eventually, install_cni, ready_status, workload_client
from .test_collection_bootstrap import _certs, _spec

# CABPK's cluster CAs carry PKCS#1 keys; any client certificate of the etcd CA is let in (etcd auth is off, as
# kubeadm leaves it), KCP's included (controlplane/kubeadm/internal/cluster.go newClientCert)
KCP_CLIENT_CN = "cluster-api.x-k8s.io"


def _free_ips(count: int) -> list[str]:
    ips: list[str] = []
    while len(ips) < count:
        ip = f"127.0.8.{random.randint(2, 250)}"
        if ip not in ips and not any(process.port_open(ip, p) for p in (etcd.CLIENT_PORT, etcd.PEER_PORT)):
            ips.append(ip)
    return ips


class Cluster:
    """One workload cluster the test drives: its Ironic nodes, member addresses and clients."""

    def __init__(self, name, endpoint, ironic, nodes, tmp_path):
        host, port = endpoint.split(":")
        self.name, self.endpoint, self.ironic, self.nodes = name, endpoint, ironic, nodes
        self.desc = {
            "metadata": {"name": name, "namespace": "nodesim"},
            "spec": {"controlPlaneEndpoint": {"host": host, "port": int(port)}},
        }
        self.certs, self.version = _certs(), "v1.34.4"
        self.ips = dict(zip([n.id for n in nodes], _free_ips(len(nodes)), strict=True))
        self.names = {n.id: f"{name}-cp-{i}" for i, n in enumerate(nodes)}
        kcfg = cabpk_pki.admin_kubeconfig(name, f"https://{endpoint}", self.certs["ca"]["crt"], self.certs["ca"]["key"])
        self.kubeconfig = kcfg
        self.core = k.CoreV1Api(workload_client(kcfg, tmp_path))
        etcd_ca = (self.certs["etcd"]["crt"].encode(), self.certs["etcd"]["key"].encode())
        crt, key = pki.issue(*etcd_ca, KCP_CLIENT_CN)
        self.files = (
            pki.write(tmp_path / f"{name}-etcd-ca.crt", etcd_ca[0]),
            pki.write(tmp_path / f"{name}-kcp.crt", crt),
            pki.write(tmp_path / f"{name}-kcp.key", key, private=True),
        )

    def deploy(self, node, user_data):
        meta = {"local-hostname": node.name, "name": self.names[node.id], "providerid": f"nodesim/{node.name}"}
        network = {
            "links": [{"id": "enp1s0", "type": "phy", "ethernet_mac_address": "00:5c:52:31:3c:01"}],
            "networks": [
                {"id": "n0", "link": "enp1s0", "type": "ipv4", "ip_address": self.ips[node.id], "netmask": "255.0.0.0"}
            ],
            "services": [],
        }
        drive = {"meta_data": meta, "user_data": user_data, "network_data": network}
        self.ironic.baremetal.set_node_provision_state(node, "active", config_drive=drive, wait=True, timeout=180)

    def init(self, node):
        self.deploy(node, cabpk_engine.render_init(self.desc, _spec("tier=cp"), self.version, self.certs))

    def join(self, node, token):
        data = cabpk_engine.render_join(self.desc, _spec("tier=cp"), self.version, self.certs, token, True)
        self.deploy(node, data)

    def etcd(self, *nodes) -> etcd.Client:
        nodes = nodes or self.nodes
        return etcd.Client([etcd.client_url(self.ips[n.id]) for n in nodes], *self.files)

    def nodes_ready(self) -> dict | None:
        try:
            return {n.metadata.name: ready_status(n) for n in self.core.list_node().items}
        except UNREACHABLE:
            return None

    def api_answers(self) -> bool:
        try:
            self.core.read_namespace("kube-system", _request_timeout=8)
            return True
        except UNREACHABLE:
            return False

    def power(self, node, state: str):
        self.ironic.baremetal.set_node_power_state(node, state, wait=True, timeout=60)


def _members(client: etcd.Client) -> dict:
    return {m.get("name") or m["ID"]: m for m in client.member_list()}


def _member_state(cfg, endpoint: str, name: str) -> dict:
    return nodesim.status(cfg)["clusters"][endpoint]["etcd"]["members"].get(name) or {}


def test_three_control_planes_quorum_and_member_removal(nodesim_lab, ironic, fake_nodes, endpoint, tmp_path):
    cfg = nodesim_lab.cfg
    cp0, cp1, cp2 = fake_nodes(3)
    c = Cluster("q3", endpoint, ironic, [cp0, cp1, cp2], tmp_path)
    c.init(cp0)
    install_cni(c.kubeconfig, not_ready_first="q3-cp-0")  # the lab's kubelets are NotReady until a CNI runs
    eventually(lambda: (c.nodes_ready() or {}).get("q3-cp-0") == "True", "the init Node Ready")
    token = cabpk_pki.new_token()
    c.core.create_namespaced_secret("kube-system", cabpk_pki.token_secret(token, 900))
    c.join(cp1, token)
    c.join(cp2, token)

    def all_ready():
        seen = c.nodes_ready() or {}
        return len(seen) == 3 and all(v == "True" for v in seen.values())

    eventually(all_ready, "three control-plane Nodes Ready", last=c.nodes_ready)
    # kubeadm join added each as a learner and promoted it: three voters named after their Nodes
    members = eventually(lambda: (m := _members(c.etcd())) and len(m) == 3 and m, "three etcd members")
    assert set(members) == {"q3-cp-0", "q3-cp-1", "q3-cp-2"}
    for node in (cp0, cp1, cp2):
        m = members[c.names[node.id]]
        assert not m.get("isLearner"), m
        assert m["peerURLs"] == [f"https://{c.ips[node.id]}:2380"]
        assert m["clientURLs"] == [f"https://{c.ips[node.id]}:2379"]
    # the members demand a client certificate of the cluster's etcd CA: another CA's is refused
    other_ca = pki.new_ca("etcd-ca")
    crt, key = pki.issue(*other_ca, KCP_CLIENT_CN)
    wrong = etcd.Client(
        [etcd.client_url(c.ips[cp0.id])],
        c.files[0],
        pki.write(tmp_path / "wrong.crt", crt),
        pki.write(tmp_path / "wrong.key", key, private=True),
    )
    with pytest.raises(etcd.EtcdError):
        wrong.member_list()
    # and no client certificate at all (--client-cert-auth)
    no_cert = ssl.create_default_context(cafile=str(c.files[0]))
    url = f"{etcd.client_url(c.ips[cp0.id])}/v3/cluster/member/list"
    with pytest.raises(OSError):
        urllib.request.urlopen(urllib.request.Request(url, data=b"{}"), context=no_cert, timeout=10).read()

    # one of three down: its member stops, the other two keep quorum and the API answers
    slug = clusters.slug(endpoint)
    c.power(cp2, "power off")
    eventually(lambda: not etcd.running(cfg, slug, "q3-cp-2"), "the member of the powered-off host stopped")
    eventually(c.api_answers, "the workload API answering with one member of three down")
    assert len(_members(c.etcd(cp0, cp1))) == 3
    # two of three down: no quorum, the API server still runs but its requests fail
    c.power(cp1, "power off")
    eventually(lambda: not etcd.running(cfg, slug, "q3-cp-1"), "the second member stopped")
    eventually(lambda: not c.api_answers(), "the workload API failing without etcd quorum")
    assert clusters.running(cfg, endpoint)
    with pytest.raises(etcd.EtcdError):
        c.etcd(cp0).member_list()  # linearizable: no leader, no answer
    # power back on: the members start on their data dirs and the cluster recovers
    c.power(cp1, "power on")
    c.power(cp2, "power on")
    eventually(c.api_answers, "the workload API back with quorum")
    eventually(all_ready, "three Nodes Ready again", last=c.nodes_ready)
    assert set(_members(c.etcd())) == {"q3-cp-0", "q3-cp-1", "q3-cp-2"}

    # a member removed through the etcd API (as KCP does before deleting a machine) stays removed: its etcd
    # exits, the simulator restarts it as the kubelet would, and etcd refuses it again
    removed = members["q3-cp-2"]["ID"]

    def remove():
        try:
            return c.etcd(cp0, cp1).member_remove(int(removed))
        except etcd.EtcdError as exc:
            # etcd's strict reconfiguration check: members that came back moments ago do not count as
            # active yet ("unhealthy cluster"); KCP retries the same way
            assert "unhealthy cluster" in str(exc)
            return None

    eventually(remove, "the member removal accepted")
    eventually(
        lambda: _member_state(cfg, endpoint, "q3-cp-2").get("exits", 0) >= 2,
        "the removed member's etcd exiting again after its restart",
        last=lambda: _member_state(cfg, endpoint, "q3-cp-2"),
    )
    assert set(_members(c.etcd(cp0, cp1))) == {"q3-cp-0", "q3-cp-1"}
    assert c.api_answers()


def test_one_control_plane(nodesim_lab, ironic, fake_nodes, endpoint, tmp_path):
    cfg = nodesim_lab.cfg
    (cp0,) = fake_nodes(1)
    c = Cluster("q1", endpoint, ironic, [cp0], tmp_path)
    c.init(cp0)
    install_cni(c.kubeconfig)
    eventually(lambda: (c.nodes_ready() or {}).get("q1-cp-0") == "True", "the init Node Ready")
    members = _members(c.etcd())
    assert list(members) == ["q1-cp-0"] and not members["q1-cp-0"].get("isLearner")
    # lab fault: its etcd stops though the host stays up; the API server runs on and answers nothing
    nodesim.stop_etcd(cfg, "q1-cp-0", cluster="q1")
    eventually(lambda: not c.api_answers(), "the workload API failing with its only member stopped")
    assert clusters.running(cfg, endpoint)
    nodesim.start_etcd(cfg, "q1-cp-0", cluster="q1")
    eventually(c.api_answers, "the workload API back with its member started")
    c.power(cp0, "power off")
    eventually(lambda: not clusters.running(cfg, endpoint), "the API server gone with its only host")
    assert not etcd.running(cfg, clusters.slug(endpoint), "q1-cp-0")
    c.power(cp0, "power on")
    eventually(c.api_answers, "the workload API back on the member's data")
    assert "q1-cp-0" in (c.nodes_ready() or {})
