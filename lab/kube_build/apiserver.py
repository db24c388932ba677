"""Running what lab/kube_build builds: etcd and kube-apiserver processes, kubeconfigs.

Used by the lab service "kube" (lab/services/kube.py) for the management
cluster, and by the node simulator for each workload cluster's own API server
(another kube-apiserver, on that cluster's own etcd members).
"""

from __future__ import annotations

import base64
import json
import secrets
import ssl
import time
import urllib.request
from pathlib import Path

import yaml
from cryptography.hazmat.primitives import serialization

from lab import process
from lab.config import LabConfig
from lab.kube_build import build, pki

ETCD = "etcd"
ADMIN_USER = "lab-admin"


# --- etcd -------------------------------------------------------------------


def etcd_url(cfg: LabConfig) -> str:
    return f"http://{cfg.host}:{cfg.ports.etcd_client}"


def start_etcd(cfg: LabConfig, bins: Path) -> int:
    peer = f"http://{cfg.host}:{cfg.ports.etcd_peer}"
    argv = [
        str(bins / "etcd"),
        "--name=lab",
        f"--data-dir={cfg.data('etcd')}",
        f"--listen-client-urls={etcd_url(cfg)}",
        f"--advertise-client-urls={etcd_url(cfg)}",
        f"--listen-peer-urls={peer}",
        f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=lab={peer}",
        # A throw-away test store: durability across power loss buys nothing here.
        "--unsafe-no-fsync",
        "--log-level=warn",
    ]
    return process.start(
        cfg,
        ETCD,
        argv,
        ready=lambda: process.http_ok(f"{etcd_url(cfg)}/health"),
        timeout=60,
    )


# --- API servers ------------------------------------------------------------


def ssl_context(ca_file: Path) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(ca_file))


def get_json(server: str, path: str, token: str, ca_file: Path, timeout: float = 5.0) -> dict:
    req = urllib.request.Request(server + path, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req, timeout=timeout, context=ssl_context(ca_file)) as resp:
        return json.load(resp)


def kubeconfig(
    server: str,
    ca_cert: bytes,
    user: str,
    *,
    token: str | None = None,
    client=None,
    name="lab",
) -> str:
    """A kubeconfig for one user: a bearer token, or a (cert PEM, key PEM) client pair."""

    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode()

    creds = (
        {"token": token}
        if token
        else {
            "client-certificate-data": b64(client[0]),
            "client-key-data": b64(client[1]),
        }
    )
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": name,
                    "cluster": {
                        "server": server,
                        "certificate-authority-data": b64(ca_cert),
                    },
                }
            ],
            "users": [{"name": user, "user": creds}],
            "contexts": [{"name": name, "context": {"cluster": name, "user": user}}],
            "current-context": name,
        },
        sort_keys=False,
    )


def write_serving_cert(d: Path, ca_cert: bytes, ca_key: bytes, ips, dns=()) -> None:
    """The serving certificate and key (the key first: kube-apiserver reloads the pair when either file changes)."""
    crt, key = pki.issue(
        ca_cert,
        ca_key,
        "kube-apiserver",
        ips=list(dict.fromkeys(ips)),
        dns=list(dict.fromkeys(["localhost", "kubernetes", "kubernetes.default", *dns])),
        server=True,
    )
    pki.write(d / "apiserver.key", key, private=True)
    pki.write(d / "apiserver.crt", crt)


def _prepare(d: Path, ca_cert: bytes, ca_key: bytes, ips, dns, sa_key, extra_tokens) -> None:
    """Certificates, keys and the token file of an API server about to start."""
    pki.write(d / "ca.crt", ca_cert)
    # A fresh serving certificate each start (cheap), so a new CA or address always takes effect.
    write_serving_cert(d, ca_cert, ca_key, ips, dns)
    if sa_key is not None:
        pki.write(d / "sa.key", sa_key, private=True)
    elif not (d / "sa.key").exists():
        pki.write(d / "sa.key", pki.key_pem(pki.new_key()), private=True)
    signing = serialization.load_pem_private_key((d / "sa.key").read_bytes(), password=None)
    pki.write(d / "sa.pub", pki.public_pem(signing))
    token_file = d / "tokens.csv"
    admin_token = None
    if token_file.exists():
        admin_token = token_file.read_text().split(",", 1)[0]
    admin_token = admin_token or secrets.token_hex(24)
    # token,user,uid,"group1,group2" (kube-apiserver --token-auth-file)
    rows = [f'{admin_token},{ADMIN_USER},{ADMIN_USER},"system:masters"']
    for tok, (user, group) in (extra_tokens or {}).items():
        rows.append(f'{tok},{user},{user},"{group}"' if group else f"{tok},{user},{user}")
    pki.write(token_file, "\n".join(rows) + "\n", private=True)


