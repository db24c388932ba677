"""The collection's own CABPK renderer (module_utils/bootstrap) fed to the simulator: init, control-plane
join, worker join; with two control planes (two etcd members) one host off loses quorum."""

from __future__ import annotations

from kubernetes import client as k

from ansible_collections.baremetal.capi.plugins.module_utils.bootstrap import kubeadm as cabpk_engine
from ansible_collections.baremetal.capi.plugins.module_utils.bootstrap import pki as cabpk_pki
from lab.nodesim import clusters

from .conftest import UNREACHABLE, eventually, install_cni, ready_status, workload_client


def _certs() -> dict:
    out = {}
    for suffix in ("ca", "etcd", "proxy"):
        crt, key = cabpk_pki.new_ca()
        out[suffix] = {"crt": crt, "key": key}
    pub, key = cabpk_pki.new_service_account_keys()
    out["sa"] = {"crt": pub, "key": key}
    return out


def _spec(labels: str) -> dict:
    reg = {
        "name": "{{ ds.meta_data.name }}",
        "kubeletExtraArgs": [
            {"name": "provider-id", "value": "metal3://{{ ds.meta_data.providerid }}"},
            {"name": "node-labels", "value": labels},
        ],
    }
    return {"initConfiguration": {"nodeRegistration": dict(reg)}, "joinConfiguration": {"nodeRegistration": dict(reg)}}


def test_collection_rendered_init_cp_join_worker_join(nodesim_lab, ironic, fake_nodes, endpoint, tmp_path):
    host, port = endpoint.split(":")
    cluster = {
        "metadata": {"name": "coll", "namespace": "nodesim"},
        "spec": {
            "controlPlaneEndpoint": {"host": host, "port": int(port)},
            "clusterNetwork": {"pods": {"cidrBlocks": ["192.168.0.0/16"]}, "serviceDomain": "cluster.local"},
        },
    }
    certs, version = _certs(), "v1.34.4"
    cp0, cp1, w0 = fake_nodes(3)
    names = {cp0.id: "coll-cp-0", cp1.id: "coll-cp-1", w0.id: "coll-md-0"}

    def deploy(node, user_data):
        meta = {"local-hostname": node.name, "name": names[node.id], "providerid": f"nodesim/{node.name}/{node.id}"}
        drive = {"meta_data": meta, "user_data": user_data}
        ironic.baremetal.set_node_provision_state(node, "active", config_drive=drive, wait=True, timeout=180)

    deploy(cp0, cabpk_engine.render_init(cluster, _spec("tier=cp"), version, certs))
    kubeconfig = cabpk_pki.admin_kubeconfig("coll", f"https://{endpoint}", certs["ca"]["crt"], certs["ca"]["key"])
    core = k.CoreV1Api(workload_client(kubeconfig, tmp_path))

    def node(name):
        try:
            return core.read_node(name)
        except UNREACHABLE:
            return None

    def ready(name, want="True"):
        return lambda: (n := node(name)) is not None and ready_status(n) == want

    install_cni(kubeconfig, not_ready_first="coll-cp-0")
    eventually(ready("coll-cp-0"), "the init Node Ready")
    token = cabpk_pki.new_token()
    core.create_namespaced_secret("kube-system", cabpk_pki.token_secret(token, 900))
    deploy(cp1, cabpk_engine.render_join(cluster, _spec("tier=cp"), version, certs, token, control_plane=True))
    deploy(w0, cabpk_engine.render_join(cluster, _spec("tier=md"), version, certs, token, control_plane=False))
    for name in names.values():
        eventually(ready(name), f"{name} Ready")

    def taints(name):
        return [(t.key, t.effect) for t in core.read_node(name).spec.taints or ()]

    for ironic_node in (cp0, cp1, w0):
        name = names[ironic_node.id]
        n = core.read_node(name)
        assert n.spec.provider_id == f"metal3://nodesim/{ironic_node.name}/{ironic_node.id}"
        if ironic_node is w0:
            assert n.metadata.labels["tier"] == "md"
            want = [("node.cluster.x-k8s.io/uninitialized", "NoSchedule")]
        else:
            assert n.metadata.labels["tier"] == "cp"
            assert "node-role.kubernetes.io/control-plane" in n.metadata.labels
            want = [("node-role.kubernetes.io/control-plane", "NoSchedule")]
        # the node lifecycle controller lifts node.kubernetes.io/not-ready after Ready is posted, not with it
        eventually(lambda name=name, want=want: taints(name) == want, f"{name}'s taints {want}")

    # the first control plane's host off: a two-member etcd has no quorum with one member down, so the
    # API server (still running on the second host) stops answering, as a real two-control-plane cluster's
    ironic.baremetal.set_node_power_state(cp0, "power off", wait=True, timeout=60)
    eventually(lambda: node("coll-cp-1") is None, "the workload API failing without etcd quorum")
    assert clusters.running(nodesim_lab.cfg, endpoint)
    # powered on again: its member starts on its data dir, quorum is back, and so is the API
    ironic.baremetal.set_node_power_state(cp0, "power on", wait=True, timeout=60)
    for name in names.values():
        eventually(ready(name), f"{name} Ready after the power-on")
