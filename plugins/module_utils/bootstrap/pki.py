"""Cluster certificate authorities, the admin kubeconfig, CA hashes and bootstrap tokens.

Shapes follow Cluster API (util/secret, util/kubeconfig, CABPK's token.go):
RSA-2048 PKCS#1 keys, self-signed CAs with CN=kubernetes valid 10 years from
now-5min, an admin client certificate CN=kubernetes-admin O=system:masters
signed by the cluster CA, and ``sha256:<hex of the DER SubjectPublicKeyInfo>``
CA hashes.
"""

from __future__ import annotations

import datetime
import hashlib
import secrets

try:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    HAS_CRYPTOGRAPHY = True
except ImportError:  # reported by the modules with missing_required_lib
    HAS_CRYPTOGRAPHY = False

try:
    import yaml
except ImportError:  # PyYAML comes with ansible-core; the modules report it missing otherwise
    yaml = None

from ansible_collections.baremetal.capi.plugins.module_utils import yamltext

# The CA Secrets of a cluster: suffix -> (cert file, key file) under certificatesDir.
CA_SECRETS = {
    "ca": ("ca.crt", "ca.key"),
    "etcd": ("etcd/ca.crt", "etcd/ca.key"),
    "proxy": ("front-proxy-ca.crt", "front-proxy-ca.key"),
    "sa": ("sa.pub", "sa.key"),
}

_TOKEN_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789"


def _utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def new_key(bits: int = 2048):
    return rsa.generate_private_key(public_exponent=65537, key_size=bits)


def key_pem(key) -> str:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    ).decode()


def new_ca(common_name: str = "kubernetes", days: int = 3650) -> tuple[str, str]:
    """A self-signed CA: (certificate PEM, key PEM)."""
    key = new_key()
    now = _utcnow()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())  # CAPI uses 0; cryptography requires > 0
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_encipherment=True,
                key_cert_sign=True,
                content_commitment=False,
                data_encipherment=False,
                key_agreement=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM).decode(), key_pem(key)


def new_service_account_keys() -> tuple[str, str]:
    """(public key PEM, private key PEM) for service-account token signing."""
    key = new_key()
    pub = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    return pub.decode(), key_pem(key)


def client_certificate(
    ca_cert_pem: str,
    ca_key_pem: str,
    common_name: str,
    organizations=(),
    days=365,
    now=None,
    *,
    key=None,
    lifetime=None,
):
    """A client certificate signed by the CA: (certificate PEM, key PEM).

    Valid from the CA's own start (``days`` from ``now``), or, with ``lifetime`` (a timedelta), from five
    minutes before ``now`` for that long; ``key`` (an RSA or EC private key) is a new RSA key by default.
    """
    ca_cert = x509.load_pem_x509_certificate(ca_cert_pem.encode())
    ca_key = serialization.load_pem_private_key(ca_key_pem.encode(), password=None)
    key = key or new_key()
    now = now or _utcnow()
    if lifetime is None:
        not_before, not_after = ca_cert.not_valid_before_utc, now + datetime.timedelta(days=days)
    else:
        not_before, not_after = now - datetime.timedelta(minutes=5), now + lifetime
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
    attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name(attrs))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_encipherment=isinstance(key, rsa.RSAPrivateKey),  # an EC key signs only
                key_cert_sign=False,
                content_commitment=False,
                data_encipherment=False,
                key_agreement=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM).decode(), key_pem(key)


def admin_kubeconfig(cluster_name: str, server: str, ca_cert_pem: str, ca_key_pem: str, now=None) -> str:
    """The ``<cluster>-kubeconfig`` value: user ``<cluster>-admin``, context ``<cluster>-admin@<cluster>``."""
    import base64

    cert, key = client_certificate(ca_cert_pem, ca_key_pem, "kubernetes-admin", ["system:masters"], now=now)
    user = f"{cluster_name}-admin"
    context = f"{user}@{cluster_name}"

    def b64(text: str) -> str:
        return base64.b64encode(text.encode()).decode()

    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": cluster_name, "cluster": {"server": server, "certificate-authority-data": b64(ca_cert_pem)}}
        ],
        "users": [{"name": user, "user": {"client-certificate-data": b64(cert), "client-key-data": b64(key)}}],
        "contexts": [{"name": context, "context": {"cluster": cluster_name, "user": user}}],
        "current-context": context,
        "preferences": {},
    }
    return yaml.dump(config, Dumper=yamltext.dumper(), sort_keys=False)


def ca_cert_hashes(ca_cert_pem: str) -> list[str]:
    """``sha256:<hex>`` of each certificate's DER SubjectPublicKeyInfo (kubeadm's --discovery-token-ca-cert-hash)."""
    out = []
    for cert in x509.load_pem_x509_certificates(ca_cert_pem.encode()):
        spki = cert.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        out.append("sha256:" + hashlib.sha256(spki).hexdigest())
    return out


def new_token() -> str:
    """A kubeadm bootstrap token ``[a-z0-9]{6}.[a-z0-9]{16}``."""
    pick = secrets.choice
    return "".join(pick(_TOKEN_CHARS) for _i in range(6)) + "." + "".join(pick(_TOKEN_CHARS) for _i in range(16))


def token_secret(token: str, ttl_seconds: int, now: datetime.datetime | None = None) -> dict:
    """The ``bootstrap-token-<id>`` Secret for kube-system of the workload cluster."""
    token_id, token_secret_part = token.split(".")
    expiration = (now or _utcnow()) + datetime.timedelta(seconds=ttl_seconds)
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "bootstrap.kubernetes.io/token",
        "metadata": {"name": f"bootstrap-token-{token_id}", "namespace": "kube-system"},
        "stringData": {
            "token-id": token_id,
            "token-secret": token_secret_part,
            "expiration": expiration.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "usage-bootstrap-signing": "true",
            "usage-bootstrap-authentication": "true",
            "auth-extra-groups": "system:bootstrappers:kubeadm:default-node-token",
            "description": "token generated by cluster-api-bootstrap-provider-kubeadm",
        },
    }
