"""The Metal3 floor of ``make bench``: what a plain script needs to do to get the same cluster up.

The same Ironic work as the collection (create node + port, manage, provide, deploy with the same
instance_info and the same config drives), and the same boot: the node simulator boots every deployed
node as it boots ours (cloud-init, ``kubeadm init`` / ``join``, a kubelet), so the floor also does the one
thing a join needs from outside and a cluster needs to be Ready - what CABPK and a ClusterResourceSet do:

1. every node is registered, managed and provided at once (instance_info set);
2. the control-plane node (the config drive with the InitConfiguration) is deployed as soon as it is
   available;
3. once the control plane is initialized - kubeadm init has uploaded ``kube-system/kubeadm-config``, KCP's rule,
   before which Cluster API makes no join data - the joins' bootstrap-token Secret and the CNI manifest are
   written there;
4. every worker node is deployed once it is available and the token exists;
5. it ends when every node is active and its Node is Ready.

Its deprovision undeploys and deletes the workers' nodes at once, then the control plane's (Cluster API's order).

Every input is read before the clock starts: the drives, instance_info and the admin kubeconfig the
collection stored for the same cluster, the CNI manifest.  Ironic's API may reset a connection when many
nodes are created at once (seen at 50): each call is retried on a connection failure, as the collection
retries it.
"""

from __future__ import annotations

import base64
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import yaml

INTERFACES = ("driver", "boot_interface", "deploy_interface", "management_interface", "power_interface",
              "inspect_interface", "vendor_interface", "network_interface")  # fmt: skip


def _retry(fn, *args, attempts: int = 5, **kwargs):
    from keystoneauth1.exceptions import ConnectionError as ConnectFailed
    from openstack.exceptions import HttpException

    for attempt in range(attempts):
        try:
            return fn(*args, **kwargs)
        except (ConnectFailed, HttpException) as exc:
            status = getattr(exc, "status_code", None)
            if attempt == attempts - 1 or (status is not None and status < 500 and status != 409):
                raise
            time.sleep(0.2 * 2**attempt)
    return None


def _is_init(drive: dict) -> bool:
    return "InitConfiguration" in (drive.get("user_data") or "")


def join_token(drive: dict) -> str:
    """The bootstrap token of a join's user data, as kubeadm on the host reads it."""
    from lab.nodesim import cloudinit, kubeadm

    rendered = cloudinit.render(drive["user_data"], drive.get("meta_data") or {}, drive.get("network_data"))
    boot = kubeadm.bootstrap(cloudinit.parse(rendered), (drive.get("meta_data") or {}).get("local-hostname"))
    if boot is None or not boot.token:
        raise SystemExit("floor: a join's user data has no bootstrap token")
    return boot.token


def token_secret(token: str) -> dict:
    """The Secret CABPK writes into the workload cluster for a join token."""
    token_id, _, secret = token.partition(".")
    expiration = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600))
    return {
        "apiVersion": "v1", "kind": "Secret", "type": "bootstrap.kubernetes.io/token",
        "metadata": {"name": f"bootstrap-token-{token_id}", "namespace": "kube-system"},
        "stringData": {"token-id": token_id, "token-secret": secret, "expiration": expiration,
                       "usage-bootstrap-authentication": "true", "usage-bootstrap-signing": "true",
                       "auth-extra-groups": "system:bootstrappers:kubeadm:default-node-token"},
    }  # fmt: skip


def admin_kubeconfig(store, namespace: str, cluster: str) -> dict:
    secret = store.get("Secret", f"{cluster}-kubeconfig", namespace)
    return yaml.safe_load(base64.b64decode(secret["data"]["value"]))


def _workload_api(kubeconfig: dict):
    import kubernetes

    return kubernetes.config.new_client_from_config_dict(kubeconfig)


def _ready_nodes(core) -> int:
    count = 0
    for node in core.list_node(_request_timeout=5).items:
        if any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or []):
            count += 1
    return count


def _wait_api(core, t0: float, deadline: float, errors: list) -> None:
    """Until kubeadm init on the control-plane host has uploaded kube-system/kubeadm-config: what KubeadmControlPlane
    reads as "control plane initialized", before which CABPK makes no join data (so no worker is deployed)."""
    last = None
    while not errors:
        try:
            core.read_namespaced_config_map("kubeadm-config", "kube-system", _request_timeout=2)
            return
        except Exception as exc:  # noqa: BLE001 - not up yet
            if type(exc) is not type(last):
                print(f"  floor: workload API: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}", flush=True)
            last = exc
            if time.perf_counter() - t0 > deadline:
                raise SystemExit(f"floor: the workload API never answered: {last}") from None
            time.sleep(0.25)


