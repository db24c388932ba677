"""Workload clusters: one kube-apiserver each, on the cluster's own etcd members.

A cluster is known by its controlPlaneEndpoint (``host:port``): that is what
``kubeadm init`` serves and what ``kubeadm join`` discovers.  Its API server
is lab process ``nodesim-api-<host>-<port>``, serving with the cluster CA from
the init host's bootstrap data.  An endpoint that is an address (a VIP) is
where it listens.  An endpoint that is a name this machine does not resolve
(a MAAS DNS record, whose addresses are the control-plane machines') is
served as kubeadm serves it on real hosts: on each running control-plane
host's own address, at the endpoint's port (see ``sim.py``'s listeners), by
one API server on a private port of 127.0.0.1, with a serving certificate
naming the endpoint's name and every control-plane host address.  Its storage is the cluster's etcd: one member
per control-plane host (``etcd.py``), reached through the simulator's
pass-through on ``127.0.0.1:<port>`` (``etcdproxy.py``) with the
``apiserver-etcd-client`` certificate kubeadm gives the API server.  It runs
while at least one of the cluster's control-plane hosts is up, and answers
while its etcd has quorum; everything (members' data included) is dropped when
no host of the cluster is provisioned any more.
"""

from __future__ import annotations

import ipaddress
import shutil
import socket
import ssl
from pathlib import Path

from lab import process
from lab.config import LabConfig
from lab.kube_build import pki
from lab.nodesim import etcd
from lab.nodesim.api import Api

PREFIX = "nodesim-api-"


def slug(endpoint: str) -> str:
    return endpoint.replace(":", "-").replace("/", "-")


def process_name(endpoint: str) -> str:
    return PREFIX + slug(endpoint)


# kubeadm's default --etcd-prefix
ETCD_PREFIX = "/registry"


def ca_dir(cfg: LabConfig, endpoint: str) -> Path:
    return cfg.data("nodesim") / "clusters" / slug(endpoint)


def split_endpoint(endpoint: str) -> tuple[str, int]:
    host, _, port = endpoint.rpartition(":")
    if not host:
        host, port = endpoint, "6443"
    return host.strip("[]"), int(port)


def bind_address(host: str) -> str | None:
    """The loopback address the API server listens on for an endpoint host (an IP, or a name that resolves here);
    None for a name this machine does not resolve: the API is then served on the control-plane hosts' addresses.
    """
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        try:
            ip = ipaddress.ip_address(socket.gethostbyname(host))
        except (OSError, ValueError):
            return None
    if not ip.is_loopback:
        raise ValueError(f"controlPlaneEndpoint host {host} is not a loopback address; the lab binds 127.0.0.0/8 only")
    return str(ip)


def on_hosts(cluster: dict) -> bool:
    """Served on its control-plane hosts' addresses (an endpoint name that does not resolve here)."""
    return bool(cluster.get("on_hosts"))


def private_port() -> int:
    """A free port of 127.0.0.1 for the API server of an endpoint served on its hosts."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serving_sans(cluster: dict) -> tuple[list[str], list[str]]:
    """(IPs, DNS names) beyond the bind address the serving certificate names: as kubeadm's apiserver certificate,
    the endpoint's host and each control-plane host's address (certs.go apiServerCertAltNames)."""
    if not on_hosts(cluster):
        return [], []
    host, _ = split_endpoint(cluster["endpoint"])
    return sorted(cluster.get("cert_ips") or []), [host]


def reissue_serving_cert(cfg: LabConfig, cluster: dict) -> None:
    """A new serving certificate for a running API server (it reloads --tls-cert-file when the file changes)."""
    from lab.kube_build import apiserver

    d = ca_dir(cfg, cluster["endpoint"])
    ips, names = serving_sans(cluster)
    apiserver.write_serving_cert(
        cfg.data(process_name(cluster["endpoint"])),
        (d / "ca.crt").read_bytes(),
        (d / "ca.key").read_bytes(),
        [cluster["bind"], *ips],
        names,
    )


def serves_for(cfg: LabConfig, cluster: dict, address: str) -> bool:
    """The API server's certificate, as it presents it now, names ``address`` (a client connecting there verifies)."""
    ca = ca_dir(cfg, cluster["endpoint"]) / "ca.crt"
    ctx = ssl.create_default_context(cafile=str(ca))
    ctx.check_hostname = False
    try:
        with socket.create_connection((cluster["bind"], cluster["port"]), timeout=3) as raw:
            with ctx.wrap_socket(raw) as tls:
                sans = tls.getpeercert().get("subjectAltName") or ()
    except (OSError, ssl.SSLError):
        return False
    return ("IP Address", address) in sans


