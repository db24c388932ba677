"""Lab service "kube": etcd, kube-apiserver and kube-controller-manager on 127.0.0.1.

The management cluster of the kubernetes store.  The binaries are built once
from Go modules (lab/kube_build) and cached.  The API server serves with a
lab CA, authenticates an admin by a static bearer token (group
system:masters) or by client certificates from its CA, authorizes with RBAC,
and keeps the default admission plugins.  kube-controller-manager runs only
the garbage-collector, namespace and service-account controllers, so
ownerReferences cascade, deleted namespaces really go away and new namespaces
get their ``default`` ServiceAccount, as in a real cluster.

``start_apiserver`` starts further API servers on the same etcd, each under
its own ``--etcd-prefix`` and serving with a CA it is given: the node
simulator gives each workload cluster its own API server that way.
"""

from __future__ import annotations

import json
import secrets
import ssl
import time
import urllib.request
from pathlib import Path

import yaml

from lab import process
from lab.config import LabConfig
from lab.kube_build import build, pki

ETCD = "etcd"
APISERVER = "kube-apiserver"
KCM = "kube-controller-manager"
CONTROLLERS = "garbagecollector,namespace,serviceaccount,serviceaccount-token"
SYSTEM_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})
ADMIN_USER = "lab-admin"


# --- etcd -------------------------------------------------------------------


def etcd_url(cfg: LabConfig) -> str:
    return f"http://{cfg.host}:{cfg.ports.etcd_client}"


def _start_etcd(cfg: LabConfig, bins: Path) -> int:
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


def _ssl_context(ca_file: Path) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(ca_file))


def _get_json(server: str, path: str, token: str, ca_file: Path, timeout: float = 5.0) -> dict:
    req = urllib.request.Request(server + path, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req, timeout=timeout, context=_ssl_context(ca_file)) as resp:
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
    import base64

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


