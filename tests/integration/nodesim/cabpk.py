"""Bootstrap data shaped as CABPK renders it (cluster-api bootstrap/kubeadm/internal/cloudinit,
kubeadmconfig_controller.go), made by hand.

Written independently of the collection's own renderer, so the node simulator
is checked against the upstream shapes: the ``## template: jinja`` header,
write_files with the CA key pairs (PKCS#1 keys, as CAPI encodes them) and
/run/kubeadm/kubeadm.yaml, and the runcmd line with the success sentinel.
"""

from __future__ import annotations

import base64
import datetime
import secrets
import textwrap

import yaml
from cryptography.hazmat.primitives import serialization

from lab.kube_build import pki
from lab.nodesim.kubeadm import ca_cert_hash

SENTINEL = "echo success > /run/cluster-api/bootstrap-success.complete"


def new_cluster_ca(common_name: str = "kubernetes") -> tuple[bytes, bytes]:
    """A cluster CA as CAPI makes it (CN=kubernetes; etcd-ca for etcd), the key as a PKCS#1 ``RSA PRIVATE KEY``."""
    crt, key = pki.new_ca(common_name)
    rsa = serialization.load_pem_private_key(key, password=None)
    pkcs1 = rsa.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    )
    return crt, pkcs1


def _file(path: str, content: bytes | str, permissions: str) -> str:
    text = content.decode() if isinstance(content, bytes) else content
    return (
        f"-   path: {path}\n"
        f"    owner: root:root\n"
        f"    permissions: '{permissions}'\n"
        f"    content: |\n{textwrap.indent(text, '      ')}"
    )


def _ca_files(ca_crt: bytes, ca_key: bytes, prefix: str = "") -> list[str]:
    return [
        _file(f"/etc/kubernetes/pki/{prefix}ca.crt", ca_crt, "0640"),
        _file(f"/etc/kubernetes/pki/{prefix}ca.key", ca_key, "0600"),
    ]


def _kubelet_args(labels: dict[str, str], provider_id: str | None) -> str:
    args = []
    if labels:
        args.append(f"- name: node-labels\n  value: {','.join(f'{k}={v}' for k, v in labels.items())}")
    if provider_id:
        args.append(f"- name: provider-id\n  value: '{provider_id}'")
    return textwrap.indent("\n".join(args), "    ")


def _document(files: list[str], command: str) -> str:
    placeholder = _file(
        "/run/cluster-api/placeholder",
        "This placeholder file is used to create the /run/cluster-api sub directory in a way that is "
        "compatible with both Linux and Windows (mkdir -p /run/cluster-api does not work with Windows)\n",
        "0640",
    )
    return (
        "## template: jinja\n#cloud-config\n\nwrite_files:\n"
        + "\n".join(files + [placeholder])
        + f"\nruncmd:\n  - '{command}  && {SENTINEL}'\n"
    )


def init_data(
    cluster: str,
    endpoint: str,
    ca: tuple[bytes, bytes],
    *,
    version: str = "v1.34.4",
    labels: dict[str, str] | None = None,
    provider_id: str | None = "metal3://{{ ds.meta_data.providerid }}",
    node_name: str = "{{ ds.meta_data.name }}",
    etcd_ca: tuple[bytes, bytes] | None = None,
) -> str:
    """Init data; with ``etcd_ca`` the etcd CA too (as CABPK writes it), else kubeadm init makes its own."""
    kubeadm = (
        "---\n"
        "apiServer: {}\n"
        "apiVersion: kubeadm.k8s.io/v1beta4\n"
        f"clusterName: {cluster}\n"
        f"controlPlaneEndpoint: {endpoint}\n"
        "controllerManager: {}\n"
        "dns: {}\n"
        "etcd: {}\n"
        "kind: ClusterConfiguration\n"
        f"kubernetesVersion: {version}\n"
        "networking:\n  dnsDomain: cluster.local\n  podSubnet: 192.168.0.0/16\n  serviceSubnet: 10.128.0.0/12\n"
        "proxy: {}\n"
        "scheduler: {}\n"
        "---\n"
        "apiVersion: kubeadm.k8s.io/v1beta4\n"
        "kind: InitConfiguration\n"
        "localAPIEndpoint: {}\n"
        "nodeRegistration:\n"
        "  kubeletExtraArgs:\n"
        f"{_kubelet_args(labels or {}, provider_id)}\n"
        f"  name: '{node_name}'\n"
        "  taints: null\n"
    )
    files = _ca_files(*ca) + (_ca_files(*etcd_ca, "etcd/") if etcd_ca else [])
    files.append(_file("/run/kubeadm/kubeadm.yaml", kubeadm, "0640"))
    return _document(files, "kubeadm init --config /run/kubeadm/kubeadm.yaml")


