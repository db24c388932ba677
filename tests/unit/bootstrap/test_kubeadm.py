from __future__ import annotations

import base64
import datetime
import shutil
import subprocess

import pytest
import yaml
from cryptography import x509
from cryptography.x509.oid import NameOID

from ansible_collections.baremetal.capi.plugins.module_utils.bootstrap import kubeadm, pki
from ansible_collections.baremetal.capi.plugins.module_utils.errors import Requeue
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta, names

NS = "demo"


class Tokens:
    """The workload cluster's kube-system bootstrap-token Secrets (a dict here; the real API in integration)."""

    def __init__(self):
        self.secrets = {}

    def create(self, secret):
        self.secrets[secret["metadata"]["name"]] = secret

    def expiration(self, token_id):
        s = self.secrets.get(f"bootstrap-token-{token_id}")
        return s["stringData"]["expiration"] if s else None

    def set_expiration(self, token_id, expiration):
        self.secrets[f"bootstrap-token-{token_id}"]["stringData"]["expiration"] = expiration


def parse_cloud_config(text: str) -> dict:
    assert text.startswith("## template: jinja\n#cloud-config\n")
    return yaml.safe_load(text)


def make_cluster(store, provisioned=True, version="v1.34.1"):
    cluster = meta.new(
        "Cluster",
        "c1",
        NS,
        spec={
            "controlPlaneEndpoint": {"host": "127.0.3.1", "port": 6443},
            "clusterNetwork": {
                "pods": {"cidrBlocks": ["10.244.0.0/16", "fd00:244::/56"]},
                "services": {"cidrBlocks": ["10.96.0.0/12"]},
                "serviceDomain": "cluster.local",
            },
        },
    )
    cluster = store.create(cluster)
    cluster["status"] = {"initialization": {"infrastructureProvisioned": provisioned}}
    return store.update_status(cluster)


def make_machine(store, name, control_plane, version="v1.34.1", spec=None):
    labels = {names.CLUSTER_NAME_LABEL: "c1"}
    if control_plane:
        labels[names.CONTROL_PLANE_LABEL] = ""
    machine = store.create(meta.new("Machine", name, NS, labels=labels, spec={"clusterName": "c1", "version": version}))
    config = meta.new("KubeadmConfig", name, NS, labels=labels, spec=spec or {})
    meta.set_owner(config, machine, controller=True)
    return machine, store.create(config)


def secret_value(store, name):
    data = store.get("Secret", name, NS)["data"]
    return base64.b64decode(data["value"]).decode(), base64.b64decode(data["format"]).decode()


CP_SPEC = {
    "initConfiguration": {
        "nodeRegistration": {
            "name": "{{ ds.meta_data.name }}",
            "kubeletExtraArgs": [
                {"name": "node-labels", "value": "metal3.io/uuid={{ ds.meta_data.uuid }}"},
                {"name": "provider-id", "value": "metal3://{{ ds.meta_data.providerid }}"},
            ],
        }
    },
    "joinConfiguration": {
        "nodeRegistration": {
            "name": "{{ ds.meta_data.name }}",
            "kubeletExtraArgs": [{"name": "provider-id", "value": "metal3://{{ ds.meta_data.providerid }}"}],
        }
    },
    "preKubeadmCommands": ["echo pre"],
    "postKubeadmCommands": ["echo post"],
    "files": [{"path": "/etc/motd", "content": "hello", "permissions": "0644"}],
}


