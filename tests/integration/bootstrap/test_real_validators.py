"""Every user data the collection renders passes the real tools a host runs it with.

* ``cloud-init schema`` (Debian's cloud-init package) on the cloud-config, after the ``## template:
  jinja`` step cloud-init itself performs on the host (the ``{{ ds.meta_data.* }}`` placeholders CAPM3
  templates use, filled with a BareMetalHost's metadata);
* ``kubeadm config validate`` (kubeadm built from the same k8s.io/kubernetes module as the lab's
  kube-apiserver, lab/kube_build) on every kubeadm configuration the cloud-config writes.

Checked: the user data of the demo clusters (init, control-plane join, worker join of each), rendered from
the descriptions ``make demo`` provisions (demo_user_data.py), so that a change to the demo is checked; and
a spec using every cloud-config section the renderer writes.

These need the two binaries: cloud-init is installed by ``make integration`` (Debian's package), kubeadm is built
(once, cached) by lab.kube_build.  A missing tool is a failure, not a skip.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import jinja2
import pytest
import yaml

from ansible_collections.baremetal.capi.plugins.module_utils.bootstrap import cloudinit, kubeadm, pki

from .demo_user_data import demo_descriptions, render_user_data

REPO = Path(__file__).resolve().parents[3]
VERSION = "v1.34.1"
META_DATA = {"name": "node-0", "uuid": "4a5b6c7d-0000-4000-8000-000000000001", "providerid": "ns/host-0/m3m-0"}


@pytest.fixture(scope="module")
def kubeadm_bin() -> str:
    sys.path.insert(0, str(REPO))
    from lab import config
    from lab.kube_build import build

    return str(build.build_kubeadm(config.load()))


@pytest.fixture(scope="module")
def cloud_init_bin() -> str:
    path = shutil.which("cloud-init")
    assert path, "cloud-init is not installed (apt-get install cloud-init; make integration does it)"
    return path


@pytest.fixture(scope="module")
def certs() -> dict:
    out = {}
    for name in ("ca", "etcd", "proxy"):
        crt, key = pki.new_ca()
        out[name] = {"crt": crt, "key": key}
    pub, key = pki.new_service_account_keys()
    out["sa"] = {"crt": pub, "key": key}
    return out


# A cluster and a KubeadmConfigSpec with every cloud-config section the collection writes (the demo
# clusters, below, use only some of them).
CLUSTER = {
    "metadata": {"name": "c1", "namespace": "full"},
    "spec": {
        "controlPlaneEndpoint": {"host": "192.168.222.100", "port": 6443},
        "clusterNetwork": {
            "pods": {"cidrBlocks": ["10.244.0.0/16"]},
            "services": {"cidrBlocks": ["10.96.0.0/12"]},
            "serviceDomain": "cluster.local",
        },
    },
}
REGISTRATION = {
    "name": "{{ ds.meta_data.name }}",
    "kubeletExtraArgs": [
        {"name": "node-labels", "value": "metal3.io/uuid={{ ds.meta_data.uuid }}"},
        {"name": "provider-id", "value": "metal3://{{ ds.meta_data.providerid }}"},
    ],
}
FULL = {
    "initConfiguration": {"nodeRegistration": dict(REGISTRATION, taints=[])},
    "joinConfiguration": {"nodeRegistration": REGISTRATION},
    "clusterConfiguration": {"apiServer": {"certSANs": ["192.168.222.100", "N", "1e5"]}},
    "preKubeadmCommands": ["systemctl enable --now kubelet"],
    "postKubeadmCommands": ["echo done"],
    "files": [{"path": "/etc/motd", "content": "on\nyes: no\n", "permissions": "0644", "owner": "root:root"}],
    "bootCommands": ["echo boot"],
    "users": [{"name": "capi", "sudo": "ALL=(ALL) NOPASSWD:ALL", "sshAuthorizedKeys": ["ssh-ed25519 AAAA x"]}],
    "ntp": {"enabled": True, "servers": ["0.pool.ntp.org"]},
    "diskSetup": {
        "partitions": [{"device": "/dev/sdb", "layout": True, "tableType": "gpt", "overwrite": True}],
        "filesystems": [
            {
                "label": "etcd",
                "filesystem": "ext4",
                "device": "/dev/sdb1",
                "extraOpts": ["-E", "lazy_itable_init=1"],
            }
        ],
    },
    "mounts": [["/dev/sdb1", "/var/lib/etcd"]],
    "verbosity": 5,
}


def render_on_host(user_data: str) -> str:
    """What cloud-init does with a ``## template: jinja`` part before reading it as cloud-config."""
    header, _sep, body = user_data.partition("\n")
    assert header == "## template: jinja"
    return jinja2.Template(body, keep_trailing_newline=True).render(ds={"meta_data": META_DATA})