def join_data(
    endpoint: str,
    ca_crt: bytes,
    token: str,
    *,
    labels: dict[str, str] | None = None,
    provider_id: str | None = "metal3://{{ ds.meta_data.providerid }}",
    node_name: str = "{{ ds.meta_data.name }}",
) -> str:
    """A worker's join data (cloudinit/node.go NewNode): no certificates, leading ``---``, the uninitialized taint
    appended."""
    kubeadm = (
        "---\n"
        "apiVersion: kubeadm.k8s.io/v1beta4\n"
        "discovery:\n"
        "  bootstrapToken:\n"
        f"    apiServerEndpoint: {endpoint}\n"
        "    caCertHashes:\n"
        f"    - {ca_cert_hash(ca_crt)}\n"
        f"    token: {token}\n"
        "kind: JoinConfiguration\n"
        "nodeRegistration:\n"
        "  kubeletExtraArgs:\n"
        f"{_kubelet_args(labels or {}, provider_id)}\n"
        f"  name: '{node_name}'\n"
        "  taints:\n"
        "  - effect: NoSchedule\n"
        "    key: node.cluster.x-k8s.io/uninitialized\n"
    )
    files = [_file("/run/kubeadm/kubeadm-join-config.yaml", kubeadm, "0640")]
    return _document(files, "kubeadm join --config /run/kubeadm/kubeadm-join-config.yaml")


def new_token() -> str:
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    return (
        "".join(secrets.choice(alphabet) for _ in range(6)) + "." + "".join(secrets.choice(alphabet) for _ in range(16))
    )


def token_secret(token: str, ttl: int = 900) -> dict:
    """The bootstrap token Secret CABPK creates in the workload cluster
    (bootstrap/kubeadm/internal/controllers/token.go createToken)."""
    token_id, token_secret_ = token.split(".")
    expiration = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=ttl)
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "bootstrap.kubernetes.io/token",
        "metadata": {"name": f"bootstrap-token-{token_id}", "namespace": "kube-system"},
        "stringData": {
            "token-id": token_id,
            "token-secret": token_secret_,
            "expiration": expiration.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "usage-bootstrap-signing": "true",
            "usage-bootstrap-authentication": "true",
            "auth-extra-groups": "system:bootstrappers:kubeadm:default-node-token",
            "description": "token generated by cluster-api-bootstrap-provider-kubeadm",
        },
    }


def admin_kubeconfig(cluster: str, endpoint: str, ca: tuple[bytes, bytes]) -> str:
    """``<cluster>-kubeconfig`` (util/kubeconfig/kubeconfig.go New): CN=kubernetes-admin, O=system:masters, signed
    by the cluster CA."""
    crt, key = pki.issue(ca[0], ca[1], "kubernetes-admin", orgs=["system:masters"])
    b64 = lambda data: base64.b64encode(data).decode()  # noqa: E731
    user = f"{cluster}-admin"
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": cluster,
                    "cluster": {"server": f"https://{endpoint}", "certificate-authority-data": b64(ca[0])},
                }
            ],
            "users": [{"name": user, "user": {"client-certificate-data": b64(crt), "client-key-data": b64(key)}}],
            "contexts": [{"name": f"{user}@{cluster}", "context": {"cluster": cluster, "user": user}}],
            "current-context": f"{user}@{cluster}",
        }
    )