def test_cluster_certificates_and_kubeconfig_are_made_once_and_reused(store):
    cluster = make_cluster(store)
    certs, changed = kubeadm.ensure_certificates(store, cluster)
    assert changed and set(certs) == {"ca", "etcd", "proxy", "sa"}
    again, changed_again = kubeadm.ensure_certificates(store, cluster)
    assert not changed_again and again == certs
    for suffix in ("ca", "etcd", "proxy"):
        cert = x509.load_pem_x509_certificate(certs[suffix]["crt"].encode())
        assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "kubernetes"
        assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert certs["sa"]["crt"].startswith("-----BEGIN PUBLIC KEY-----")
    secret = store.get("Secret", "c1-ca", NS)
    assert secret["type"] == "cluster.x-k8s.io/secret"
    assert secret["metadata"]["labels"] == {names.CLUSTER_NAME_LABEL: "c1"}

    assert kubeadm.ensure_kubeconfig(store, cluster, certs["ca"])
    assert not kubeadm.ensure_kubeconfig(store, cluster, certs["ca"])
    config = yaml.safe_load(base64.b64decode(store.get("Secret", "c1-kubeconfig", NS)["data"]["value"]))
    assert config["current-context"] == "c1-admin@c1"
    assert config["clusters"][0]["cluster"]["server"] == "https://127.0.3.1:6443"
    client = x509.load_pem_x509_certificate(base64.b64decode(config["users"][0]["user"]["client-certificate-data"]))
    ca = x509.load_pem_x509_certificate(certs["ca"]["crt"].encode())
    client.verify_directly_issued_by(ca)
    assert client.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)[0].value == "system:masters"
    assert client.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "kubernetes-admin"


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl CLI not installed (Debian package openssl)")
def test_ca_hash_matches_openssl(tmp_path):
    crt, _ = pki.new_ca()
    (tmp_path / "ca.crt").write_text(crt)
    out = subprocess.run(
        f"openssl x509 -in {tmp_path}/ca.crt -pubkey -noout | openssl pkey -pubin -outform der | sha256sum",
        shell=True,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()[0]
    assert pki.ca_cert_hashes(crt) == [f"sha256:{out}"]


def test_first_control_plane_gets_init_the_others_wait(store):
    make_cluster(store)
    _, cp1 = make_machine(store, "c1-cp-a", True, spec=CP_SPEC)
    _, cp2 = make_machine(store, "c1-cp-b", True, spec=CP_SPEC)
    _, w1 = make_machine(store, "c1-md-x", False)

    step = kubeadm.reconcile_config(store, cp1)
    assert step.done and step.data["bootstrap"] == "init"
    with pytest.raises(Requeue, match="another machine holds the init lock"):
        kubeadm.reconcile_config(store, cp2)
    with pytest.raises(Requeue, match="waiting for the control plane to be initialized"):
        kubeadm.reconcile_config(store, w1)

    value, fmt = secret_value(store, "c1-cp-a")
    assert fmt == "cloud-config"
    doc = parse_cloud_config(value)
    paths = [f["path"] for f in doc["write_files"]]
    assert paths == [
        "/etc/kubernetes/pki/ca.crt",
        "/etc/kubernetes/pki/ca.key",
        "/etc/kubernetes/pki/etcd/ca.crt",
        "/etc/kubernetes/pki/etcd/ca.key",
        "/etc/kubernetes/pki/front-proxy-ca.crt",
        "/etc/kubernetes/pki/front-proxy-ca.key",
        "/etc/kubernetes/pki/sa.pub",
        "/etc/kubernetes/pki/sa.key",
        "/etc/motd",
        "/run/kubeadm/kubeadm.yaml",
        "/run/cluster-api/placeholder",
    ]
    perms = {f["path"]: f["permissions"] for f in doc["write_files"]}
    assert perms["/etc/kubernetes/pki/ca.key"] == "0600" and perms["/etc/kubernetes/pki/ca.crt"] == "0640"
    assert doc["runcmd"] == [
        "echo pre",
        "kubeadm init --config /run/kubeadm/kubeadm.yaml  && "
        "echo success > /run/cluster-api/bootstrap-success.complete",
        "echo post",
    ]
    kubeadm_yaml = next(f["content"] for f in doc["write_files"] if f["path"] == "/run/kubeadm/kubeadm.yaml")
    assert kubeadm_yaml.startswith("---\n")
    cc, ic = list(yaml.safe_load_all(kubeadm_yaml))
    assert cc["kind"] == "ClusterConfiguration" and cc["apiVersion"] == "kubeadm.k8s.io/v1beta4"
    assert cc["clusterName"] == "c1" and cc["kubernetesVersion"] == "v1.34.1"
    assert cc["controlPlaneEndpoint"] == "127.0.3.1:6443"
    assert cc["networking"] == {
        "dnsDomain": "cluster.local",
        "podSubnet": "10.244.0.0/16,fd00:244::/56",
        "serviceSubnet": "10.96.0.0/12",
    }
    assert ic["kind"] == "InitConfiguration"
    assert ic["nodeRegistration"]["kubeletExtraArgs"][1] == {
        "name": "provider-id",
        "value": "metal3://{{ ds.meta_data.providerid }}",
    }
    assert ic["nodeRegistration"]["taints"] is None
    cfg = store.get("KubeadmConfig", "c1-cp-a", NS)
    assert cfg["status"]["dataSecretName"] == "c1-cp-a"
    assert cfg["status"]["initialization"]["dataSecretCreated"] is True
    secret = store.get("Secret", "c1-cp-a", NS)
    assert secret["metadata"]["ownerReferences"][0]["kind"] == "KubeadmConfig"
    assert secret["metadata"]["ownerReferences"][0]["controller"] is True

    # Never regenerated.
    again = kubeadm.reconcile_config(store, store.get("KubeadmConfig", "c1-cp-a", NS))
    assert not again.changed and secret_value(store, "c1-cp-a")[0] == value


def initialise(store):
    cluster = store.get("Cluster", "c1", NS)
    cluster["status"]["initialization"]["controlPlaneInitialized"] = True
    store.update_status(cluster)


def test_joins_after_initialisation(store):
    make_cluster(store)
    _, cp1 = make_machine(store, "c1-cp-a", True, spec=CP_SPEC)
    kubeadm.reconcile_config(store, cp1)
    initialise(store)
    tokens = Tokens()
    _, cp2 = make_machine(store, "c1-cp-b", True, spec=CP_SPEC)
    _, w1 = make_machine(store, "c1-md-x", False, spec={"joinConfiguration": {"nodeRegistration": {"name": "w"}}})

    with pytest.raises(Requeue, match="bootstrap token"):
        kubeadm.reconcile_config(store, cp2, tokens=None)
    assert kubeadm.reconcile_config(store, cp2, tokens=tokens).data["bootstrap"] == "join-control-plane"
    assert kubeadm.reconcile_config(store, w1, tokens=tokens).data["bootstrap"] == "join"

    ca_crt = kubeadm.ensure_certificates(store, store.get("Cluster", "c1", NS))[0]["ca"]["crt"]
    cp_doc = parse_cloud_config(secret_value(store, "c1-cp-b")[0])
    paths = [f["path"] for f in cp_doc["write_files"]]
    assert paths[:2] == ["/etc/kubernetes/pki/ca.crt", "/etc/kubernetes/pki/ca.key"]
    join_text = next(f["content"] for f in cp_doc["write_files"] if f["path"] == kubeadm.JOIN_CONFIG_PATH)
    assert not join_text.startswith("---")
    join = yaml.safe_load(join_text)
    assert join["controlPlane"] == {"localAPIEndpoint": {}}
    assert join["discovery"]["bootstrapToken"]["apiServerEndpoint"] == "127.0.3.1:6443"
    assert join["discovery"]["bootstrapToken"]["caCertHashes"] == pki.ca_cert_hashes(ca_crt)
    token = join["discovery"]["bootstrapToken"]["token"]
    assert f"bootstrap-token-{token.split('.')[0]}" in tokens.secrets
    assert cp_doc["runcmd"][1] == (
        "kubeadm join --config /run/kubeadm/kubeadm-join-config.yaml  && "
        "echo success > /run/cluster-api/bootstrap-success.complete"
    )

    w_doc = parse_cloud_config(secret_value(store, "c1-md-x")[0])
    assert [f["path"] for f in w_doc["write_files"]] == [kubeadm.JOIN_CONFIG_PATH, "/run/cluster-api/placeholder"]
    w_text = w_doc["write_files"][0]["content"]
    assert w_text.startswith("---\n")
    w_join = yaml.safe_load(w_text)
    assert "controlPlane" not in w_join
    assert w_join["nodeRegistration"]["taints"] == [{"key": names.NODE_UNINITIALIZED_TAINT, "effect": "NoSchedule"}]
    # The taint is added in a copy, the stored spec keeps only what the user wrote plus discovery.
    stored = store.get("KubeadmConfig", "c1-md-x", NS)["spec"]["joinConfiguration"]
    assert "taints" not in stored["nodeRegistration"]
    assert stored["discovery"]["bootstrapToken"]["token"] == w_join["discovery"]["bootstrapToken"]["token"]
    secret = tokens.secrets[f"bootstrap-token-{w_join['discovery']['bootstrapToken']['token'].split('.')[0]}"]
    assert secret["type"] == "bootstrap.kubernetes.io/token"
    assert secret["stringData"]["auth-extra-groups"] == "system:bootstrappers:kubeadm:default-node-token"


def test_kubeadm_v1beta3_below_1_31_uses_a_map_of_kubelet_args(store):
    make_cluster(store)
    _, cp1 = make_machine(store, "c1-cp-a", True, version="v1.30.4", spec=CP_SPEC)
    kubeadm.reconcile_config(store, cp1)
    doc = parse_cloud_config(secret_value(store, "c1-cp-a")[0])
    text = next(f["content"] for f in doc["write_files"] if f["path"] == "/run/kubeadm/kubeadm.yaml")
    cc, ic = list(yaml.safe_load_all(text))
    assert ic["apiVersion"] == "kubeadm.k8s.io/v1beta3" and "proxy" not in cc
    assert ic["nodeRegistration"]["kubeletExtraArgs"]["provider-id"] == "metal3://{{ ds.meta_data.providerid }}"


def test_token_is_extended_while_the_machine_has_no_node(store):
    make_cluster(store)
    _, cp1 = make_machine(store, "c1-cp-a", True, spec=CP_SPEC)
    kubeadm.reconcile_config(store, cp1)
    initialise(store)
    tokens = Tokens()
    _, w1 = make_machine(store, "c1-md-x", False)
    t0 = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    kubeadm.reconcile_config(store, w1, tokens=tokens, token_ttl=900, now=lambda: t0)
    cfg = store.get("KubeadmConfig", "c1-md-x", NS)
    token_id = cfg["spec"]["joinConfiguration"]["discovery"]["bootstrapToken"]["token"].split(".")[0]
    assert tokens.expiration(token_id) == "2026-01-01T00:15:00Z"
    # Less than TTL*5/6 gone: untouched.
    soon = t0 + datetime.timedelta(seconds=100)
    step = kubeadm.reconcile_config(store, cfg, tokens=tokens, token_ttl=900, now=lambda: soon)
    assert not step.changed and tokens.expiration(token_id) == "2026-01-01T00:15:00Z"
    # More: extended to now + TTL.
    later = t0 + datetime.timedelta(seconds=300)
    step = kubeadm.reconcile_config(store, cfg, tokens=tokens, token_ttl=900, now=lambda: later)
    assert step.changed and tokens.expiration(token_id) == "2026-01-01T00:20:00Z"


def test_waits_for_infrastructure(store):
    make_cluster(store, provisioned=False)
    _, cp1 = make_machine(store, "c1-cp-a", True)
    with pytest.raises(Requeue, match="infrastructure to be provisioned"):
        kubeadm.reconcile_config(store, cp1)


def test_check_mode_writes_nothing(store):
    make_cluster(store)
    _, cp1 = make_machine(store, "c1-cp-a", True)
    step = kubeadm.reconcile_config(store, cp1, check_mode=True)
    assert step.changed and step.data["bootstrap"] == "init"
    assert store.list("Secret", NS) == []
    assert store.list("ConfigMap", NS) == []


def test_user_data_template_wraps_what_cabpk_renders(store):
    make_cluster(store)
    _, cp1 = make_machine(store, "c1-cp-a", True, spec=CP_SPEC)
    _, w1 = make_machine(store, "c1-md-x", False)
    text = "$kubeadm_user_data\n# $role: $namespace/$cluster/$machine {{ ds.meta_data.name }} $$HOME $unknown\n"
    template = kubeadm.user_data_template(text)
    assert kubeadm.user_data_template("") is None and kubeadm.user_data_template(None) is None

    kubeadm.reconcile_config(store, cp1, user_data_template=template)
    initialise(store)
    kubeadm.reconcile_config(store, w1, tokens=Tokens(), user_data_template=template)

    for machine, role, kubeadm_cmd in (("c1-cp-a", "init", "kubeadm init"), ("c1-md-x", "join", "kubeadm join")):
        value, fmt = secret_value(store, machine)
        body, last = value.rstrip("\n").rsplit("\n", 1)
        # cloud-init's own template and unknown names pass untouched; $$ is a literal $
        assert last == f"# {role}: {NS}/c1/{machine} {{{{ ds.meta_data.name }}}} $HOME $unknown"
        assert fmt == "cloud-config"
        doc = parse_cloud_config(body + "\n")
        assert any(cmd.startswith(kubeadm_cmd) for cmd in doc["runcmd"]), doc["runcmd"]
