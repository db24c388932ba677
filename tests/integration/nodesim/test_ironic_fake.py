"""kubeadm init then two joins on fake-hardware Ironic nodes, checked through the workload API."""

from __future__ import annotations

import socket
import ssl

from cryptography import x509
from kubernetes import client as k

from lab.nodesim import client as nodesim
from lab.nodesim import clusters
from tests.integration.net import LOOP

from . import cabpk
from .conftest import UNREACHABLE, eventually, install_cni, ready_status, workload_client


def _meta(namespace: str, host: str, machine: str) -> dict:
    # what baremetal-operator puts in a config drive's meta_data, plus the Metal3DataTemplate's providerid
    return {
        "metal3-namespace": namespace,
        "metal3-name": host,
        "local-hostname": host,
        "local_hostname": host,
        "name": machine,
        "providerid": f"{namespace}/{host}/{machine}",
    }


def _deploy(ironic, node, user_data: str, meta: dict, ip: str) -> None:
    network = {
        "links": [{"id": "enp1s0", "type": "phy", "ethernet_mac_address": "00:5c:52:31:3b:01"}],
        "networks": [{"id": "n0", "link": "enp1s0", "type": "ipv4", "ip_address": ip, "netmask": "255.255.255.0"}],
        "services": [],
    }
    drive = {"meta_data": meta, "user_data": user_data, "network_data": network}
    ironic.baremetal.set_node_provision_state(node, "active", config_drive=drive, wait=True, timeout=180)


def _api_answers(kubeconfig: str, tmp_path):
    def check():
        try:
            api = workload_client(kubeconfig, tmp_path)
            return k.VersionApi(api).get_code().git_version
        except Exception:  # noqa: BLE001 - not up yet
            return None

    return check


def _nodes(core) -> dict:
    try:
        return {n.metadata.name: n for n in core.list_node().items}
    except UNREACHABLE:
        return {}


def test_init_two_joins_ready_nodes_and_power_off(nodesim_lab, ironic, fake_nodes, endpoint, tmp_path):
    cfg = nodesim_lab.cfg
    ns, cluster = "nodesim-test", f"c-{endpoint.split(':')[0].rsplit('.', 1)[1]}"
    ca = cabpk.new_cluster_ca()
    cp, w1, w2 = fake_nodes(3)
    machines = {cp.id: f"{cluster}-cp-0", w1.id: f"{cluster}-md-0", w2.id: f"{cluster}-md-1"}
    labels = {"metal3.io/uuid": cp.id, "node.kubernetes.io/pool": "cp"}
    _deploy(ironic, cp, cabpk.init_data(cluster, endpoint, ca, labels=labels), _meta(ns, cp.name, machines[cp.id]),
            f"{LOOP}.3.251")  # fmt: skip

    # kubeadm init: the cluster's own API server on the controlPlaneEndpoint, serving with the cluster CA
    kubeconfig = cabpk.admin_kubeconfig(cluster, endpoint, ca)
    version = eventually(_api_answers(kubeconfig, tmp_path), "the workload API answering with the admin kubeconfig",
                         last=lambda: nodesim.host(cfg, f"ironic/{cp.id}"))  # fmt: skip
    assert version.startswith("v1.")
    host, port = endpoint.split(":")
    ctx = ssl.create_default_context(cafile=None, cadata=ca[0].decode())
    with socket.create_connection((host, int(port))) as sock, ctx.wrap_socket(sock, server_hostname=host) as tls:
        served = x509.load_der_x509_certificate(tls.getpeercert(binary_form=True))
    served.verify_directly_issued_by(x509.load_pem_x509_certificate(ca[0]))
    api = workload_client(kubeconfig, tmp_path)
    core = k.CoreV1Api(api)

    def cluster_info():
        try:
            return core.read_namespaced_config_map("cluster-info", "kube-public")
        except UNREACHABLE:
            return None

    # the API serves before kubeadm init's upload phase is through
    cluster_info = eventually(cluster_info, "kubeadm init's kube-public/cluster-info")
    assert f"server: https://{endpoint}" in cluster_info.data["kubeconfig"]
    install_cni(kubeconfig, not_ready_first=machines[cp.id])

    # CABPK makes the join token in the workload cluster once the control plane is initialized
    token = cabpk.new_token()
    core.create_namespaced_secret("kube-system", cabpk.token_secret(token))
    for node, ip in ((w1, f"{LOOP}.3.252"), (w2, f"{LOOP}.3.253")):
        data = cabpk.join_data(endpoint, ca[0], token, labels={"metal3.io/uuid": node.id})
        _deploy(ironic, node, data, _meta(ns, node.name, machines[node.id]), ip)

    def three_ready():
        nodes = _nodes(core)
        return nodes if len(nodes) == 3 and all(ready_status(n) == "True" for n in nodes.values()) else None

    nodes = eventually(
        three_ready, "three Ready Nodes", last=lambda: {n: ready_status(v) for n, v in _nodes(core).items()}
    )
    assert set(nodes) == set(machines.values())
    for ironic_node, ip in ((cp, f"{LOOP}.3.251"), (w1, f"{LOOP}.3.252"), (w2, f"{LOOP}.3.253")):
        node = nodes[machines[ironic_node.id]]
        assert node.spec.provider_id == f"metal3://{ns}/{ironic_node.name}/{machines[ironic_node.id]}"
        assert node.metadata.labels["metal3.io/uuid"] == ironic_node.id
        assert node.metadata.labels["kubernetes.io/hostname"] == machines[ironic_node.id]
        assert {"type": "InternalIP", "address": ip} in [a.to_dict() for a in node.status.addresses]
        assert node.status.node_info.kubelet_version == "v1.34.4"
        lease = k.CoordinationV1Api(api).read_namespaced_lease(node.metadata.name, "kube-node-lease")
        assert lease.spec.holder_identity == node.metadata.name
    cp_node = nodes[machines[cp.id]]
    assert cp_node.metadata.labels["node.kubernetes.io/pool"] == "cp"
    assert "node-role.kubernetes.io/control-plane" in cp_node.metadata.labels
    assert [(t.key, t.effect) for t in cp_node.spec.taints] == [("node-role.kubernetes.io/control-plane", "NoSchedule")]
    w_taints = [(t.key, t.effect) for t in nodes[machines[w1.id]].spec.taints]
    assert w_taints == [("node.cluster.x-k8s.io/uninitialized", "NoSchedule")]

    # the host of one worker powers off: its Node goes Ready=Unknown (the lifecycle controller's view) ...
    w2_name = machines[w2.id]
    ironic.baremetal.set_node_power_state(w2, "power off", wait=True, timeout=60)

    def status_of(name, want):
        return lambda: ready_status(core.read_node(name)) == want

    eventually(status_of(w2_name, "Unknown"), f"{w2_name} Ready=Unknown after power off")
    node = core.read_node(w2_name)
    ready = next(c for c in node.status.conditions if c.type == "Ready")
    assert (ready.reason, ready.message) == ("NodeStatusUnknown", "Kubelet stopped posting node status.")

    # the lifecycle controller taints the Node in a write of its own, after the status one (as upstream does)
    def unreachable_taints():
        return [(t.key, t.effect) for t in core.read_node(w2_name).spec.taints or [] if t.key.endswith("/unreachable")]

    taints = eventually(unreachable_taints, f"{w2_name} tainted unreachable", last=unreachable_taints)
    assert sorted(taints) == [
        ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/unreachable", "NoSchedule"),
    ]
    assert ready_status(core.read_node(machines[w1.id])) == "True"
    # ... and Ready again when it is powered back on (same instance: cloud-init does not run again)
    ironic.baremetal.set_node_power_state(w2, "power on", wait=True, timeout=60)
    eventually(status_of(w2_name, "True"), f"{w2_name} Ready again after power on")
    assert "node.kubernetes.io/unreachable" not in [t.key for t in core.read_node(w2_name).spec.taints or []]

    # fault injection: the kubelet of a powered-on host stops, then starts again
    w1_name = machines[w1.id]
    nodesim.stop_kubelet(cfg, w1_name, cluster=cluster)
    eventually(status_of(w1_name, "Unknown"), f"{w1_name} Ready=Unknown with its kubelet stopped")
    # fake-hardware: never powered off since the deploy (its power state is unset until someone sets it)
    assert ironic.baremetal.get_node(w1.id).power_state != "power off"
    nodesim.start_kubelet(cfg, w1_name, cluster=cluster)
    eventually(status_of(w1_name, "True"), f"{w1_name} Ready again with its kubelet started")

    # deprovisioned: NotReady, never deleted (the collection deletes Nodes, as Cluster API does)
    ironic.baremetal.set_node_provision_state(w2, "deleted", wait=True, timeout=120)
    eventually(status_of(w2_name, "Unknown"), f"{w2_name} Ready=Unknown after deprovisioning")
    assert w2_name in _nodes(core)

    # the last host of the cluster gone: its API server stops and its data goes
    for node in (w1, cp):
        ironic.baremetal.set_node_provision_state(node, "deleted", wait=True, timeout=120)
    eventually(lambda: not clusters.running(cfg, endpoint), "the workload API server stopped")


