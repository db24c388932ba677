"""A workload cluster's etcd, run as kubeadm's stacked etcd runs it: one member per control-plane host.

The member of Node ``<node>`` on a host whose address is ``<ip>`` (a 127.x
address) is lab process ``nodesim-etcd-<endpoint slug>-<node>``: the lab's
etcd binary with ``--name=<node>``, client ``https://<ip>:2379``, peer
``https://<ip>:2380``, metrics ``http://<ip>:2381``, ``--client-cert-auth``
and ``--peer-client-cert-auth`` with the cluster's etcd CA trusted (the CA the
bootstrap data writes to ``/etc/kubernetes/pki/etcd/ca.crt``), serving and
peer certificates signed by that CA with kubeadm's names (CN = the node name;
SANs the node name, ``localhost``, ``127.0.0.1``, ``::1`` and ``<ip>``).
Certificates and data live in ``.lab/data/<process name>/`` (``pki/`` and
``data/``): the host's ``/etc/kubernetes/pki/etcd`` and ``/var/lib/etcd``.

``Client`` speaks etcd's v3 JSON gateway (``POST /v3/cluster/member/list`` ...)
with a client certificate signed by the etcd CA, as kubeadm does with
``healthcheck-client.crt``; the etcd server decides what it allows.
"""

from __future__ import annotations

import base64
import json
import shutil
import ssl
import urllib.error
import urllib.request
from pathlib import Path

from lab import process
from lab.config import LabConfig
from lab.kube_build import build, pki

CLIENT_PORT = 2379
PEER_PORT = 2380
METRICS_PORT = 2381
PREFIX = "nodesim-etcd-"
# kubeadm's names for the files under /etc/kubernetes/pki (cmd/kubeadm/app/constants)
SERVER_CN_SANS = ("localhost", "127.0.0.1", "::1")
HEALTHCHECK_CN = "kube-etcd-healthcheck-client"
APISERVER_CLIENT_CN = "kube-apiserver-etcd-client"


class EtcdError(RuntimeError):
    """An etcd API call failed: unreachable, refused (TLS), or an error etcd returned."""


def process_name(slug: str, node: str) -> str:
    return f"{PREFIX}{slug}-{node}"


def member_dir(cfg: LabConfig, slug: str, node: str) -> Path:
    return cfg.data(process_name(slug, node))


def client_url(ip: str) -> str:
    return f"https://{ip}:{CLIENT_PORT}"


def peer_url(ip: str) -> str:
    return f"https://{ip}:{PEER_PORT}"


def _split_ips(ip: str) -> tuple[list[str], list[str]]:
    import ipaddress

    ips, dns = [], []
    for name in SERVER_CN_SANS:
        try:
            ipaddress.ip_address(name)
            ips.append(name)
        except ValueError:
            dns.append(name)
    return ips + [ip], dns


def write_pki(d: Path, ca_cert: bytes, ca_key: bytes, node: str, ip: str) -> None:
    """kubeadm's etcd certificates of one member (certs phases etcd-server, etcd-peer, etcd-healthcheck-client)."""
    p = d / "pki"
    pki.write(p / "ca.crt", ca_cert)
    ips, dns = _split_ips(ip)
    for kind in ("server", "peer"):
        crt, key = pki.issue(ca_cert, ca_key, node, ips=ips, dns=[node, *dns], server=True, client=True)
        pki.write(p / f"{kind}.crt", crt)
        pki.write(p / f"{kind}.key", key, private=True)
    crt, key = pki.issue(ca_cert, ca_key, HEALTHCHECK_CN)
    pki.write(p / "healthcheck-client.crt", crt)
    pki.write(p / "healthcheck-client.key", key, private=True)


def argv(bins: Path, d: Path, node: str, ip: str, initial_cluster: str, state: str) -> list[str]:
    """The etcd command line of kubeadm's static pod manifest (phases/etcd/local.go), on the lab's addresses."""
    p = d / "pki"
    return [
        str(bins / "etcd"),
        f"--name={node}",
        f"--data-dir={d / 'data'}",
        f"--advertise-client-urls={client_url(ip)}",
        # kubeadm also listens on https://127.0.0.1:2379; every host shares the lab's loopback, so only <ip>
        f"--listen-client-urls={client_url(ip)}",
        f"--initial-advertise-peer-urls={peer_url(ip)}",
        f"--listen-peer-urls={peer_url(ip)}",
        f"--listen-metrics-urls=http://{ip}:{METRICS_PORT}",
        f"--initial-cluster={initial_cluster}",
        f"--initial-cluster-state={state}",
        f"--cert-file={p / 'server.crt'}",
        f"--key-file={p / 'server.key'}",
        "--client-cert-auth=true",
        f"--trusted-ca-file={p / 'ca.crt'}",
        f"--peer-cert-file={p / 'peer.crt'}",
        f"--peer-key-file={p / 'peer.key'}",
        "--peer-client-cert-auth=true",
        f"--peer-trusted-ca-file={p / 'ca.crt'}",
        "--snapshot-count=10000",
        "--watch-progress-notify-interval=5s",
        "--feature-gates=InitialCorruptCheck=true",
        # a throw-away test store: durability across power loss buys nothing here
        "--unsafe-no-fsync",
        "--log-level=warn",
    ]


