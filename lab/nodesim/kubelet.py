"""What kubeadm, the kubelet and the node lifecycle controller write to a workload API.

kubeadm init uploads ``kube-public/cluster-info`` and ``kube-system/kubeadm-config``;
kubeadm join checks its bootstrap token and the CA hash first; the kubelet
registers its Node (labels, providerID, taints, Ready) and renews its Lease in
``kube-node-lease``; when the heartbeat stops for longer than the grace
period, the node lifecycle controller (which no workload cluster here runs)
sets every condition to Unknown and taints the Node unreachable, and lifts
that again when the kubelet posts Ready.

The Node is Ready only once the host has a network: until a CNI has written its config into
``/etc/cni/net.d`` the kubelet reports ``Ready=False``, reason ``KubeletNotReady``, with the container
runtime's "cni plugin not initialized" (and the ``node.kubernetes.io/not-ready`` taint stays).  A CNI is
recognised as on a real cluster: a DaemonSet of the workload cluster whose Pod template mounts a hostPath
under ``/etc/cni/net.d``, and whose Pod would run on this Node (node selector, required node affinity,
tolerations of the Node's NoSchedule / NoExecute taints, as the scheduler judges a DaemonSet Pod).  Once its
Pod has run there the config stays on the host: the Node keeps its network until the host is redeployed.
"""

from __future__ import annotations

import datetime
import hmac

import yaml

from lab.nodesim import kubeadm
from lab.nodesim.api import MERGE, Api

UNREACHABLE = "node.kubernetes.io/unreachable"
# the TaintNodesByCondition admission plugin puts this on every new Node; the lifecycle controller lifts it when Ready
NOT_READY = "node.kubernetes.io/not-ready"
CONDITIONS = (
    ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
)
# The kubelet's Ready condition while the container runtime reports no pod network (containerd's CRI status).
NETWORK_NOT_READY = (
    "Ready",
    "False",
    "KubeletNotReady",
    "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady "
    "message:Network plugin returns error: cni plugin not initialized",
)
CNI_CONF_DIR = "/etc/cni/net.d"
# What the DaemonSet controller adds to every DaemonSet Pod (daemon/util AddOrUpdateDaemonPodTolerations).
DAEMON_POD_TOLERATIONS = (
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
)
HOST_NETWORK_TOLERATION = {
    "key": "node.kubernetes.io/network-unavailable",
    "operator": "Exists",
    "effect": "NoSchedule",
}
LEASE_DURATION = 40  # kubelet's nodeLeaseDurationSeconds


class JoinError(RuntimeError):
    """kubeadm join would stop here; ``retry`` says whether kubeadm keeps trying (discovery) or fails."""

    def __init__(self, message: str, retry: bool):
        super().__init__(message)
        self.retry = retry


def ts(when: float) -> str:
    return datetime.datetime.fromtimestamp(when, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def micro_ts(when: float) -> str:
    return datetime.datetime.fromtimestamp(when, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def upload_init_config(api: Api, boot: kubeadm.Bootstrap, server: str) -> None:
    """kubeadm init's uploads that the collection and joining nodes rely on."""
    import base64

    cluster_info = yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "",
                    "cluster": {
                        "certificate-authority-data": base64.b64encode(boot.ca_cert).decode(),
                        "server": server,
                    },
                }
            ],
            "contexts": [],
            "current-context": "",
            "preferences": {},
            "users": [],
        }
    )
    api.create(
        "/api/v1/namespaces/kube-public/configmaps",
        {"metadata": {"name": "cluster-info", "namespace": "kube-public"}, "data": {"kubeconfig": cluster_info}},
    )
    api.create(
        "/api/v1/namespaces/kube-system/configmaps",
        {
            "metadata": {"name": "kubeadm-config", "namespace": "kube-system"},
            "data": {"ClusterConfiguration": yaml.safe_dump(boot.cluster_configuration or {}, sort_keys=True)},
        },
    )


