# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Certificate lifetimes: the admin kubeconfig's renewal, a control-plane machine's expiry, the cluster CA's.

- ``<cluster>-kubeconfig``: its client certificate lives a year and is regenerated, signed by the cluster
  CA again, when less than six months remain (KCP reconcileKubeconfig with util/kubeconfig
  NeedsClientCertRotation / RegenerateSecret; certs.ClientCertificateRenewalDuration).  Only a Secret the
  collection made (owned by the Cluster or its control plane) is renewed; one a user brought is left alone,
  as upstream leaves a Secret KCP does not own.
- ``machine.cluster.x-k8s.io/certificates-expiry`` on a control-plane Machine's KubeadmConfig: when the
  machine's kubeadm certificates expire (RFC 3339), what KCP compares with
  ``rollout.before.certificatesExpiryDays``.  Upstream reads the API server's serving certificate on the
  machine; here it is read from the machine's address when it answers TLS there, otherwise bounded from
  below by when the bootstrap data was written plus kubeadm's ``certificateValidityPeriod`` (default one
  year): kubeadm signs the certificates after that, so the real expiry is never earlier.  Written once, as
  upstream, unless the Machine carries the annotation itself (the user's override wins there).
- The cluster CA's expiry (``<cluster>-ca`` ``tls.crt``), for machine_info and the final table.
"""

from __future__ import annotations

import base64
import datetime
import functools
import socket
import ssl

from ansible_collections.baremetal.capi.plugins.module_utils.bootstrap import pki
from ansible_collections.baremetal.capi.plugins.module_utils.errors import Conflict, NotFound, Requeue
from ansible_collections.baremetal.capi.plugins.module_utils.model import convert, meta, names
from ansible_collections.baremetal.capi.plugins.module_utils.store import mutate as rmw

try:
    from cryptography import x509
except ImportError:  # the modules report cryptography missing
    x509 = None

try:
    import yaml
except ImportError:
    yaml = None

CLIENT_CERT_RENEWAL = datetime.timedelta(hours=365 * 24 / 2)  # six months, certs.ClientCertificateRenewalDuration
KUBEADM_CERT_VALIDITY = datetime.timedelta(hours=8760)  # kubeadm's default certificateValidityPeriod


def _utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def rfc3339(t: datetime.datetime) -> str:
    return t.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _not_after(pem: str) -> datetime.datetime:
    return x509.load_pem_x509_certificate(pem.encode()).not_valid_after_utc


@functools.lru_cache(maxsize=64)
def client_cert_expiry(kubeconfig_text: str) -> datetime.datetime | None:
    """The earliest client-certificate expiry among the kubeconfig's users, or None when it has none.

    Kept per kubeconfig text: every KubeadmConfig of a cluster asks about the same kubeconfig in one run.
    """
    config = yaml.safe_load(kubeconfig_text) or {}
    out = None
    for user in config.get("users") or []:
        data = (user.get("user") or {}).get("client-certificate-data")
        if not data:
            continue
        expiry = _not_after(base64.b64decode(data).decode())
        out = expiry if out is None or expiry < out else out
    return out


def needs_rotation(kubeconfig_text: str, now: datetime.datetime, threshold=CLIENT_CERT_RENEWAL) -> bool:
    """NeedsClientCertRotation: a client certificate with less than ``threshold`` of validity left."""
    expiry = client_cert_expiry(kubeconfig_text)
    return expiry is not None and expiry - now < threshold


def _secret_text(secret: dict, key: str) -> str:
    return base64.b64decode((secret.get("data") or {})[key]).decode()


def _ours(secret: dict, cluster: dict) -> bool:
    """Made by the collection for this Cluster: owned by it or by its control plane."""
    cp = ((cluster.get("spec") or {}).get("controlPlaneRef") or {}).get("name")
    for ref in secret["metadata"].get("ownerReferences") or []:
        if ref.get("kind") == "Cluster" and ref.get("name") == meta.name(cluster):
            return True
        if ref.get("kind") == "KubeadmControlPlane" and ref.get("name") == cp:
            return True
    return False


def regenerate(kubeconfig_text: str, ca_crt: str, ca_key: str, now: datetime.datetime) -> str:
    """RegenerateSecret: the same kubeconfig with new client key pairs signed by the CA (a year from now)."""
    config = yaml.safe_load(kubeconfig_text)
    for user in config.get("users") or []:
        body = user.get("user") or {}
        if not body.get("client-certificate-data"):
            continue
        cert, key = pki.client_certificate(ca_crt, ca_key, "kubernetes-admin", ["system:masters"], now=now)
        body["client-certificate-data"] = base64.b64encode(cert.encode()).decode()
        body["client-key-data"] = base64.b64encode(key.encode()).decode()
    return yaml.safe_dump(config, sort_keys=False)


def renew_kubeconfig(store, cluster: dict, *, now: datetime.datetime | None = None, check: bool = False) -> bool:
    """Regenerate the ``<cluster>-kubeconfig`` client certificate when less than six months remain; True if so."""
    now = now or _utcnow()
    ns, cname = meta.namespace(cluster), meta.name(cluster)
    try:
        secret = store.get("Secret", cname + names.KUBECONFIG_SECRET_SUFFIX, ns)
        ca = store.get("Secret", f"{cname}-ca", ns)
    except NotFound:
        return False
    if not _ours(secret, cluster):
        return False
    text = _secret_text(secret, names.KUBECONFIG_SECRET_KEY)
    if not needs_rotation(text, now):
        return False
    if check:
        return True
    value = regenerate(text, _secret_text(ca, "tls.crt"), _secret_text(ca, "tls.key"), now)
    secret["data"][names.KUBECONFIG_SECRET_KEY] = base64.b64encode(value.encode()).decode()
    try:
        store.update(secret)
    except Conflict:
        return False  # someone else renewed it (or changed it) meanwhile; the next round looks again
    return True


def ca_expiry(store, cluster_name: str, ns: str) -> str | None:
    """The cluster CA's expiry (RFC 3339), or None while there is no ``<cluster>-ca`` Secret."""
    try:
        secret = store.get("Secret", f"{cluster_name}-ca", ns)
        return rfc3339(_not_after(_secret_text(secret, "tls.crt")))
    except (NotFound, KeyError, ValueError):
        return None


def serving_cert_expiry(host: str, port: int, timeout: float = 2.0) -> datetime.datetime | None:
    """NotAfter of the certificate served at host:port (no verification: only its dates are read), or None."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            with ctx.wrap_socket(sock, server_hostname=host) as tls:
                der = tls.getpeercert(binary_form=True)
    except (OSError, ssl.SSLError):
        return None
    return x509.load_der_x509_certificate(der).not_valid_after_utc if der else None


def _validity(config: dict) -> datetime.timedelta:
    cc = (config.get("spec") or {}).get("clusterConfiguration") or {}
    period = cc.get("certificateValidityPeriod")
    if not period:
        return KUBEADM_CERT_VALIDITY
    seconds = convert.duration_seconds(period, meta.ref(config), "spec.clusterConfiguration.certificateValidityPeriod")
    return datetime.timedelta(seconds=seconds) or KUBEADM_CERT_VALIDITY


def machine_certificates_expiry(store, config: dict, machine: dict, cluster: dict, probe=serving_cert_expiry):
    """When a control-plane machine's certificates expire: its API server's certificate, or the lower bound."""
    port = int(((cluster.get("spec") or {}).get("controlPlaneEndpoint") or {}).get("port") or 6443)
    bind = (((config.get("spec") or {}).get("joinConfiguration") or {}).get("controlPlane") or {}).get(
        "localAPIEndpoint"
    ) or ((config.get("spec") or {}).get("initConfiguration") or {}).get("localAPIEndpoint")
    port = int((bind or {}).get("bindPort") or port)
    for address in (machine.get("status") or {}).get("addresses") or []:
        if address.get("type") in ("InternalIP", "ExternalIP") and probe is not None:
            found = probe(address["address"], port)
            if found is not None:
                return found
    name = (config.get("status") or {}).get("dataSecretName")
    if not name:
        return None
    try:
        secret = store.get("Secret", name, meta.namespace(config))
    except NotFound:
        return None
    written = datetime.datetime.strptime(secret["metadata"]["creationTimestamp"], "%Y-%m-%dT%H:%M:%SZ")
    return written.replace(tzinfo=datetime.UTC) + _validity(config)


def annotate_certificates_expiry(store, config: dict, machine: dict, cluster: dict, *, check=False, probe=None):
    """Write the certificates-expiry annotation on a control-plane Machine's KubeadmConfig once it has a Node."""
    if names.CONTROL_PLANE_LABEL not in meta.labels(machine) or not (machine.get("status") or {}).get("nodeRef"):
        return False
    if names.CERTIFICATES_EXPIRY_ANNOTATION in meta.annotations(config):
        return False
    expiry = machine_certificates_expiry(
        store, config, machine, cluster, probe=serving_cert_expiry if probe is None else probe
    )
    if expiry is None:
        return False
    if check:
        return True
    stamp, wrote = rfc3339(expiry), []

    def annotate(obj: dict) -> bool:
        wrote.clear()  # only the attempt that is written counts
        annotations = obj["metadata"].setdefault("annotations", {})
        if names.CERTIFICATES_EXPIRY_ANNOTATION in annotations:  # written by another run meanwhile
            return False
        annotations[names.CERTIFICATES_EXPIRY_ANNOTATION] = stamp
        wrote.append(True)
        return True

    try:
        rmw.mutate(store, "KubeadmConfig", meta.name(config), meta.namespace(config), annotate)
    except Requeue:  # the config keeps changing: the next round writes it
        return False
    return bool(wrote)


def machine_expiry(store, machine: dict) -> str | None:
    """The certificates-expiry of a Machine: its own annotation (the user's override), else its KubeadmConfig's."""
    own = meta.annotations(machine).get(names.CERTIFICATES_EXPIRY_ANNOTATION)
    if own:
        return own
    ref = ((machine.get("spec") or {}).get("bootstrap") or {}).get("configRef") or {}
    if ref.get("kind") != "KubeadmConfig" or not ref.get("name"):
        return None
    try:
        config = store.get("KubeadmConfig", ref["name"], meta.namespace(machine))
    except NotFound:
        return None
    return meta.annotations(config).get(names.CERTIFICATES_EXPIRY_ANNOTATION)


def report(store, machine: dict) -> dict:
    """What machine_info and the final table show: ``caExpiry`` (the cluster CA) and ``certificatesExpiry``."""
    cluster = (machine.get("spec") or {}).get("clusterName")
    return {
        "caExpiry": ca_expiry(store, cluster, meta.namespace(machine)) if cluster else None,
        "certificatesExpiry": machine_expiry(store, machine),
    }
