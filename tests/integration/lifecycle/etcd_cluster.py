"""A real etcd cluster for tests: N members of the lab's etcd binary on loopback addresses, TLS everywhere.

Each member serves its clients on ``https://<address>:2379`` and its peers on ``https://<address>:2380`` with
certificates from the CA it is given, and requires client certificates from that CA
(``--client-cert-auth``, ``--peer-client-cert-auth``), as kubeadm's stacked etcd does.  Processes are
stopped by PID.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import os
import signal
import ssl
import subprocess
import time
import urllib.request
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


def etcd_binary() -> Path:
    """The lab's cached etcd (built once by lab/kube_build), built now if it is not there."""
    from lab import config
    from lab.kube_build import build

    cfg = config.load()
    return (build.cached(cfg) or build.build(cfg)) / "etcd"


def _leaf(ca_crt: str, ca_key: str, cn: str, ip: str) -> tuple[bytes, bytes]:
    """A serving + client certificate for a member (kubeadm's etcd/server and etcd/peer have both usages)."""
    ca = x509.load_pem_x509_certificate(ca_crt.encode())
    signer = serialization.load_pem_private_key(ca_key.encode(), password=None)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)]))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False
        )
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address(ip)), x509.DNSName(cn), x509.DNSName("localhost")]
            ),
            critical=False,
        )
        .sign(signer, hashes.SHA256())
    )
    pem = cert.public_bytes(serialization.Encoding.PEM)
    kpem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return pem, kpem


class EtcdCluster:
    def __init__(self, root: Path, ca_crt: str, ca_key: str, addresses: list[str]):
        self.root = root
        self.ca_crt, self.ca_key = ca_crt, ca_key
        self.addresses = addresses
        self.names = [f"node-{i}" for i in range(len(addresses))]
        self.procs: dict[str, subprocess.Popen] = {}
        (root / "ca.crt").write_text(ca_crt)
        self.binary = etcd_binary()

    def client_url(self, i: int) -> str:
        return f"https://{self.addresses[i]}:2379"

    def peer_url(self, i: int) -> str:
        return f"https://{self.addresses[i]}:2380"

    def _argv(self, i: int, initial: list[int], state: str) -> list[str]:
        name, d = self.names[i], self.root / self.names[i]
        d.mkdir(exist_ok=True)
        crt, key = _leaf(self.ca_crt, self.ca_key, name, self.addresses[i])
        (d / "tls.crt").write_bytes(crt)
        key_path = d / "tls.key"
        key_path.write_bytes(key)
        key_path.chmod(0o600)
        cluster = ",".join(f"{self.names[j]}={self.peer_url(j)}" for j in initial)
        tls = [f"--trusted-ca-file={self.root / 'ca.crt'}", f"--cert-file={d / 'tls.crt'}", f"--key-file={key_path}"]
        peer_tls = [
            f"--peer-trusted-ca-file={self.root / 'ca.crt'}",
            f"--peer-cert-file={d / 'tls.crt'}",
            f"--peer-key-file={key_path}",
        ]
        return [
            str(self.binary),
            f"--name={name}",
            f"--data-dir={d / 'data'}",
            f"--listen-client-urls={self.client_url(i)}",
            f"--advertise-client-urls={self.client_url(i)}",
            f"--listen-peer-urls={self.peer_url(i)}",
            f"--initial-advertise-peer-urls={self.peer_url(i)}",
            f"--initial-cluster={cluster}",
            f"--initial-cluster-state={state}",
            "--client-cert-auth",
            "--peer-client-cert-auth",
            *tls,
            *peer_tls,
            "--unsafe-no-fsync",
            "--heartbeat-interval=100",
            "--election-timeout=1000",
            "--log-level=error",
        ]

    def start(self, i: int, initial: list[int], state: str = "new") -> None:
        log = open(self.root / f"{self.names[i]}.log", "ab")  # noqa: SIM115 - the process keeps it
        self.procs[self.names[i]] = subprocess.Popen(
            self._argv(i, initial, state), stdout=log, stderr=log, start_new_session=True
        )

    def start_all(self) -> None:
        for i in range(len(self.addresses)):
            self.start(i, list(range(len(self.addresses))))

    def stop(self, i: int) -> None:
        proc = self.procs.pop(self.names[i], None)
        if proc is not None and proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)

    def stop_all(self) -> None:
        for i in range(len(self.addresses)):
            self.stop(i)

    def admin_context(self) -> ssl.SSLContext:
        """The test's own client (a certificate from the same CA), independent of the code under test."""
        ctx = ssl.create_default_context(cafile=str(self.root / "ca.crt"))
        d = self.root / "admin"
        d.mkdir(exist_ok=True)
        crt, key = _leaf(self.ca_crt, self.ca_key, "test-admin", "127.0.0.1")
        (d / "tls.crt").write_bytes(crt)
        (d / "tls.key").write_bytes(key)
        ctx.load_cert_chain(str(d / "tls.crt"), str(d / "tls.key"))
        return ctx

    def call(self, i: int, path: str, body: dict | None = None, timeout: float = 3) -> dict:
        req = urllib.request.Request(self.client_url(i) + path, data=json.dumps(body or {}).encode(), method="POST")
        with urllib.request.urlopen(req, timeout=timeout, context=self.admin_context()) as resp:
            return json.loads(resp.read())

    def wait_healthy(self, members: list[int], timeout: float = 120) -> None:
        """Until every listed member answers its status with a leader."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            try:
                if all(self.call(i, "/v3/maintenance/status").get("leader") not in (None, "0") for i in members):
                    return
            except OSError as exc:
                last = exc
            time.sleep(0.5)
        raise AssertionError(f"etcd members {members} not healthy after {timeout}s: {last}")
