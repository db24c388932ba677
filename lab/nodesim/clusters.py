"""Workload clusters: one kube-apiserver each, on the lab's etcd under its own prefix.

A cluster is known by its controlPlaneEndpoint (``host:port``): that is what
``kubeadm init`` serves and what ``kubeadm join`` discovers.  Its API server
is lab process ``nodesim-api-<host>-<port>``, serving with the cluster CA from
the init host's bootstrap data, with its keys under ``/nodesim/<host>-<port>``
in etcd.  It runs while at least one of the cluster's control-plane hosts is
up (the API goes away with its last control-plane machine, as on real hosts),
and its data is dropped when no host of the cluster is provisioned any more.
"""

from __future__ import annotations

import ipaddress
import socket
from pathlib import Path

from lab import process
from lab.config import LabConfig
from lab.kube_build import pki
from lab.nodesim.api import Api

PREFIX = "nodesim-api-"


def slug(endpoint: str) -> str:
    return endpoint.replace(":", "-").replace("/", "-")


def process_name(endpoint: str) -> str:
    return PREFIX + slug(endpoint)


def etcd_prefix(endpoint: str) -> str:
    return f"/nodesim/{slug(endpoint)}"


def ca_dir(cfg: LabConfig, endpoint: str) -> Path:
    return cfg.data("nodesim") / "clusters" / slug(endpoint)


def split_endpoint(endpoint: str) -> tuple[str, int]:
    host, _, port = endpoint.rpartition(":")
    if not host:
        host, port = endpoint, "6443"
    return host.strip("[]"), int(port)


def bind_address(host: str, fallback: str | None) -> str:
    """The loopback address the API server listens on for an endpoint host (an IP, or a name that resolves)."""
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        try:
            ip = ipaddress.ip_address(socket.gethostbyname(host))
        except (OSError, ValueError):
            ip = ipaddress.ip_address(fallback or "127.0.0.1")
    if not ip.is_loopback:
        raise ValueError(f"controlPlaneEndpoint host {host} is not a loopback address; the lab binds 127.0.0.0/8 only")
    return str(ip)


def save_ca(cfg: LabConfig, endpoint: str, ca_cert: bytes, ca_key: bytes, sa_key: bytes | None) -> None:
    d = ca_dir(cfg, endpoint)
    pki.write(d / "ca.crt", ca_cert)
    pki.write(d / "ca.key", ca_key, private=True)
    if sa_key:
        pki.write(d / "sa.key", sa_key, private=True)
    else:
        (d / "sa.key").unlink(missing_ok=True)


def running(cfg: LabConfig, endpoint: str) -> bool:
    return process.pid_of(cfg, process_name(endpoint)) is not None


def start(cfg: LabConfig, cluster: dict) -> dict:
    """Start (or find running) the cluster's API server; returns start_apiserver's info."""
    from lab.services import kube

    endpoint = cluster["endpoint"]
    d = ca_dir(cfg, endpoint)
    name = process_name(endpoint)
    if process.pid_of(cfg, name) is None and process.port_open(cluster["bind"], cluster["port"]):
        raise RuntimeError(f"{cluster['bind']}:{cluster['port']} is taken by something else")
    sa = d / "sa.key"
    return kube.start_apiserver(
        cfg,
        name,
        ca_cert=(d / "ca.crt").read_bytes(),
        ca_key=(d / "ca.key").read_bytes(),
        sa_key=sa.read_bytes() if sa.exists() else None,
        port=cluster["port"],
        bind_address=cluster["bind"],
        etcd_prefix=etcd_prefix(endpoint),
    )


def client(cfg: LabConfig, cluster: dict) -> Api:
    """An admin client (what kubeadm's admin.conf gives) of a running cluster API."""
    d = cfg.data(process_name(cluster["endpoint"]))
    token = (d / "tokens.csv").read_text().split(",", 1)[0]
    return Api(f"https://{cluster['bind']}:{cluster['port']}", token, str(d / "ca.crt"))


def stop(cfg: LabConfig, endpoint: str, purge: bool = False) -> None:
    from lab.services import kube

    kube.stop_apiserver(cfg, process_name(endpoint))
    if purge:
        try:
            kube.purge_etcd_prefix(cfg, etcd_prefix(endpoint))
        except OSError:
            pass  # etcd down: nothing to purge until it is back, and a new init purges again


def running_names(cfg: LabConfig) -> list[str]:
    return [name for name in process.running(cfg) if name.startswith(PREFIX)]
