"""The simulator's cloud-init and kubeadm reading of CABPK-shaped bootstrap data (no lab needed)."""

from __future__ import annotations

import pytest

from lab.nodesim import cloudinit, kubeadm

from . import cabpk

META = {
    "uuid": "6f1c2a0e-1111-4222-8333-944455556666",
    "metal3-namespace": "ns1",
    "metal3-name": "host-1",
    "local-hostname": "host-1",
    "local_hostname": "host-1",
    "name": "c1-cp-abcde",
    "providerid": "ns1/host-1/c1-cp-m3m",
}


@pytest.fixture(scope="module")
def ca():
    return cabpk.new_cluster_ca()


def _boot(user_data: str, meta: dict, hostname=None):
    return kubeadm.bootstrap(cloudinit.parse(cloudinit.render(user_data, meta)), hostname)


def test_init_is_rendered_with_meta_data(ca):
    data = cabpk.init_data("c1", "127.0.0.9:6443", ca, labels={"metal3.io/uuid": "u-1", "node.kubernetes.io/x": "y"})
    boot = _boot(data, META)
    assert boot.phase == "init" and boot.control_plane
    assert boot.node_name == "c1-cp-abcde"
    assert boot.provider_id == "metal3://ns1/host-1/c1-cp-m3m"
    assert boot.labels == {"metal3.io/uuid": "u-1", "node.kubernetes.io/x": "y"}
    # `taints: null` in an InitConfiguration: kubeadm's default control-plane taint
    assert boot.taints == [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]
    assert (boot.cluster_name, boot.endpoint, boot.kubernetes_version) == ("c1", "127.0.0.9:6443", "v1.34.4")
    assert boot.ca_cert == ca[0] and boot.ca_key == ca[1]
    assert boot.ca_key.startswith(b"-----BEGIN RSA PRIVATE KEY-----")


def test_worker_join(ca):
    token = cabpk.new_token()
    boot = _boot(cabpk.join_data("127.0.0.9:6443", ca[0], token, labels={"pool": "a"}), META)
    assert boot.phase == "join" and not boot.control_plane
    assert boot.endpoint == "127.0.0.9:6443" and boot.token == token
    assert boot.ca_cert_hashes == [kubeadm.ca_cert_hash(ca[0])]
    assert boot.taints == [{"key": "node.cluster.x-k8s.io/uninitialized", "effect": "NoSchedule"}]
    assert boot.labels == {"pool": "a"} and boot.ca_cert is None


def test_missing_jinja_variable_is_cloud_inits_marker(ca):
    meta = {k: v for k, v in META.items() if k != "providerid"}
    boot = _boot(cabpk.init_data("c1", "127.0.0.9:6443", ca), meta)
    # what a real kubelet would register: cloud-init leaves its marker in place of the missing variable
    assert boot.provider_id == "metal3://CI_MISSING_JINJA_VAR/providerid"
    with pytest.raises(kubeadm.KubeadmError, match="RFC 1123"):
        _boot(cabpk.init_data("c1", "127.0.0.9:6443", ca), {"uuid": "x"})


def test_node_name_defaults_to_hostname_and_hyphen_keys_have_underscore_aliases(ca):
    data = cabpk.init_data("c1", "127.0.0.9:6443", ca, node_name="{{ ds.meta_data.local_hostname }}")
    assert _boot(data, {"local-hostname": "Host-7", "providerid": "p"}).node_name == "host-7"
    data = cabpk.init_data("c1", "127.0.0.9:6443", ca, node_name="")
    assert _boot(data, {"providerid": "p"}, hostname="maas-node-3").node_name == "maas-node-3"


def test_kubelet_refuses_restricted_labels(ca):
    data = cabpk.init_data("c1", "127.0.0.9:6443", ca, labels={"node-role.kubernetes.io/worker": ""})
    with pytest.raises(kubeadm.KubeadmError, match="node-role.kubernetes.io/worker"):
        _boot(data, META)


def test_v1beta3_map_args_and_no_kubeadm():
    doc = {
        "write_files": [
            {
                "path": "/run/kubeadm/kubeadm-join-config.yaml",
                "content": "apiVersion: kubeadm.k8s.io/v1beta3\nkind: JoinConfiguration\n"
                "controlPlane: {localAPIEndpoint: {}}\n"
                "discovery: {bootstrapToken: {apiServerEndpoint: '127.0.0.9:6443', token: abcdef.0123456789abcdef,"
                " unsafeSkipCAVerification: true}}\n"
                "nodeRegistration: {name: cp-2, kubeletExtraArgs: {node-labels: 'a=b', provider-id: 'x://y'}}\n",
            }
        ],
        "runcmd": ["kubeadm join --config /run/kubeadm/kubeadm-join-config.yaml  && echo success"],
    }
    boot = kubeadm.bootstrap(doc, None)
    assert boot.control_plane and boot.labels == {"a": "b"} and boot.provider_id == "x://y"
    assert boot.taints == [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]
    assert kubeadm.bootstrap({"runcmd": ["echo hi"]}, None) is None
    with pytest.raises(cloudinit.CloudInitError, match="not #cloud-config"):
        cloudinit.parse("#!/bin/sh\necho hi\n")
