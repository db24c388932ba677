"""MAAS simulator machines reaching Deployed run their user data (kubeadm init, then joins)."""

from __future__ import annotations

import base64
import secrets
import socket
import ssl
import time
import uuid
from urllib.parse import quote

import pytest
import requests
from kubernetes import client as k

from ansible_collections.baremetal.capi.plugins.module_utils.bootstrap import kubeadm as cabpk_engine
from ansible_collections.baremetal.capi.plugins.module_utils.bootstrap import pki as cabpk_pki
from lab.nodesim import clusters

from . import cabpk
from .conftest import UNREACHABLE, eventually, install_cni, ready_status, workload_client
from .test_collection_bootstrap import _certs

FAST = {"deploy": 0.5, "release": 0.3, "erase": 0.3, "commission": 0.3, "power": 0.2}


class Maas:
    """The simulator's control API and its MAAS API, signed as the maas.maas collection signs (PLAINTEXT)."""

    def __init__(self, info: dict):
        self.api = info["url"] + "api/2.0/"
        self.control = info["control_url"]
        self.consumer, self.token, self.secret = info["api_key"].split(":")
        self.http = requests.Session()

    def ctl(self, method: str, path: str, body=None):
        resp = self.http.request(method, self.control + path, json=body, timeout=30)
        assert resp.status_code == 200, (resp.status_code, resp.text)
        return resp.json()

    def op(self, system_id: str, op: str, **data):
        auth = ", ".join(
            [
                f'oauth_consumer_key="{self.consumer}"',
                f'oauth_token="{self.token}"',
                'oauth_signature_method="PLAINTEXT"',
                f'oauth_signature="{quote("&" + self.secret)}"',
                f'oauth_nonce="{uuid.uuid4().hex}"',
                f'oauth_timestamp="{int(time.time())}"',
                'oauth_version="1.0"',
            ]
        )
        resp = self.http.post(
            f"{self.api}machines/{system_id}/", params={"op": op}, data=data, headers={"Authorization": "OAuth " + auth}
        )
        assert resp.status_code == 200, (op, resp.status_code, resp.text)
        return resp.json()


@pytest.fixture
def maas(nodesim_lab):
    nodesim_lab.need("maas")
    m = Maas(nodesim_lab.info["maas"])
    before = m.ctl("GET", "timings")
    m.ctl("POST", "timings", FAST)
    made = []
    yield m, made
    for system_id in made:
        m.ctl("DELETE", f"machines/{system_id}")
    m.ctl("POST", "timings", before)


def test_maas_machines_init_join_power_off_release(nodesim_lab, maas, endpoint, tmp_path):
    sim, made = maas
    tag = f"t{secrets.token_hex(4)}"
    seeded = sim.ctl("POST", "machines", {"machines": [{"hostname": f"{tag}-{i}", "tags": [tag]} for i in range(3)]})
    made.extend(m["system_id"] for m in seeded)
    cp, w1, w2 = seeded
    cluster = f"maas-{tag}"
    ca = cabpk.new_cluster_ca()
    # CAPMAAS templates leave provider-id out (it patches the Node's providerID itself) and name the
    # node after the MAAS hostname, which cloud-init's MAAS datasource gives as local-hostname
    name = "{{ ds.meta_data.local_hostname }}"
    labels = {"maas.io/zone": "default"}
    init = cabpk.init_data(cluster, endpoint, ca, labels=labels, provider_id=None, node_name=name)
    sim.op(cp["system_id"], "deploy", user_data=base64.b64encode(init.encode()).decode(), distro_series="jammy")

    api = workload_client(cabpk.admin_kubeconfig(cluster, endpoint, ca), tmp_path)
    core = k.CoreV1Api(api)

    def node(name):
        try:
            return core.read_node(name)
        except UNREACHABLE:
            return None

    eventually(lambda: node(cp["hostname"]), "the init machine's Node")
    install_cni(cabpk.admin_kubeconfig(cluster, endpoint, ca), not_ready_first=cp["hostname"])
    token = cabpk.new_token()
    core.create_namespaced_secret("kube-system", cabpk.token_secret(token))
    for m in (w1, w2):
        join = cabpk.join_data(endpoint, ca[0], token, labels=labels, provider_id=None, node_name=name)
        sim.op(m["system_id"], "deploy", user_data=base64.b64encode(join.encode()).decode())

    def ready(name, want="True"):
        return lambda: (n := node(name)) is not None and ready_status(n) == want

    for m in seeded:
        eventually(ready(m["hostname"]), f"{m['hostname']} Ready")
        n = core.read_node(m["hostname"])
        assert n.metadata.labels["maas.io/zone"] == "default"
        assert {"type": "InternalIP", "address": m["ip"]} in [a.to_dict() for a in n.status.addresses]
        assert n.spec.provider_id is None  # CAPMAAS sets maas:///<zone>/<system_id> itself
    assert sorted(n.metadata.name for n in core.list_node().items) == sorted(m["hostname"] for m in seeded)

    # powered off through MAAS: NotReady; released: NotReady too, and never deleted
    sim.op(w1["system_id"], "power_off")
    eventually(ready(w1["hostname"], "Unknown"), f"{w1['hostname']} Ready=Unknown after power_off")
    sim.op(w2["system_id"], "release")
    eventually(ready(w2["hostname"], "Unknown"), f"{w2['hostname']} Ready=Unknown after release")
    assert ready_status(core.read_node(cp["hostname"])) == "True"
    assert node(w2["hostname"]) is not None
    sim.op(w1["system_id"], "power_on")
    eventually(ready(w1["hostname"]), f"{w1['hostname']} Ready again after power_on")

    for m in (w1, cp):
        sim.op(m["system_id"], "release")
    eventually(lambda: not clusters.running(nodesim_lab.cfg, endpoint), "the workload API server stopped")