def running(cfg: LabConfig, slug: str, node: str) -> bool:
    return process.pid_of(cfg, process_name(slug, node)) is not None


def start(cfg: LabConfig, slug: str, member: dict, ca_cert: bytes, ca_key: bytes) -> int:
    """Start a member (as the kubelet starts the static pod), with its data dir as it is.

    ``member``: name, ip, initial_cluster, state ("new" or "existing").  The
    certificates are written on the first start only (kubeadm writes them once).
    """
    name = process_name(slug, member["name"])
    pid = process.pid_of(cfg, name)
    if pid is not None:
        return pid
    ip = member["ip"]
    for port in (CLIENT_PORT, PEER_PORT, METRICS_PORT):
        if process.port_open(ip, port):
            raise process.LabError(f"{ip}:{port} is taken by something else (etcd member {member['name']})")
    d = member_dir(cfg, slug, member["name"])
    if not (d / "pki" / "server.crt").exists():
        write_pki(d, ca_cert, ca_key, member["name"], ip)
    bins = build.build(cfg)
    # started when it serves /livez (it may still wait for a leader: that is not start-up's business)
    return process.start(
        cfg,
        name,
        argv(bins, d, member["name"], ip, member["initial_cluster"], member["state"]),
        ready=lambda: process.http_ok(f"http://{ip}:{METRICS_PORT}/livez"),
        timeout=60,
    )


def stop(cfg: LabConfig, slug: str, node: str, wipe: bool = False) -> None:
    """Stop a member by PID; ``wipe`` drops its data dir and certificates too (the host's disk is gone)."""
    process.stop(cfg, process_name(slug, node))
    if wipe:
        shutil.rmtree(member_dir(cfg, slug, node), ignore_errors=True)


def running_names(cfg: LabConfig, slug: str | None = None) -> list[str]:
    prefix = PREFIX + (f"{slug}-" if slug else "")
    return [n for n in process.running(cfg) if n.startswith(prefix)]


# --- the etcd API ------------------------------------------------------------------


class Client:
    """etcd's v3 API through its JSON gateway, authenticated by a client certificate of the etcd CA."""

    def __init__(self, endpoints: list[str], ca_file: Path, cert_file: Path, key_file: Path, timeout: float = 5.0):
        self.endpoints = list(endpoints)
        self.timeout = timeout
        self.context = ssl.create_default_context(cafile=str(ca_file))
        self.context.load_cert_chain(str(cert_file), str(key_file))

    def call(self, path: str, body: dict | None = None) -> dict:
        """POST to the first endpoint that answers; an error etcd returns is raised at once."""
        errors = []
        for url in self.endpoints:
            req = urllib.request.Request(
                f"{url}{path}",
                data=json.dumps(body or {}).encode(),
                method="POST",
                headers={"Content-Type": "application/json"},
            )
            try:
                with urllib.request.urlopen(req, timeout=self.timeout, context=self.context) as resp:
                    return json.load(resp)
            except urllib.error.HTTPError as exc:
                raw = exc.read()
                try:
                    message = json.loads(raw).get("message") or raw.decode(errors="replace")
                except ValueError:
                    message = raw.decode(errors="replace")
                raise EtcdError(f"{url}{path}: {message}") from None
            except (OSError, ssl.SSLError) as exc:
                errors.append(f"{url}: {exc}")
        raise EtcdError(f"no etcd endpoint answered {path}: {'; '.join(errors) or 'no endpoints'}")

    def member_list(self) -> list[dict]:
        # linearizable: the list a majority agrees on (fails without quorum), as kubeadm's client asks for it
        return self.call("/v3/cluster/member/list", {"linearizable": True}).get("members") or []

    def member_add(self, peer: str, learner: bool) -> dict:
        return self.call("/v3/cluster/member/add", {"peerURLs": [peer], "isLearner": learner})

    def member_promote(self, mid: int) -> dict:
        return self.call("/v3/cluster/member/promote", {"ID": str(mid)})

    def member_remove(self, mid: int) -> dict:
        return self.call("/v3/cluster/member/remove", {"ID": str(mid)})

    def status(self, url: str) -> dict:
        """One member's own view (leader, raft term, whether it is a learner): ``/v3/maintenance/status``."""
        one = Client.__new__(Client)
        one.endpoints, one.timeout, one.context = [url], self.timeout, self.context
        return one.call("/v3/maintenance/status")

    def put(self, key: str, value: str) -> dict:
        def b64(text: str) -> str:
            return base64.b64encode(text.encode()).decode()

        return self.call("/v3/kv/put", {"key": b64(key), "value": b64(value)})