def test_join_checks_token_and_ca_hash(nodesim_lab, ironic, fake_nodes, endpoint, tmp_path):
    """kubeadm join waits for its bootstrap token and refuses a cluster CA its hashes do not pin."""
    cfg = nodesim_lab.cfg
    ca, other_ca = cabpk.new_cluster_ca(), cabpk.new_cluster_ca()
    cp, good, bad = fake_nodes(3)
    _deploy(ironic, cp, cabpk.init_data("chk", endpoint, ca), _meta("ns", cp.name, "chk-cp-0"), f"{LOOP}.3.250")
    core = k.CoreV1Api(workload_client(cabpk.admin_kubeconfig("chk", endpoint, ca), tmp_path))

    def node_names():
        try:
            return {n.metadata.name for n in core.list_node().items}
        except UNREACHABLE:
            return set()

    eventually(lambda: "chk-cp-0" in node_names(), "the init Node")
    token = cabpk.new_token()
    for node, pinned, name, ip in (
        (good, ca, "chk-md-0", f"{LOOP}.3.249"),
        (bad, other_ca, "chk-md-1", f"{LOOP}.3.248"),
    ):
        _deploy(ironic, node, cabpk.join_data(endpoint, pinned[0], token), _meta("ns", node.name, name), ip)

    # no bootstrap-token-<id> Secret yet: kubeadm's discovery keeps trying
    def host(node):
        return nodesim.host(cfg, f"ironic/{node.id}") or {}

    eventually(lambda: "JWS signature" in (host(good).get("error") or ""), "the join waiting for its token")
    assert host(good)["phase"] == "pending"
    core.create_namespaced_secret("kube-system", cabpk.token_secret(token))
    eventually(lambda: host(good).get("phase") == "joined", "the join once the token exists", last=lambda: host(good))
    # the other pins a CA this cluster does not have: it fails for good, no Node
    eventually(lambda: host(bad).get("phase") == "failed", "the join with the wrong CA hash failing")
    assert "none of the public keys" in host(bad)["error"]
    assert node_names() == {"chk-cp-0", "chk-md-0"}
