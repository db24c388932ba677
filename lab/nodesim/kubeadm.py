"""What ``kubeadm init`` / ``kubeadm join`` would do with the files cloud-init wrote.

``bootstrap()`` turns a rendered cloud-config into a ``Bootstrap``: which
phase, the cluster (name, controlPlaneEndpoint, version), the cluster CA and
the etcd CA when the data carries them (init and control-plane join), the
advertise address of the host's etcd member and API, the join discovery, and
the kubelet's registration (name, node-labels, provider-id, taints) with
kubeadm's defaults applied.  Pure functions.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from lab.nodesim import cloudinit

PKI = "/etc/kubernetes/pki"
CONTROL_PLANE_LABEL = "node-role.kubernetes.io/control-plane"
EXCLUDE_LB_LABEL = "node.kubernetes.io/exclude-from-external-load-balancers"
CONTROL_PLANE_TAINT = {"key": CONTROL_PLANE_LABEL, "effect": "NoSchedule"}

# Labels a kubelet may set on itself in the kubernetes.io / k8s.io namespaces
# (k8s.io/kubelet/pkg/apis well_known_labels.go KubeletLabels / KubeletLabelNamespaces).
_KUBELET_LABELS = {
    "kubernetes.io/hostname",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "kubernetes.io/arch",
    "kubernetes.io/os",
    "beta.kubernetes.io/arch",
    "beta.kubernetes.io/os",
    "node.kubernetes.io/instance-type",
    "beta.kubernetes.io/instance-type",
}
_KUBELET_NAMESPACES = ("kubelet.kubernetes.io", "node.kubernetes.io")


_DNS1123 = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


class KubeadmError(ValueError):
    pass


@dataclass
class Bootstrap:
    phase: str  # "init" or "join"
    control_plane: bool
    node_name: str
    labels: dict[str, str] = field(default_factory=dict)
    provider_id: str | None = None
    taints: list[dict] = field(default_factory=list)
    cluster_name: str | None = None
    endpoint: str | None = None  # host:port of the API: controlPlaneEndpoint (init) or the discovery's
    kubernetes_version: str | None = None
    cluster_configuration: dict | None = None
    ca_cert: bytes | None = None
    ca_key: bytes | None = None
    sa_key: bytes | None = None
    etcd_ca_cert: bytes | None = None  # /etc/kubernetes/pki/etcd/ca.crt and ca.key: the stacked etcd's CA
    etcd_ca_key: bytes | None = None
    advertise_address: str | None = None  # localAPIEndpoint.advertiseAddress (init, control-plane join)
    token: str | None = None
    ca_cert_hashes: list[str] = field(default_factory=list)
    unsafe_skip_ca_verification: bool = False


def ca_cert_hash(cert_pem: bytes) -> str:
    """kubeadm's discovery hash of a CA: sha256 over the DER SubjectPublicKeyInfo."""
    cert = x509.load_pem_x509_certificate(cert_pem)
    spki = cert.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return "sha256:" + hashlib.sha256(spki).hexdigest()


def _kubelet_args(reg: dict) -> dict[str, str]:
    args = reg.get("kubeletExtraArgs") or {}
    # v1beta4: a list of {name, value}; v1beta3: a map
    if isinstance(args, list):
        return {str(a["name"]): str(a.get("value", "")) for a in args}
    return {str(k): str(v) for k, v in args.items()}


def parse_node_labels(value: str) -> dict[str, str]:
    labels = {}
    for item in filter(None, (p.strip() for p in value.split(","))):
        key, sep, val = item.partition("=")
        if not sep:
            raise KubeadmError(f"--node-labels: {item!r} is not key=value")
        labels[key] = val
    return labels


def check_kubelet_labels(labels: dict[str, str]) -> None:
    """The kubelet refuses to start with labels it may not set on itself (as on a real host)."""
    bad = []
    for key in labels:
        prefix = key.split("/", 1)[0] if "/" in key else ""
        if key in _KUBELET_LABELS:
            continue
        if any(prefix == ns or prefix.endswith("." + ns) for ns in _KUBELET_NAMESPACES):
            continue
        if prefix in ("kubernetes.io", "k8s.io") or prefix.endswith((".kubernetes.io", ".k8s.io")):
            bad.append(key)
    if bad:
        raise KubeadmError(
            f"unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: {sorted(bad)}; "
            "--node-labels in the 'kubernetes.io' namespace must begin with an allowed prefix "
            f"({', '.join(_KUBELET_NAMESPACES)}) or be in the specifically allowed set"
        )


def _documents(text: str) -> dict[str, dict]:
    try:
        docs = [d for d in yaml.safe_load_all(text) if d]
    except yaml.YAMLError as exc:
        raise KubeadmError(f"kubeadm config: YAML: {exc}") from exc
    out = {}
    for doc in docs:
        if not isinstance(doc, dict) or "kind" not in doc:
            raise KubeadmError("kubeadm config: a document without kind")
        if not str(doc.get("apiVersion", "")).startswith("kubeadm.k8s.io/"):
            raise KubeadmError(f"kubeadm config: {doc['kind']}: apiVersion {doc.get('apiVersion')!r} is not kubeadm's")
        out[doc["kind"]] = doc
    return out