def kubeadm_documents(cloud_config: dict) -> list[str]:
    out = []
    for f in cloud_config.get("write_files") or []:
        if f["path"] in (kubeadm.INIT_CONFIG_PATH, kubeadm.JOIN_CONFIG_PATH):
            out.append(f["content"])
    return out


def full_cases(certs):
    token = "abcdef.0123456789abcdef"
    yield "full-init", kubeadm.render_init(CLUSTER, FULL, VERSION, certs)
    yield "full-join-cp", kubeadm.render_join(CLUSTER, FULL, VERSION, certs, token, control_plane=True)
    yield "full-join", kubeadm.render_join(CLUSTER, FULL, VERSION, certs, token, control_plane=False)


def validate(tmp_path: Path, label: str, user_data: str, cloud_init_bin: str, kubeadm_bin: str) -> None:
    """``cloud-init schema`` on the cloud-config as the host reads it, ``kubeadm config validate`` on each
    kubeadm configuration it writes."""
    text = render_on_host(user_data)
    path = tmp_path / f"{label}.cloud-config"
    path.write_text(text)
    proc = subprocess.run([cloud_init_bin, "schema", "--config-file", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, f"{label}: cloud-init schema: {proc.stdout}{proc.stderr}"
    docs = kubeadm_documents(yaml.safe_load(text))
    assert docs, f"{label}: no kubeadm configuration written"
    for i, doc in enumerate(docs):
        cfg = tmp_path / f"{label}-{i}.kubeadm.yaml"
        cfg.write_text(doc)
        proc = subprocess.run([kubeadm_bin, "config", "validate", "--config", str(cfg)], capture_output=True, text=True)
        assert proc.returncode == 0, f"{label}: kubeadm config validate: {proc.stdout}{proc.stderr}\n{doc}"


def test_every_cloud_config_section_passes_cloud_init_schema_and_kubeadm_validate(
    tmp_path, certs, cloud_init_bin, kubeadm_bin
):
    cases = dict(full_cases(certs))
    for label, user_data in cases.items():
        validate(tmp_path, label, user_data, cloud_init_bin, kubeadm_bin)
    assert len(cases) == 3


@pytest.fixture(scope="module")
def demo_clusters(lab, tmp_path_factory) -> dict[str, dict]:
    """The demo's cluster descriptions (lab.demo.INVENTORY), templated against this run's lab (its generated
    inventory: Ironic's images, the MAAS API key)."""
    lab.need("ironic", "maas")
    from lab.demo import INVENTORY

    return demo_descriptions(INVENTORY, lab.cfg.root, tmp_path_factory.mktemp("demo"))


def test_the_demo_clusters_user_data_pass_cloud_init_schema_and_kubeadm_validate(
    tmp_path, demo_clusters, cloud_init_bin, kubeadm_bin
):
    assert {d["provider"] for d in demo_clusters.values()} == {"metal3", "maas"}, sorted(demo_clusters)
    for host, desc in demo_clusters.items():
        rendered = render_user_data(desc, tmp_path / f"{host}.db")
        # the demo clusters have several control-plane machines and workers: every kind of user data
        assert {k.split()[0] for k in rendered} == {"init", "join-control-plane", "join"}, (host, sorted(rendered))
        for kind, user_data in rendered.items():
            validate(tmp_path, f"{host}-{kind.replace(' ', '-')}", user_data, cloud_init_bin, kubeadm_bin)


def test_the_validators_refuse_bad_input(tmp_path, cloud_init_bin, kubeadm_bin):
    # the checks above can fail: a broken cloud-config and a broken kubeadm configuration are refused
    bad = tmp_path / "bad.cloud-config"
    bad.write_text(cloudinit.HEADER.partition("\n")[2] + "runcmd: 5\n")
    assert subprocess.run([cloud_init_bin, "schema", "--config-file", str(bad)], capture_output=True).returncode != 0
    cfg = tmp_path / "bad.kubeadm.yaml"
    cfg.write_text(
        "apiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\ndiscovery:\n  bootstrapToken:\n"
        "    token: not-a-token\n    apiServerEndpoint: 10.0.0.1:6443\n    unsafeSkipCAVerification: true\n"
    )
    proc = subprocess.run([kubeadm_bin, "config", "validate", "--config", str(cfg)], capture_output=True, text=True)
    assert proc.returncode != 0