def _until_created(create, t0: float, deadline: float) -> None:
    """A create the API server may refuse for a moment after it started: kube-system is made by its own
    system-namespaces controller shortly after it serves (404 until then), and it may still restart then."""
    import kubernetes
    import urllib3

    while True:
        try:
            create()
            return
        except kubernetes.client.exceptions.ApiException as exc:
            if exc.status == 409:
                return
            if exc.status not in (404, 500, 503) or time.perf_counter() - t0 > deadline:
                raise
        except urllib3.exceptions.HTTPError:  # the API server restarting under kubeadm: connection refused
            if time.perf_counter() - t0 > deadline:
                raise
        except kubernetes.utils.FailToCreateError as exc:
            statuses = {getattr(e, "status", None) for e in exc.api_exceptions}
            if statuses <= {409}:
                return
            if not statuses <= {404, 409, 500, 503} or time.perf_counter() - t0 > deadline:
                raise
        time.sleep(0.25)


def provision(conn, template_node, drives: list, infos: list, tag: str, kubeconfig: dict, cni: list[dict],
              mac_prefix: str, deadline: float = 900) -> tuple[float, list]:  # fmt: skip
    """Steps 1-5 above, every node on its own thread; (seconds, node ids)."""
    import kubernetes

    bm = conn.baremetal
    attrs = {k: getattr(template_node, k) for k in INTERFACES}
    attrs = {k: v for k, v in attrs.items() if v}
    tokens = sorted({join_token(d) for d in drives if not _is_init(d)})  # CABPK: a token per KubeadmConfig
    joins_may_start = threading.Event()
    errors: list[BaseException] = []

    def one(i: int) -> str:
        node = _retry(bm.create_node, name=f"floor-{tag}-{i}", driver_info=dict(template_node.driver_info or {}),
                      **attrs)  # fmt: skip
        _retry(bm.create_port, node_uuid=node.id, address=f"{mac_prefix}:{i:02x}")
        _retry(bm.set_node_provision_state, node, "manage", wait=True, timeout=600)
        _retry(bm.patch_node, node, [{"op": "add", "path": "/instance_info", "value": infos[i]}])
        _retry(bm.set_node_provision_state, node, "provide", wait=True, timeout=600)
        if not _is_init(drives[i]):
            joins_may_start.wait()
            if errors:
                return node.id
        _retry(bm.set_node_provision_state, node, "active", config_drive=drives[i], wait=True, timeout=600)
        return node.id

    def guarded(i: int) -> str | None:
        try:
            return one(i)
        except BaseException as exc:
            errors.append(exc)
            raise

    api = _workload_api(kubeconfig)
    core = kubernetes.client.CoreV1Api(api)
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=len(drives)) as pool:
        futures = [pool.submit(guarded, i) for i in range(len(drives))]
        try:
            _wait_api(core, t0, deadline, errors)
            for token in tokens:
                _until_created(
                    lambda t=token: core.create_namespaced_secret("kube-system", token_secret(t)), t0, deadline
                )
            _until_created(lambda: kubernetes.utils.create_from_yaml(api, yaml_objects=cni), t0, deadline)
        except BaseException as exc:
            errors.append(exc)  # the workers waiting for the token stop
            raise
        finally:
            joins_may_start.set()
        ids = [f.result() for f in futures]
    while _ready_nodes(core) < len(drives):
        if time.perf_counter() - t0 > deadline:
            raise SystemExit(f"floor: {len(drives) - _ready_nodes(core)} Nodes not Ready at the deadline")
        time.sleep(0.25)
    took = time.perf_counter() - t0
    api.close()
    return took, ids


def is_control_plane(drive: dict) -> bool:
    """The config drive of a control-plane node (kubeadm init, or a join with a controlPlane section)."""
    user_data = drive.get("user_data") or ""
    return _is_init(drive) or "controlPlane:" in user_data


def deprovision(conn, ids: list, drives: list) -> float:
    """Undeploy and delete the worker nodes at once, then the control-plane nodes: Cluster API's order (the
    workers' MachineDeployments first, then the control plane), which the collection follows too."""
    bm = conn.baremetal

    def one(node_id):
        _retry(bm.set_node_provision_state, node_id, "deleted", wait=True, timeout=600)
        _retry(bm.delete_node, node_id)

    workers = [i for i, d in zip(ids, drives, strict=True) if not is_control_plane(d)]
    control_plane = [i for i, d in zip(ids, drives, strict=True) if is_control_plane(d)]
    t0 = time.perf_counter()
    for group in (workers, control_plane):
        with ThreadPoolExecutor(max_workers=max(1, len(group))) as pool:
            list(pool.map(one, group))
    return time.perf_counter() - t0