def check_join(api: Api, boot: kubeadm.Bootstrap, ca_cert: bytes, now: float) -> None:
    """kubeadm join's discovery and preflight against the cluster's API."""
    if not boot.unsafe_skip_ca_verification:
        have = kubeadm.ca_cert_hash(ca_cert)
        if have not in boot.ca_cert_hashes:
            raise JoinError(
                f"cluster CA found in cluster-info ConfigMap is invalid: none of the public keys "
                f"{boot.ca_cert_hashes} are pinned (the CA's is {have})",
                retry=False,
            )
    token_id, _, token_secret = (boot.token or "").partition(".")
    secret = api.get_or_none(f"/api/v1/namespaces/kube-system/secrets/bootstrap-token-{token_id}")
    if secret is None:
        # kubeadm: "could not find a JWS signature in the cluster-info ConfigMap for token ID"; it retries
        raise JoinError(f"could not find a JWS signature in the cluster-info ConfigMap for token ID {token_id!r}", True)
    data = {k: base64_text(v) for k, v in (secret.get("data") or {}).items()}
    if not hmac.compare_digest(data.get("token-secret", ""), token_secret):
        raise JoinError(f"bootstrap token {token_id}: the token secret does not match", retry=True)
    if data.get("usage-bootstrap-authentication") != "true":
        raise JoinError(f"bootstrap token {token_id}: not usable for authentication", retry=True)
    expiration = data.get("expiration")
    if expiration:
        expires = datetime.datetime.fromisoformat(expiration.replace("Z", "+00:00")).timestamp()
        if expires <= now:
            raise JoinError(f"bootstrap token {token_id}: expired at {expiration}", retry=True)
    node = api.get_or_none(f"/api/v1/nodes/{boot.node_name}")
    if node is not None and _ready(node) == "True":
        raise JoinError(
            f'a Node with name "{boot.node_name}" and status "Ready" already exists in the cluster. '
            "You must delete the existing Node or change the name of this new joining Node",
            retry=False,
        )


def base64_text(value: str) -> str:
    import base64

    return base64.b64decode(value).decode(errors="replace")


def _ready(node: dict) -> str | None:
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return cond.get("status")
    return None


def _conditions(now: float, network_ready: bool = False) -> list[dict]:
    table = CONDITIONS if network_ready else (*CONDITIONS[:-1], NETWORK_NOT_READY)
    return [
        {
            "type": t,
            "status": s,
            "reason": r,
            "message": m,
            "lastHeartbeatTime": ts(now),
            "lastTransitionTime": ts(now),
        }
        for t, s, r, m in table
    ]


# --- the network: a CNI DaemonSet whose Pod runs on the Node --------------------------------------


def _writes_cni_config(pod_spec: dict) -> bool:
    for vol in pod_spec.get("volumes") or []:
        path = ((vol or {}).get("hostPath") or {}).get("path") or ""
        path = path.rstrip("/") or "/"
        if path == CNI_CONF_DIR or path.startswith(CNI_CONF_DIR + "/"):
            return True
    return False


def _expression_matches(expr: dict, value: str | None, present: bool) -> bool:
    op, values = expr.get("operator"), expr.get("values") or []
    if op == "In":
        return present and value in values
    if op == "NotIn":
        return not present or value not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt") and present and values:
        try:
            a, b = int(value), int(values[0])
        except ValueError:
            return False
        return a > b if op == "Gt" else a < b
    return False


def _term_matches(term: dict, node: dict) -> bool:
    labels = node["metadata"].get("labels") or {}
    exprs = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not exprs and not fields:
        return False  # an empty term matches nothing
    for expr in exprs:
        if not _expression_matches(expr, labels.get(expr.get("key")), expr.get("key") in labels):
            return False
    for expr in fields:
        if expr.get("key") != "metadata.name" or not _expression_matches(expr, node["metadata"]["name"], True):
            return False
    return True