def bootstrap(doc: dict, hostname: str | None) -> Bootstrap | None:
    """The kubeadm step of a rendered cloud-config, or None when runcmd runs no kubeadm init/join."""
    cmd = cloudinit.kubeadm_command(doc)
    if cmd is None:
        return None
    phase, config_path, words = cmd
    files = cloudinit.write_files(doc)
    if not config_path:
        raise KubeadmError(f"kubeadm {phase} without --config is not supported by the lab")
    if config_path not in files:
        raise KubeadmError(f"kubeadm {phase} --config {config_path}: no such file in write_files")
    docs = _documents(files[config_path].decode())
    kind = "InitConfiguration" if phase == "init" else "JoinConfiguration"
    conf = docs.get(kind)
    if conf is None:
        raise KubeadmError(f"kubeadm {phase}: {config_path} has no {kind}")
    reg = conf.get("nodeRegistration") or {}
    args = _kubelet_args(reg)
    labels = parse_node_labels(args.get("node-labels", ""))
    check_kubelet_labels(labels)
    control_plane = phase == "init" or "controlPlane" in conf or "--control-plane" in words
    # kubeadm: the node name defaults to the host name; an unset taint list gets the control-plane taint
    name = str(reg.get("name") or hostname or "").strip().lower()
    if not _DNS1123.match(name) or len(name) > 253:
        # what the kubelet would fail on (cloud-init's CI_MISSING_JINJA_VAR/... marker included)
        raise KubeadmError(f"kubeadm {phase}: node name {name!r} is not a valid RFC 1123 subdomain")
    taints = reg.get("taints")
    if taints is None:
        taints = [dict(CONTROL_PLANE_TAINT)] if control_plane else []
    # a missing jinja variable stays in as cloud-init's marker: a real kubelet registers that literal providerID
    provider_id = args.get("provider-id") or None
    boot = Bootstrap(
        phase=phase,
        control_plane=control_plane,
        node_name=name,
        labels=labels,
        provider_id=provider_id,
        taints=[{k: v for k, v in t.items() if v is not None} for t in taints],
        ca_cert=files.get(f"{PKI}/ca.crt"),
        ca_key=files.get(f"{PKI}/ca.key"),
        sa_key=files.get(f"{PKI}/sa.key"),
        etcd_ca_cert=files.get(f"{PKI}/etcd/ca.crt"),
        etcd_ca_key=files.get(f"{PKI}/etcd/ca.key"),
    )
    local = (conf if phase == "init" else conf.get("controlPlane") or {}).get("localAPIEndpoint")
    boot.advertise_address = (local or {}).get("advertiseAddress") or None
    if phase == "init":
        cc = docs.get("ClusterConfiguration") or {}
        if (cc.get("etcd") or {}).get("external"):
            raise KubeadmError("kubeadm init: ClusterConfiguration.etcd.external: the lab runs stacked etcd only")
        boot.cluster_configuration = cc
        boot.cluster_name = cc.get("clusterName")
        boot.endpoint = cc.get("controlPlaneEndpoint")
        boot.kubernetes_version = cc.get("kubernetesVersion")
        if not boot.endpoint:
            raise KubeadmError("kubeadm init: ClusterConfiguration.controlPlaneEndpoint is empty")
        if not (boot.ca_cert and boot.ca_key):
            raise KubeadmError(f"kubeadm init: {PKI}/ca.crt and ca.key are not in write_files")
        return boot
    disc = conf.get("discovery") or {}
    if disc.get("bootstrapToken"):
        bt = disc["bootstrapToken"]
        boot.endpoint = bt.get("apiServerEndpoint")
        boot.token = bt.get("token") or disc.get("tlsBootstrapToken")
        boot.ca_cert_hashes = list(bt.get("caCertHashes") or [])
        boot.unsafe_skip_ca_verification = bool(bt.get("unsafeSkipCAVerification"))
    elif disc.get("file"):
        # CABPK writes the discovery kubeconfig as a file and names it in kubeConfigPath
        path = disc["file"].get("kubeConfigPath")
        if path not in files:
            raise KubeadmError(f"kubeadm join: discovery.file.kubeConfigPath {path!r}: no such file in write_files")
        kcfg = yaml.safe_load(files[path])
        clusters = (kcfg or {}).get("clusters") or []
        server = (clusters[0].get("cluster") or {}).get("server", "") if clusters else ""
        boot.endpoint = server.removeprefix("https://").rstrip("/") or None
        boot.token = disc.get("tlsBootstrapToken")
        boot.unsafe_skip_ca_verification = True  # the kubeconfig carries the CA itself
    if not boot.endpoint:
        raise KubeadmError("kubeadm join: discovery names no API server endpoint")
    if not boot.token:
        raise KubeadmError("kubeadm join: discovery has no bootstrap token")
    if not boot.ca_cert_hashes and not boot.unsafe_skip_ca_verification:
        raise KubeadmError(
            "kubeadm join: discovery.bootstrapToken: caCertHashes is empty and unsafeSkipCAVerification is not set"
        )
    return boot