def start_apiserver(
    cfg: LabConfig,
    name: str,
    *,
    ca_cert: bytes,
    ca_key: bytes,
    port: int,
    etcd_prefix: str,
    bind_address: str = "127.0.0.1",
    san_ips=(),
    san_dns=(),
    sa_key: bytes | None = None,
    extra_tokens: dict[str, tuple[str, str]] | None = None,
    service_cluster_ip_range: str = "10.96.0.0/12",
    timeout: float = 120.0,
    etcd_servers: str | None = None,
    etcd_tls: tuple[Path, Path, Path] | None = None,
    wait_ready: bool = True,
) -> dict:
    """Start a kube-apiserver on the lab's etcd (which must be up) as lab process ``name``.

    It serves on ``bind_address:port`` with a certificate signed by ``ca_cert``
    / ``ca_key`` and accepts client certificates from that CA (so a Cluster
    API ``<cluster>-kubeconfig`` made from the same CA works).  ``sa_key`` is
    the service-account signing key (PEM; Cluster API's ``<cluster>-sa``
    Secret), generated when not given.  ``san_ips`` / ``san_dns``: more
    names its serving certificate carries.  ``extra_tokens`` maps a token to
    (user, group).  Returns server, token, the CA file, a kubeconfig path and
    the version it reports.

    ``etcd_servers`` (with ``etcd_tls``: CA, client certificate and key
    files) points it at another etcd than the lab's; ``wait_ready=False``
    returns once it listens instead of once ``/readyz`` answers (an etcd
    without quorum keeps it unready for as long as that lasts).

    An API server already running under ``name`` is left as it is.
    """
    bins = build.build(cfg)
    d = cfg.data(name)
    running = process.pid_of(cfg, name) is not None
    ca_file = d / "ca.crt"
    token_file = d / "tokens.csv"
    if not running:
        _prepare(d, ca_cert, ca_key, [bind_address, *san_ips], san_dns, sa_key, extra_tokens)
    admin_token = token_file.read_text().split(",", 1)[0]
    server = f"https://{bind_address}:{port}"
    argv = [
        str(bins / "kube-apiserver"),
        f"--etcd-servers={etcd_servers or etcd_url(cfg)}",
        f"--etcd-prefix={etcd_prefix}",
        f"--bind-address={bind_address}",
        f"--advertise-address={bind_address}",
        f"--secure-port={port}",
        f"--tls-cert-file={d / 'apiserver.crt'}",
        f"--tls-private-key-file={d / 'apiserver.key'}",
        f"--cert-dir={d}",
        f"--client-ca-file={ca_file}",
        f"--token-auth-file={token_file}",
        f"--service-account-issuer={server}",
        f"--service-account-key-file={d / 'sa.pub'}",
        f"--service-account-signing-key-file={d / 'sa.key'}",
        f"--service-cluster-ip-range={service_cluster_ip_range}",
        "--authorization-mode=RBAC",
        # The default plugins (NamespaceLifecycle, ServiceAccount, ResourceQuota,
        # the admission webhooks, ...) plus NodeRestriction, as kubeadm runs it.
        "--enable-admission-plugins=NodeRestriction",
        "--allow-privileged=true",
        # The "kubernetes" Service's endpoints would be loopback addresses,
        # which Endpoints validation rejects; nothing here routes to them.
        "--endpoint-reconciler-type=none",
        "--profiling=false",
    ]
    if etcd_tls:
        argv += [f"--etcd-cafile={etcd_tls[0]}", f"--etcd-certfile={etcd_tls[1]}", f"--etcd-keyfile={etcd_tls[2]}"]

    def ready() -> bool:
        return process.http_ok(
            f"{server}/readyz",
            context=ssl_context(ca_file),
            headers={"Authorization": f"Bearer {admin_token}"},
        )

    def listening() -> bool:
        return process.port_open(bind_address, port)

    t0 = time.monotonic()
    pid = process.start(cfg, name, argv, ready=ready if wait_ready else listening, timeout=timeout)
    started_in = round(time.monotonic() - t0, 1)
    path = pki.write(
        d / "kubeconfig",
        kubeconfig(server, ca_cert, ADMIN_USER, token=admin_token, name=name),
        private=True,
    )
    version = get_json(server, "/version", admin_token, ca_file) if wait_ready else {}
    return {
        "name": name,
        "pid": pid,
        "server": server,
        "token": admin_token,
        "ca_file": str(ca_file),
        "kubeconfig": str(path),
        "version": version.get("gitVersion"),
        "ready_after_s": started_in,
    }


def stop_apiserver(cfg: LabConfig, name: str, purge_prefix: str | None = None) -> bool:
    """Stop an API server started by ``start_apiserver``; with ``purge_prefix``, drop its etcd keys too."""
    stopped = process.stop(cfg, name)
    if purge_prefix:
        purge_etcd_prefix(cfg, purge_prefix)
    return stopped


def purge_etcd_prefix(cfg: LabConfig, prefix: str) -> int:
    """Delete every etcd key under ``prefix`` (etcd's v3 JSON gateway).  Returns how many."""
    key = prefix.rstrip("/").encode() + b"/"
    range_end = key[:-1] + bytes([key[-1] + 1])  # the next key after every key with this prefix
    body = json.dumps(
        {
            "key": base64.b64encode(key).decode(),
            "range_end": base64.b64encode(range_end).decode(),
        }
    )
    req = urllib.request.Request(f"{etcd_url(cfg)}/v3/kv/deleterange", data=body.encode(), method="POST")
    with urllib.request.urlopen(req, timeout=10) as resp:
        return int(json.load(resp).get("deleted", 0))