def _tolerates(tolerations: list[dict], taint: dict) -> bool:
    for tol in tolerations:
        if tol.get("effect") and tol["effect"] != taint.get("effect"):
            continue
        if tol.get("operator") == "Exists":
            if not tol.get("key") or tol["key"] == taint.get("key"):
                return True
        elif tol.get("key") == taint.get("key") and (tol.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def daemon_pod_fits(pod_spec: dict, node: dict) -> tuple[bool, str]:
    """Whether the scheduler would place this DaemonSet's Pod on the Node, and if not, why."""
    labels = node["metadata"].get("labels") or {}
    for key, value in (pod_spec.get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return False, f"node selector {key}={value} does not match"
    required = ((pod_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms")
    if terms is not None and not any(_term_matches(t or {}, node) for t in terms):
        return False, "required node affinity does not match"
    tolerations = list(pod_spec.get("tolerations") or []) + list(DAEMON_POD_TOLERATIONS)
    if pod_spec.get("hostNetwork"):
        tolerations.append(HOST_NETWORK_TOLERATION)
    for taint in (node.get("spec") or {}).get("taints") or []:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not _tolerates(tolerations, taint):
            return False, f"untolerated taint {taint.get('key')}:{taint.get('effect')}"
    return True, ""


def cni_daemonset_for(api: Api, name: str) -> str | None:
    """``namespace/name`` of a CNI DaemonSet whose Pod would run on Node ``name``, else None."""
    node = api.get_or_none(f"/api/v1/nodes/{name}")
    if node is None:
        return None
    for ds in (api.get("/apis/apps/v1/daemonsets") or {}).get("items") or []:
        if ds["metadata"].get("deletionTimestamp"):
            continue
        pod_spec = ((ds.get("spec") or {}).get("template") or {}).get("spec") or {}
        if _writes_cni_config(pod_spec) and daemon_pod_fits(pod_spec, node)[0]:
            return f"{ds['metadata']['namespace']}/{ds['metadata']['name']}"
    return None


def register(
    api: Api,
    boot: kubeadm.Bootstrap,
    *,
    ip: str | None,
    version: str | None,
    system_uuid: str | None,
    now: float,
    network_ready: bool = False,
) -> dict:
    """The kubelet's registration (and kubeadm's mark-control-plane): the Node, created or brought up to date."""
    name = boot.node_name
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "beta.kubernetes.io/arch": "amd64",
        **boot.labels,
    }
    if boot.control_plane:
        labels[kubeadm.CONTROL_PLANE_LABEL] = ""
        labels[kubeadm.EXCLUDE_LB_LABEL] = ""
    addresses = ([{"type": "InternalIP", "address": ip}] if ip else []) + [{"type": "Hostname", "address": name}]
    existing = api.get_or_none(f"/api/v1/nodes/{name}")
    if existing is None:
        body = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": labels,
                "annotations": {
                    "node.alpha.kubernetes.io/ttl": "0",
                    "volumes.kubernetes.io/controller-managed-attach-detach": "true",
                },
            },
            "spec": {"taints": boot.taints} if boot.taints else {},
            "status": _status(addresses, version, system_uuid, now, network_ready),
        }
        if boot.provider_id:
            body["spec"]["providerID"] = boot.provider_id
        api.create("/api/v1/nodes", body)
    else:
        # a Node of this name survived an earlier instance: the kubelet takes it over; providerID
        # cannot change once set, so it is only filled in when empty
        patch: dict = {"metadata": {"labels": labels}}
        if boot.provider_id and not (existing.get("spec") or {}).get("providerID"):
            patch["spec"] = {"providerID": boot.provider_id}
        api.patch(f"/api/v1/nodes/{name}", patch)
    api.patch(f"/api/v1/nodes/{name}/status", {"status": _status(addresses, version, system_uuid, now, network_ready)})
    post_ready(api, name, now, network_ready=network_ready)
    return api.get(f"/api/v1/nodes/{name}")


def _status(
    addresses: list[dict], version: str | None, system_uuid: str | None, now: float, network_ready: bool = False
) -> dict:
    resources = {"cpu": "4", "memory": "8148100Ki", "pods": "110", "ephemeral-storage": "61202244Ki"}
    return {
        "addresses": addresses,
        "capacity": resources,
        "allocatable": resources,
        "conditions": _conditions(now, network_ready),
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": {
            "architecture": "amd64",
            "bootID": "",
            "containerRuntimeVersion": "containerd://1.7.24",
            "kernelVersion": "6.1.0-lab",
            "kubeProxyVersion": "",
            "kubeletVersion": version or "",
            "machineID": (system_uuid or "").replace("-", ""),
            "operatingSystem": "linux",
            "osImage": "baremetal.capi lab node",
            "systemUUID": system_uuid or "",
        },
    }