def start_apiserver(
    cfg: LabConfig,
    name: str,
    *,
    ca_cert: bytes,
    ca_key: bytes,
    port: int,
    etcd_prefix: str,
    bind_address: str = "127.0.0.1",
    sa_key: bytes | None = None,
    extra_tokens: dict[str, tuple[str, str]] | None = None,
    service_cluster_ip_range: str = "10.96.0.0/12",
    timeout: float = 120.0,
) -> dict:
    """Start a kube-apiserver on the lab's etcd (which must be up) as lab process ``name``.

    It serves on ``bind_address:port`` with a certificate signed by ``ca_cert``
    / ``ca_key`` and accepts client certificates from that CA (so a Cluster
    API ``<cluster>-kubeconfig`` made from the same CA works).  ``sa_key`` is
    the service-account signing key (PEM; Cluster API's ``<cluster>-sa``
    Secret), generated when not given.  ``extra_tokens`` maps a token to
    (user, group).  Returns server, token, the CA file, a kubeconfig path and
    the version it reports.
    """
    bins = build.build(cfg)
    d = cfg.data(name)
    ca_file = pki.write(d / "ca.crt", ca_cert)
    # A fresh serving certificate each start (cheap), so a new CA or address always takes effect.
    crt, key = pki.issue(
        ca_cert,
        ca_key,
        "kube-apiserver",
        ips=[bind_address],
        dns=["localhost", "kubernetes", "kubernetes.default"],
        server=True,
    )
    pki.write(d / "apiserver.crt", crt)
    pki.write(d / "apiserver.key", key, private=True)
    if sa_key is not None:
        pki.write(d / "sa.key", sa_key, private=True)
    elif not (d / "sa.key").exists():
        pki.write(d / "sa.key", pki.key_pem(pki.new_key()), private=True)
    from cryptography.hazmat.primitives import serialization

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
    server = f"https://{bind_address}:{port}"
    argv = [
        str(bins / "kube-apiserver"),
        f"--etcd-servers={etcd_url(cfg)}",
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

    def ready() -> bool:
        return process.http_ok(
            f"{server}/readyz",
            context=_ssl_context(ca_file),
            headers={"Authorization": f"Bearer {admin_token}"},
        )

    t0 = time.monotonic()
    pid = process.start(cfg, name, argv, ready=ready, timeout=timeout)
    started_in = round(time.monotonic() - t0, 1)
    path = pki.write(
        d / "kubeconfig",
        kubeconfig(server, ca_cert, ADMIN_USER, token=admin_token, name=name),
        private=True,
    )
    version = _get_json(server, "/version", admin_token, ca_file)
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
    import base64

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


# --- the service --------------------------------------------------------------


def _lab_ca(cfg: LabConfig) -> tuple[bytes, bytes]:
    d = cfg.data("kube-pki")
    if not (d / "ca.key").exists():
        crt, key = pki.new_ca("lab-kubernetes-ca")
        pki.write(d / "ca.crt", crt)
        pki.write(d / "ca.key", key, private=True)
    return (d / "ca.crt").read_bytes(), (d / "ca.key").read_bytes()


def _kcm_token(cfg: LabConfig) -> str:
    path = cfg.data("kube-pki") / "kcm.token"
    if not path.exists():
        pki.write(path, secrets.token_hex(24), private=True)
    return path.read_text().strip()


def _start_kcm(cfg: LabConfig, bins: Path, api: dict) -> int:
    d = cfg.data(KCM)
    ca_cert, _ = _lab_ca(cfg)
    kcfg = pki.write(
        d / "kubeconfig",
        kubeconfig(
            api["server"],
            ca_cert,
            "system:kube-controller-manager",
            token=_kcm_token(cfg),
        ),
        private=True,
    )
    argv = [
        str(bins / "kube-controller-manager"),
        f"--kubeconfig={kcfg}",
        f"--authentication-kubeconfig={kcfg}",
        f"--authorization-kubeconfig={kcfg}",
        f"--bind-address={cfg.host}",
        f"--secure-port={cfg.ports.kube_controller_manager}",
        f"--cert-dir={d}",
        f"--controllers={CONTROLLERS}",
        f"--service-account-private-key-file={cfg.data(APISERVER) / 'sa.key'}",
        f"--root-ca-file={api['ca_file']}",
        # Each controller acts as its own ServiceAccount with its bootstrap
        # RBAC role (generic-garbage-collector, namespace-controller, ...), as kubeadm sets it up.
        "--use-service-account-credentials=true",
        "--leader-elect=false",
    ]
    insecure = ssl.create_default_context()
    insecure.check_hostname = False
    insecure.verify_mode = ssl.CERT_NONE  # its self-signed serving cert; only /healthz is read
    url = f"https://{cfg.host}:{cfg.ports.kube_controller_manager}/healthz"
    return process.start(cfg, KCM, argv, ready=lambda: process.http_ok(url, context=insecure), timeout=90)


def kubeconfig_path(cfg: LabConfig) -> Path:
    """The admin kubeconfig of the lab's API server."""
    return cfg.root / "kubeconfig"


def _collection_importable() -> None:
    """``python -m lab`` runs outside pytest: make ``ansible_collections.baremetal.capi`` importable
    the way tests/conftest.py does (build/ansible_collections/baremetal/capi -> the work tree)."""
    import os
    import sys

    from lab.config import REPO

    link = REPO / "build" / "ansible_collections" / "baremetal" / "capi"
    if not link.exists():
        link.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.symlink(REPO, link)
        except FileExistsError:
            pass
    if str(REPO / "build") not in sys.path:
        sys.path.insert(0, str(REPO / "build"))


def apply_crds(cfg: LabConfig) -> dict:
    """The collection's CRDs on the lab's API server (what the crds role does for users)."""
    _collection_importable()
    from ansible_collections.baremetal.capi.plugins.module_utils.model import crds

    client = api_client(cfg)
    try:
        return crds.apply_crds(client)
    finally:
        client.close()


def up(cfg: LabConfig) -> dict:
    bins = build.build(cfg)
    _start_etcd(cfg, bins)
    ca_cert, ca_key = _lab_ca(cfg)
    api = start_apiserver(
        cfg,
        APISERVER,
        ca_cert=ca_cert,
        ca_key=ca_key,
        port=cfg.ports.kube_apiserver,
        etcd_prefix="/registry",
        bind_address=cfg.host,
        extra_tokens={_kcm_token(cfg): ("system:kube-controller-manager", "")},
    )
    pki.write(kubeconfig_path(cfg), Path(api["kubeconfig"]).read_bytes(), private=True)
    applied = apply_crds(cfg)
    # After the CRDs, so the garbage collector's first discovery already sees them.
    _start_kcm(cfg, bins, api)
    return {
        "crds_created": len(applied["created"]),
        "server": api["server"],
        "version": api["version"],
        "kubeconfig": str(cfg.root / "kubeconfig"),
        "binaries": str(bins),
    }


def down(cfg: LabConfig) -> None:
    for name in (KCM, APISERVER, ETCD):
        process.stop(cfg, name)


def admin(cfg: LabConfig) -> tuple[str, str, Path]:
    """(server, admin token, CA file) of the lab's API server."""
    d = cfg.data(APISERVER)
    token = (d / "tokens.csv").read_text().split(",", 1)[0]
    return f"https://{cfg.host}:{cfg.ports.kube_apiserver}", token, d / "ca.crt"


def status(cfg: LabConfig) -> dict:
    pids = {name: process.pid_of(cfg, name) for name in (ETCD, APISERVER, KCM)}
    out: dict = {
        "healthy": False,
        "pids": pids,
        "kubeconfig": str(cfg.root / "kubeconfig"),
    }
    if None in pids.values():
        return out
    try:
        server, token, ca_file = admin(cfg)
        ready = process.http_ok(
            f"{server}/readyz",
            context=_ssl_context(ca_file),
            headers={"Authorization": f"Bearer {token}"},
        )
        out.update(
            server=server,
            version=_get_json(server, "/version", token, ca_file).get("gitVersion"),
        )
    except (OSError, ValueError) as exc:
        out["error"] = str(exc)
        return out
    out["healthy"] = ready
    return out


def api_client(cfg: LabConfig):
    """A ``kubernetes`` ApiClient for the lab's admin kubeconfig."""
    from kubernetes import config as kconfig

    return kconfig.new_client_from_config(config_file=str(cfg.root / "kubeconfig"))


def delete_namespace(client, name: str, wait: float = 0.0) -> bool:
    """Delete a namespace, first clearing finalizers nothing here would ever remove.

    Objects of this collection carry upstream finalizers (metal3machine...,
    baremetalhost.metal3.io, ...) that only a controller clears; left alone
    they keep the namespace Terminating forever.  True if it is gone (when waited for).
    """
    from kubernetes import client as k
    from kubernetes.client.exceptions import ApiException

    core = k.CoreV1Api(client)
    custom = k.CustomObjectsApi(client)
    try:
        crds = k.ApiextensionsV1Api(client).list_custom_resource_definition().items
    except ApiException:
        crds = []
    served = [
        (crd.spec.group, v.name, crd.spec.names.plural)
        for crd in crds
        if crd.spec.scope == "Namespaced"
        for v in crd.spec.versions
        if v.storage
    ]
    try:
        core.delete_namespace(name)
    except ApiException as exc:
        if exc.status != 404:
            raise
        return True
    deadline = time.monotonic() + wait
    while True:
        for group, version, plural in served:
            for obj in custom.list_namespaced_custom_object(group, version, name, plural).get("items", []):
                if obj["metadata"].get("finalizers"):
                    try:
                        custom.patch_namespaced_custom_object(
                            group,
                            version,
                            name,
                            plural,
                            obj["metadata"]["name"],
                            {"metadata": {"finalizers": None}},
                        )
                    except ApiException as exc:
                        if exc.status != 404:
                            raise
        try:
            core.read_namespace(name)
        except ApiException as exc:
            if exc.status == 404:
                return True
            raise
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.5)


def reset(cfg: LabConfig) -> None:
    """Delete every non-system namespace (and its content) and every Node; CRDs stay."""
    if not status(cfg).get("healthy"):
        return
    from kubernetes import client as k

    client = api_client(cfg)
    core = k.CoreV1Api(client)
    names = [ns.metadata.name for ns in core.list_namespace().items if ns.metadata.name not in SYSTEM_NAMESPACES]
    for name in names:
        delete_namespace(client, name)
    for name in names:
        if not delete_namespace(client, name, wait=120):
            raise process.LabError(f"namespace {name} still there after 120s")
    core.delete_collection_node()
