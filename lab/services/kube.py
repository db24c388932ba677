"""Lab service "kube": etcd, kube-apiserver and kube-controller-manager on 127.0.0.1.

The management cluster of the kubernetes store.  The binaries are built once
from Go modules (lab/kube_build) and cached.  The API server serves with a
lab CA, authenticates an admin by a static bearer token (group
system:masters) or by client certificates from its CA, authorizes with RBAC,
and keeps the default admission plugins.  kube-controller-manager runs only
the garbage-collector, namespace and service-account controllers, so
ownerReferences cascade, deleted namespaces really go away and new namespaces
get their ``default`` ServiceAccount, as in a real cluster.

``start_apiserver`` starts further API servers serving with a CA they are
given, on this etcd under their own ``--etcd-prefix`` or on another etcd
(``etcd_servers``/``etcd_tls``): the node simulator gives each workload
cluster its own API server on the cluster's own etcd members that way.
"""

from __future__ import annotations

import secrets
import ssl
import time
from pathlib import Path

from lab import process
from lab.config import LabConfig
from lab.kube_build import build, pki

# The reusable pieces live in lab/kube_build/apiserver.py; these names are this service's API too.
from lab.kube_build.apiserver import (  # noqa: F401
    ADMIN_USER,
    ETCD,
    etcd_url,
    get_json,
    kubeconfig,
    purge_etcd_prefix,
    ssl_context,
    start_apiserver,
    start_etcd,
    stop_apiserver,
)

APISERVER = "kube-apiserver"
KCM = "kube-controller-manager"
CONTROLLERS = "garbagecollector,namespace,serviceaccount,serviceaccount-token"
SYSTEM_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})


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
    from ansible_collections.baremetal.capi.plugins.module_utils.store import crds

    client = api_client(cfg)
    try:
        return crds.apply_crds(client)
    finally:
        client.close()


def up(cfg: LabConfig) -> dict:
    bins = build.build(cfg)
    start_etcd(cfg, bins)
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
            context=ssl_context(ca_file),
            headers={"Authorization": f"Bearer {token}"},
        )
        out.update(
            server=server,
            version=get_json(server, "/version", token, ca_file).get("gitVersion"),
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