def post_ready(api: Api, name: str, now: float, network_ready: bool = True) -> None:
    """A kubelet status update, heartbeat now: Ready, or NotReady for want of a network; the lifecycle
    controller's unreachable taints go, its not-ready taint only once the Node is Ready."""
    node = api.get(f"/api/v1/nodes/{name}")
    old = {c["type"]: c for c in (node.get("status") or {}).get("conditions") or []}
    conds = []
    for cond in _conditions(now, network_ready):
        before = old.get(cond["type"])
        if before and before.get("status") == cond["status"]:
            cond["lastTransitionTime"] = before.get("lastTransitionTime", cond["lastTransitionTime"])
        conds.append(cond)
    api.patch(f"/api/v1/nodes/{name}/status", {"status": {"conditions": conds}})
    taints = (node.get("spec") or {}).get("taints") or []
    lifted = (UNREACHABLE, NOT_READY) if network_ready else (UNREACHABLE,)
    kept = [t for t in taints if t.get("key") not in lifted]
    if not network_ready and not any(t.get("key") == NOT_READY for t in kept):
        kept.append({"key": NOT_READY, "effect": "NoSchedule"})  # TaintNodesByCondition while Ready != True
    if kept != taints:
        # the node lifecycle controller lifts its taints once the node is Ready
        api.patch(f"/api/v1/nodes/{name}", {"spec": {"taints": kept or None}}, content_type=MERGE)


def renew_lease(api: Api, name: str, now: float) -> None:
    path = f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{name}"
    spec = {"holderIdentity": name, "leaseDurationSeconds": LEASE_DURATION, "renewTime": micro_ts(now)}
    if api.get_or_none(path) is None:
        node = api.get(f"/api/v1/nodes/{name}")
        owner = {"apiVersion": "v1", "kind": "Node", "name": name, "uid": node["metadata"]["uid"]}
        api.create(
            "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
            {"metadata": {"name": name, "namespace": "kube-node-lease", "ownerReferences": [owner]}, "spec": spec},
        )
        return
    api.patch(path, {"spec": spec}, content_type=MERGE)


def mark_unknown(api: Api, name: str, now: float) -> bool:
    """The node lifecycle controller after the grace period: conditions Unknown, unreachable taints (True: changed)."""
    node = api.get_or_none(f"/api/v1/nodes/{name}")
    if node is None:
        return False  # deleted (the collection deletes Nodes, as Cluster API does)
    old = (node.get("status") or {}).get("conditions") or []
    present = (node.get("spec") or {}).get("taints") or []
    tainted = {(t.get("key"), t.get("effect")) for t in present} >= {
        (UNREACHABLE, "NoSchedule"),
        (UNREACHABLE, "NoExecute"),
    }
    if old and all(c.get("status") == "Unknown" for c in old):
        if tainted:
            return False
        # the status write went through but the taint write did not (an API error between them): taint now
        _taint_unreachable(api, name, present, now)
        return True
    conds = []
    for c in old:
        c = dict(c)
        if c.get("status") != "Unknown":
            c.update(status="Unknown", lastTransitionTime=ts(now))
        c.update(reason="NodeStatusUnknown", message="Kubelet stopped posting node status.")
        conds.append(c)
    api.patch(f"/api/v1/nodes/{name}/status", {"status": {"conditions": conds}})
    _taint_unreachable(api, name, present, now)
    return True


def _taint_unreachable(api: Api, name: str, present: list[dict], now: float) -> None:
    taints = [t for t in present if t.get("key") not in (UNREACHABLE, NOT_READY)]
    taints += [
        {"key": UNREACHABLE, "effect": "NoSchedule"},
        {"key": UNREACHABLE, "effect": "NoExecute", "timeAdded": ts(now)},
    ]
    api.patch(f"/api/v1/nodes/{name}", {"spec": {"taints": taints}}, content_type=MERGE)