def save_ca(
    cfg: LabConfig,
    endpoint: str,
    ca_cert: bytes,
    ca_key: bytes,
    sa_key: bytes | None,
    etcd_ca: tuple[bytes, bytes],
) -> None:
    d = ca_dir(cfg, endpoint)
    pki.write(d / "ca.crt", ca_cert)
    pki.write(d / "ca.key", ca_key, private=True)
    if sa_key:
        pki.write(d / "sa.key", sa_key, private=True)
    else:
        (d / "sa.key").unlink(missing_ok=True)
    pki.write(d / "etcd" / "ca.crt", etcd_ca[0])
    pki.write(d / "etcd" / "ca.key", etcd_ca[1], private=True)
    # kubeadm's certs phase "apiserver-etcd-client": the API server's client certificate at etcd
    crt, key = pki.issue(etcd_ca[0], etcd_ca[1], etcd.APISERVER_CLIENT_CN)
    pki.write(d / "apiserver-etcd-client.crt", crt)
    pki.write(d / "apiserver-etcd-client.key", key, private=True)


def etcd_ca(cfg: LabConfig, endpoint: str) -> tuple[bytes, bytes]:
    d = ca_dir(cfg, endpoint) / "etcd"
    return (d / "ca.crt").read_bytes(), (d / "ca.key").read_bytes()


def running(cfg: LabConfig, endpoint: str) -> bool:
    return process.pid_of(cfg, process_name(endpoint)) is not None


def start(cfg: LabConfig, cluster: dict, etcd_port: int, wait_ready: bool = True) -> dict:
    """Start (or find running) the cluster's API server on etcd at 127.0.0.1:``etcd_port``; start_apiserver's info.

    ``wait_ready=False`` when it comes back after its hosts were down: its etcd may have no quorum yet.
    """
    from lab.services import kube

    endpoint = cluster["endpoint"]
    d = ca_dir(cfg, endpoint)
    name = process_name(endpoint)
    if process.pid_of(cfg, name) is None and process.port_open(cluster["bind"], cluster["port"]):
        raise RuntimeError(f"{cluster['bind']}:{cluster['port']} is taken by something else")
    sa = d / "sa.key"
    ips, names = serving_sans(cluster)
    return kube.start_apiserver(
        cfg,
        name,
        ca_cert=(d / "ca.crt").read_bytes(),
        ca_key=(d / "ca.key").read_bytes(),
        sa_key=sa.read_bytes() if sa.exists() else None,
        port=cluster["port"],
        bind_address=cluster["bind"],
        san_ips=ips,
        san_dns=names,
        etcd_prefix=ETCD_PREFIX,
        etcd_servers=f"https://127.0.0.1:{etcd_port}",
        etcd_tls=(d / "etcd" / "ca.crt", d / "apiserver-etcd-client.crt", d / "apiserver-etcd-client.key"),
        wait_ready=wait_ready,
    )


def ready(cfg: LabConfig, cluster: dict) -> bool:
    """Its /readyz answers ok (false while its etcd has no quorum: the etcd check fails within 2 s)."""
    d = cfg.data(process_name(cluster["endpoint"]))
    try:
        token = (d / "tokens.csv").read_text().split(",", 1)[0]
    except OSError:
        return False
    return process.http_ok(
        f"https://{cluster['bind']}:{cluster['port']}/readyz",
        timeout=5.0,
        context=ssl.create_default_context(cafile=str(d / "ca.crt")),
        headers={"Authorization": f"Bearer {token}"},
    )


def client(cfg: LabConfig, cluster: dict) -> Api:
    """An admin client (what kubeadm's admin.conf gives) of a running cluster API."""
    d = cfg.data(process_name(cluster["endpoint"]))
    token = (d / "tokens.csv").read_text().split(",", 1)[0]
    return Api(f"https://{cluster['bind']}:{cluster['port']}", token, str(d / "ca.crt"))


def stop(cfg: LabConfig, endpoint: str, purge: bool = False) -> None:
    """Stop the API server; ``purge``: every etcd member of the cluster too, their data dirs wiped."""
    from lab.services import kube

    kube.stop_apiserver(cfg, process_name(endpoint))
    if purge:
        s = slug(endpoint)
        for name in etcd.running_names(cfg, s):
            process.stop(cfg, name)
        for path in (cfg.root / "data").glob(etcd.process_name(s, "*")):
            shutil.rmtree(path, ignore_errors=True)


def running_names(cfg: LabConfig) -> list[str]:
    return [name for name in process.running(cfg) if name.startswith(PREFIX)]
