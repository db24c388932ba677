# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The engine's etcd client: what KubeadmControlPlane asks a workload cluster's stacked etcd.

KCP reaches each member through a port-forward to the ``etcd-<node>`` Pod with a client certificate it signs
with the cluster's etcd CA (``<cluster>-etcd``, CN ``cluster-api.x-k8s.io``; KCP's etcd_client_generator.go).
No management cluster sits between us and the hosts, so the collection goes straight to each member's
client URL, ``https://<address>:2379`` (the control-plane Node's InternalIP, where kubeadm's stacked member
listens, and the Machine's InternalIPs), with the same kind of certificate - short
lived here, made per process, its key kept in memory (the ssl module loads a chain only from a file: the file
lives in a private temporary directory for the moment ``load_cert_chain`` reads it).

etcd's gRPC gateway (``POST /v3/...`` with JSON bodies) is all that is needed: ``cluster/member/list``,
``cluster/member/remove``, ``maintenance/status`` and ``maintenance/transfer-leadership``.  Its JSON encodes
uint64 ids as decimal strings (proto3 JSON) and omits false / zero fields; member ids are kept as those
strings here.

``removal_keeps_quorum`` is the rule every removal passes first: the voters left must still hold a majority of
healthy members, otherwise the removal is refused (a message that says so) and nothing is changed.
"""

from __future__ import annotations

import datetime
import http.client
import json
import os
import shutil
import ssl
import tempfile
import threading
import urllib.parse
from dataclasses import dataclass, field

from ansible_collections.baremetal.capi.plugins.module_utils.errors import CapiError, Requeue

CLIENT_PORT = 2379
# KCP's etcd client certificate CN (controlplane/kubeadm/internal/etcd_client_generator.go).
CLIENT_CERT_CN = "cluster-api.x-k8s.io"
CLIENT_CERT_LIFETIME = datetime.timedelta(hours=1)
REQUEST_TIMEOUT = 5.0


class EtcdUnavailable(Requeue):
    """No member answered (the control plane is down or not reachable from here): try again later."""


class EtcdBusy(Requeue):
    """etcd itself refuses a reconfiguration for now (strict reconfig check: a peer connected less than 5 s ago)."""


# etcd's answers to a member change its strict reconfiguration check refuses for now (etcdserver/errors).
_BUSY = ("etcdserver: unhealthy cluster", "etcdserver: re-configuration failed due to not enough started members")


class QuorumRefused(CapiError):
    """A membership change that would leave etcd without a quorum: refused, nothing was changed."""


@dataclass
class Member:
    id: str
    name: str
    peer_urls: list[str] = field(default_factory=list)
    client_urls: list[str] = field(default_factory=list)
    is_learner: bool = False

    @classmethod
    def from_json(cls, body: dict) -> Member:
        return cls(
            id=str(body.get("ID", "")),
            name=body.get("name") or "",
            peer_urls=list(body.get("peerURLs") or []),
            client_urls=list(body.get("clientURLs") or []),
            is_learner=bool(body.get("isLearner")),
        )


# --- the client certificate ------------------------------------------------------------------------------


def client_certificate(ca_cert_pem: str, ca_key_pem: str, now: datetime.datetime | None = None) -> tuple[str, str]:
    """A short-lived client certificate signed by the etcd CA: (certificate PEM, key PEM); P-256 (fast to make)."""
    # Imported here: cryptography is the heaviest import of the control-plane flows, and every module whose
    # webhook reaches them (a KubeadmControlPlane written by baremetal.capi.object) would pay it for nothing.
    from cryptography.hazmat.primitives.asymmetric import ec

    from ansible_collections.baremetal.capi.plugins.module_utils.bootstrap import pki

    return pki.client_certificate(
        ca_cert_pem,
        ca_key_pem,
        CLIENT_CERT_CN,
        now=now,
        key=ec.generate_private_key(ec.SECP256R1()),
        lifetime=CLIENT_CERT_LIFETIME,
    )


def ssl_context(ca_cert_pem: str, client_cert_pem: str, client_key_pem: str) -> ssl.SSLContext:
    """Verifies the members against the etcd CA and presents the client certificate."""
    ctx = ssl.create_default_context(cadata=ca_cert_pem)
    tmp = tempfile.mkdtemp(prefix="bmcapi-etcd-")  # mode 0700
    try:
        path = os.path.join(tmp, "client.pem")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(client_cert_pem + client_key_pem)
        ctx.load_cert_chain(path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return ctx


# --- the quorum rule --------------------------------------------------------------------------------------


def quorum(voters: int) -> int:
    return voters // 2 + 1


def removal_keeps_quorum(members: list[Member], healthy_ids: set[str], victim_id: str) -> tuple[bool, str]:
    """Whether removing ``victim_id`` leaves a majority of healthy voters among the voters left, and why not."""
    victim = next((m for m in members if m.id == victim_id), None)
    if victim is None:
        return True, "not a member"
    if victim.is_learner:
        return True, "a learner does not count towards quorum"
    voters_left = [m for m in members if not m.is_learner and m.id != victim_id]
    if not voters_left:
        return False, f"etcd member {victim.name or victim.id} is the last voting member: removing it loses the data"
    healthy_left = [m for m in voters_left if m.id in healthy_ids]
    need = quorum(len(voters_left))
    if len(healthy_left) < need:
        return False, (
            f"removing etcd member {victim.name or victim.id} would lose etcd quorum: "
            f"{len(healthy_left)} of the {len(voters_left)} members left are healthy, {need} are needed"
        )
    return True, f"{len(healthy_left)} of {len(voters_left)} members left are healthy (quorum {need})"


# --- the client -------------------------------------------------------------------------------------------


class EtcdClient:
    """etcd's v3 JSON API on a set of member client URLs (``https://host:2379``)."""

    def __init__(self, endpoints: list[str], context: ssl.SSLContext, timeout: float = REQUEST_TIMEOUT):
        self.endpoints = list(endpoints)
        self.context = context
        self.timeout = timeout

    def _post(self, endpoint: str, path: str, body: dict | None = None) -> dict:
        url = urllib.parse.urlsplit(endpoint.rstrip("/") + path)
        conn = http.client.HTTPSConnection(
            url.hostname, url.port or CLIENT_PORT, timeout=self.timeout, context=self.context
        )
        try:
            conn.request("POST", url.path, body=json.dumps(body or {}), headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            raw = resp.read()
        except (OSError, http.client.HTTPException) as exc:
            raise EtcdUnavailable(f"etcd {endpoint} does not answer: {exc}", after=5) from None
        finally:
            conn.close()
        try:
            answer = json.loads(raw or b"{}")
        except ValueError:
            answer = {"message": raw[:200].decode(errors="replace")}
        if resp.status >= 400:
            message = answer.get("message") or answer.get("error") or f"HTTP {resp.status}"
            if message in _BUSY:
                raise EtcdBusy(f"etcd {endpoint} refuses {path} for now: {message}", after=5)
            raise CapiError(f"etcd {endpoint}{path}: {message}")
        return answer

    def _first(self, path: str, body: dict | None = None, endpoints: list[str] | None = None) -> dict:
        errors = []
        for ep in endpoints if endpoints is not None else self.endpoints:
            try:
                return self._post(ep, path, body)
            except EtcdUnavailable as exc:
                errors.append(exc.message)
        raise EtcdUnavailable("no etcd member answers: " + "; ".join(errors or ["no endpoints"]), after=5)

    def members(self) -> list[Member]:
        return [Member.from_json(m) for m in self._first("/v3/cluster/member/list").get("members") or []]

    def status(self, endpoint: str) -> dict:
        """One member's own status: ``member_id`` (header), ``leader``, ``version``, ``isLearner``, ``errors``."""
        body = self._post(endpoint, "/v3/maintenance/status")
        return {
            "member_id": str((body.get("header") or {}).get("member_id", "")),
            "leader": str(body.get("leader", "")),
            "version": body.get("version"),
            "is_learner": bool(body.get("isLearner")),
            "errors": list(body.get("errors") or []),
        }

    def statuses(self, members: list[Member]) -> dict[str, dict]:
        """Status of every member that answers on one of its client URLs, by member id."""
        out: dict[str, dict] = {}
        for m in members:
            for url in m.client_urls:
                try:
                    st = self.status(url)
                except CapiError:
                    continue
                out[m.id] = {**st, "endpoint": url}
                break
        return out

    def healthy_ids(self, members: list[Member], statuses: dict[str, dict] | None = None) -> set[str]:
        """Members that answer, know a leader and report no errors (etcdctl endpoint health's rule in spirit)."""
        statuses = self.statuses(members) if statuses is None else statuses
        return {mid for mid, st in statuses.items() if st["leader"] not in ("", "0") and not st["errors"]}

    def leader_id(self, statuses: dict[str, dict]) -> str | None:
        leaders = {st["leader"] for st in statuses.values() if st["leader"] not in ("", "0")}
        return leaders.pop() if len(leaders) == 1 else None

    def move_leader(self, target_id: str) -> bool:
        """Transfer leadership to ``target_id`` (asked of the leader, as etcdctl move-leader).  True if it moved."""
        members = self.members()
        statuses = self.statuses(members)
        leader = self.leader_id(statuses)
        if leader is None:
            raise EtcdUnavailable("etcd has no leader to move leadership from", after=5)
        if leader == target_id:
            return False
        if target_id not in {m.id for m in members if not m.is_learner}:
            raise CapiError(f"etcd member {target_id} is not a voting member: leadership cannot move to it")
        self._post(statuses[leader]["endpoint"], "/v3/maintenance/transfer-leadership", {"targetID": target_id})
        return True

    def remove_member(self, member_id: str) -> bool:
        """Remove a member when the quorum rule allows it (QuorumRefused otherwise).  False if it was not one."""
        members = self.members()
        if member_id not in {m.id for m in members}:
            return False
        statuses = self.statuses(members)
        ok, why = removal_keeps_quorum(members, self.healthy_ids(members, statuses), member_id)
        if not ok:
            raise QuorumRefused(why)
        # Ask a member that stays: the one going may stop answering halfway.
        others = [st["endpoint"] for mid, st in statuses.items() if mid != member_id]
        self._first("/v3/cluster/member/remove", {"ID": member_id}, endpoints=others or None)
        return True


# --- a workload cluster's etcd -----------------------------------------------------------------------------

_CERTS: dict[tuple, tuple[datetime.datetime, ssl.SSLContext]] = {}
_CERTS_LOCK = threading.Lock()


def internal_ip(machine: dict) -> str | None:
    addresses = (machine.get("status") or {}).get("addresses") or []
    return next((a["address"] for a in addresses if a.get("type") == "InternalIP" and a.get("address")), None)


def member_url(address: str) -> str:
    host = f"[{address}]" if ":" in address else address
    return f"https://{host}:{CLIENT_PORT}"


def etcd_ca(store, cluster_name: str, namespace: str) -> tuple[str, str]:
    """The ``<cluster>-etcd`` CA key pair from the store (NotFound while it does not exist)."""
    import base64

    data = store.get("Secret", f"{cluster_name}-etcd", namespace).get("data") or {}
    if "tls.crt" not in data or "tls.key" not in data:
        raise CapiError("must hold tls.crt and tls.key", obj=f"Secret {namespace}/{cluster_name}-etcd", field="data")
    return base64.b64decode(data["tls.crt"]).decode(), base64.b64decode(data["tls.key"]).decode()


def context_for(store, cluster_name: str, namespace: str) -> ssl.SSLContext:
    """An SSL context with a fresh client certificate for the cluster's etcd, made once per CA and process."""
    ca_crt, ca_key = etcd_ca(store, cluster_name, namespace)
    key = (namespace, cluster_name, ca_crt)
    now = datetime.datetime.now(datetime.timezone.utc)
    with _CERTS_LOCK:
        cached = _CERTS.get(key)
        if cached and cached[0] - now > datetime.timedelta(minutes=10):
            return cached[1]
        cert, ckey = client_certificate(ca_crt, ca_key, now)
        ctx = ssl_context(ca_crt, cert, ckey)
        _CERTS[key] = (now + CLIENT_CERT_LIFETIME, ctx)
        return ctx


def client_for(store, cluster_name: str, namespace: str, machines: list[dict], nodes: dict | None = None) -> EtcdClient:
    """A client on the control-plane hosts' addresses: each Node's InternalIPs (what its kubelet reports, where
    its stacked member listens) when ``nodes`` ({name: Node}) has it, then the Machines' InternalIPs."""
    addresses: list[str] = []
    for m in machines:
        node = (nodes or {}).get(((m.get("status") or {}).get("nodeRef") or {}).get("name"))
        for a in ((node or {}).get("status") or {}).get("addresses") or []:
            if a.get("type") == "InternalIP" and a.get("address"):
                addresses.append(a["address"])
        addresses += [
            a["address"]
            for a in (m.get("status") or {}).get("addresses") or []
            if a.get("type") == "InternalIP" and a.get("address")
        ]
    endpoints = [member_url(ip) for ip in dict.fromkeys(addresses)]
    return EtcdClient(endpoints, context_for(store, cluster_name, namespace))


def member_for(members: list[Member], machine: dict) -> Member | None:
    """The member of a Machine: named like its Node (kubeadm's stacked etcd), else the one on its address."""
    node = ((machine.get("status") or {}).get("nodeRef") or {}).get("name")
    if node:
        found = [m for m in members if m.name == node]
        if found:
            return found[0]
    ips = [
        a["address"]
        for a in (machine.get("status") or {}).get("addresses") or []
        if a.get("type") == "InternalIP" and a.get("address")
    ]
    for ip in ips:
        host = f"[{ip}]" if ":" in ip else ip
        for m in members:
            if any(u.startswith(f"https://{host}:") for u in m.client_urls + m.peer_urls):
                return m
    return None