def _served_names(address: str, port: int, ca_pem: str) -> list | None:
    """The subjectAltName of the certificate the API at ``address`` presents (verified by the cluster CA), or None."""
    ctx = ssl.create_default_context(cadata=ca_pem)
    ctx.check_hostname = False
    try:
        with socket.create_connection((address, port), timeout=3) as raw, ctx.wrap_socket(raw) as tls:
            return list(tls.getpeercert().get("subjectAltName") or ())
    except OSError:
        return None


def test_maas_dns_endpoint_is_served_on_each_control_plane_machine(nodesim_lab, maas, tmp_path):
    """An endpoint that is a MAAS DNS name: the API answers on each running control-plane machine's address, with a
    certificate naming that address and the name, and a released machine's address answers nothing."""
    sim, made = maas
    tag = f"t{secrets.token_hex(4)}"
    seeded = sim.ctl("POST", "machines", {"machines": [{"hostname": f"{tag}-{i}", "tags": [tag]} for i in range(3)]})
    made.extend(m["system_id"] for m in seeded)
    name = f"maas-{tag}"
    endpoint = f"{name}.maas.test:6443"  # .test never resolves (RFC 2606): only MAAS's DNS knows the name
    desc = {
        "metadata": {"name": name, "namespace": "nodesim"},
        "spec": {"controlPlaneEndpoint": {"host": f"{name}.maas.test", "port": 6443}},
    }
    certs = _certs()
    reg = {"name": "{{ ds.meta_data.local_hostname }}"}
    spec = {"initConfiguration": {"nodeRegistration": dict(reg)}, "joinConfiguration": {"nodeRegistration": dict(reg)}}
    ca_pem = certs["ca"]["crt"]

    def core(m):
        kcfg = cabpk_pki.admin_kubeconfig(name, f"https://{m['ip']}:6443", certs["ca"]["crt"], certs["ca"]["key"])
        return k.CoreV1Api(workload_client(kcfg, tmp_path))

    def nodes(m):
        try:
            return sorted(n.metadata.name for n in core(m).list_node(_request_timeout=8).items)
        except UNREACHABLE:
            return None

    first, second, third = seeded
    init = cabpk_engine.render_init(desc, spec, "v1.34.4", certs)
    sim.op(first["system_id"], "deploy", user_data=base64.b64encode(init.encode()).decode(), distro_series="jammy")
    eventually(lambda: nodes(first) == [first["hostname"]], "the API at the init machine's address")
    sans = _served_names(first["ip"], 6443, ca_pem)
    assert ("IP Address", first["ip"]) in sans and ("DNS", f"{name}.maas.test") in sans, sans
    for m in (second, third):
        assert _served_names(m["ip"], 6443, ca_pem) is None  # not deployed: nothing answers there

    token = cabpk.new_token()
    core(first).create_namespaced_secret("kube-system", cabpk.token_secret(token))
    for m in (second, third):
        join = cabpk_engine.render_join(desc, spec, "v1.34.4", certs, token, True)
        sim.op(m["system_id"], "deploy", user_data=base64.b64encode(join.encode()).decode())
    everyone = sorted(m["hostname"] for m in seeded)
    for m in seeded:
        eventually(lambda m=m: nodes(m) == everyone, f"the API at {m['hostname']}'s address with 3 Nodes")
        assert ("IP Address", m["ip"]) in _served_names(m["ip"], 6443, ca_pem)

    # the init machine released: its address answers nothing; the other two serve on (etcd keeps 2 of 3)
    sim.op(first["system_id"], "release")
    eventually(lambda: _served_names(first["ip"], 6443, ca_pem) is None, "nothing at the released machine's address")
    for m in (second, third):
        assert nodes(m) == everyone, m["hostname"]

    for m in (second, third):
        sim.op(m["system_id"], "release")
    eventually(lambda: not clusters.running(nodesim_lab.cfg, endpoint), "the workload API server stopped")
    for m in seeded:
        assert _served_names(m["ip"], 6443, ca_pem) is None, m["hostname"]
