"""KubeadmConfig -> bootstrap data Secret, the flow of CAPI's kubeadm bootstrap provider (CABPK).

``reconcile_config`` is one reconcile step of one KubeadmConfig:

1. wait for the owning Machine, its Cluster and ``infrastructureProvisioned``;
2. cluster CAs (``<cluster>-ca``, ``-etcd``, ``-proxy``, ``-sa``) and the
   ``<cluster>-kubeconfig`` Secret exist once per cluster (existing ones are reused);
3. control plane not initialised: the first control-plane Machine takes the
   ``<cluster>-lock`` ConfigMap and gets ``kubeadm init`` data; everyone else waits;
4. initialised: ``kubeadm join`` data, with the CA key pairs for control-plane
   machines and a bootstrap token (created in the workload cluster) plus the CA hash;
5. the Secret ``<config name>`` (keys ``value`` and ``format``), owned by the
   KubeadmConfig; ``status.dataSecretName`` and ``status.initialization.dataSecretCreated``.

Data is never regenerated; only the token's expiry is extended while the
Machine has no nodeRef (CABPK's refreshBootstrapTokenIfNeeded), which slow
bare-metal provisioning depends on.
"""

from __future__ import annotations

import base64
import copy
import datetime
import json
import string
from typing import Protocol

from ansible_collections.baremetal.capi.plugins.module_utils import runner
from ansible_collections.baremetal.capi.plugins.module_utils.bootstrap import certificates, cloudinit, pki
from ansible_collections.baremetal.capi.plugins.module_utils.errors import AlreadyExists, Invalid, NotFound, Requeue
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta, names


def user_data_template(text: str | None):
    """The user's own user data (a ``string.Template``) as the renderer ``reconcile_config`` takes, or None.

    ``$kubeadm_user_data`` is the cloud-config CABPK would have written; ``$machine``, ``$cluster``,
    ``$namespace`` and ``$role`` (init, join-control-plane, join). ``safe_substitute`` leaves cloud-init's own
    ``{{ }}`` and any other ``$`` untouched.
    """
    if not text:
        return None

    def render(*, cluster, machine, config, kubeadm_user_data, role):
        return string.Template(text).safe_substitute(
            kubeadm_user_data=kubeadm_user_data,
            machine=machine["metadata"]["name"],
            cluster=cluster["metadata"]["name"],
            namespace=cluster["metadata"].get("namespace", "default"),
            role=role,
        )

    return render


DEFAULT_TOKEN_TTL = 15 * 60
CERTS_DIR = "/etc/kubernetes/pki"
INIT_CONFIG_PATH = "/run/kubeadm/kubeadm.yaml"
JOIN_CONFIG_PATH = "/run/kubeadm/kubeadm-join-config.yaml"


class TokenWriter(Protocol):
    """Writes bootstrap-token Secrets into the workload cluster's kube-system."""

    def create(self, secret: dict) -> None:
        """Creates the bootstrap-token Secret (one that already exists is left as it is)."""

    def expiration(self, token_id: str) -> str | None:
        """The token's expiration (RFC 3339), or None when its Secret or its expiration is missing."""

    def set_expiration(self, token_id: str, expiration: str) -> None:
        """Moves the token's expiration (CABPK refreshes a token until its Machine has joined)."""


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _unb64(text: str) -> str:
    return base64.b64decode(text).decode()


def _version_tuple(version: str) -> tuple[int, int]:
    parts = version.lstrip("v").split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        raise Invalid(f"invalid Kubernetes version {version!r}", field="spec.version") from None


def kubeadm_api_version(k8s_version: str) -> str:
    """v1beta3 for 1.22 <= v < 1.31, v1beta4 from 1.31 (CABPK pkg/types/utils.go)."""
    return "kubeadm.k8s.io/v1beta4" if _version_tuple(k8s_version) >= (1, 31) else "kubeadm.k8s.io/v1beta3"


# --- cluster secrets ---------------------------------------------------------------


def _cluster_secret(cluster: dict, name: str, data: dict, owner: dict | None) -> dict:
    secret = meta.new("Secret", name, meta.namespace(cluster), labels={names.CLUSTER_NAME_LABEL: meta.name(cluster)})
    secret["type"] = names.CLUSTER_SECRET_TYPE
    secret["data"] = {k: _b64(v) for k, v in data.items()}
    meta.set_owner(secret, owner or cluster, controller=True)
    return secret


def ensure_certificates(store, cluster: dict, owner: dict | None = None, check_mode: bool = False) -> tuple[dict, bool]:
    """The cluster's four CA Secrets, created when missing; returns ({suffix: {crt, key}}, changed)."""
    out, changed = {}, False
    ns, cname = meta.namespace(cluster), meta.name(cluster)
    for suffix in pki.CA_SECRETS:
        name = f"{cname}-{suffix}"
        try:
            secret = store.get("Secret", name, ns)
            data = secret.get("data") or {}
            if "tls.crt" not in data or "tls.key" not in data:
                raise Invalid("must hold tls.crt and tls.key", obj=f"Secret {ns}/{name}", field="data")
            out[suffix] = {"crt": _unb64(data["tls.crt"]), "key": _unb64(data["tls.key"])}
            continue
        except NotFound:
            pass
        crt, key = pki.new_service_account_keys() if suffix == "sa" else pki.new_ca()
        out[suffix] = {"crt": crt, "key": key}
        changed = True
        if check_mode:
            continue
        try:
            store.create(_cluster_secret(cluster, name, {"tls.crt": crt, "tls.key": key}, owner))
        except AlreadyExists:  # another runner made it first: use theirs
            data = store.get("Secret", name, ns)["data"]
            out[suffix] = {"crt": _unb64(data["tls.crt"]), "key": _unb64(data["tls.key"])}
    return out, changed


def endpoint(cluster: dict) -> tuple[str, int] | None:
    ep = (cluster.get("spec") or {}).get("controlPlaneEndpoint") or {}
    if ep.get("host") and ep.get("port"):
        return ep["host"], int(ep["port"])
    return None


def ensure_kubeconfig(store, cluster: dict, ca: dict, owner: dict | None = None, check_mode: bool = False) -> bool:
    """``<cluster>-kubeconfig`` (key ``value``), made once the endpoint is known. True if created."""
    ns, cname = meta.namespace(cluster), meta.name(cluster)
    name = cname + names.KUBECONFIG_SECRET_SUFFIX
    try:
        store.get("Secret", name, ns)
        return False
    except NotFound:
        pass
    ep = endpoint(cluster)
    if ep is None:
        raise Requeue(f"Cluster {ns}/{cname} has no spec.controlPlaneEndpoint yet", after=10)
    if check_mode:
        return True
    value = pki.admin_kubeconfig(cname, f"https://{ep[0]}:{ep[1]}", ca["crt"], ca["key"])
    try:
        store.create(_cluster_secret(cluster, name, {"value": value}, owner))
    except AlreadyExists:
        return False
    return True


# --- rendering ---------------------------------------------------------------------


def _extra_args(args, api_version: str):
    """kubeletExtraArgs: a list of {name, value} for v1beta4, a map for v1beta3."""
    if not args:
        return None
    pairs = [(a["name"], a["value"]) for a in args] if isinstance(args, list) else list(args.items())
    if api_version.endswith("v1beta4"):
        return [{"name": n, "value": v} for n, v in pairs]
    return dict(pairs)


def _node_registration(spec: dict | None, api_version: str, extra_taints=()) -> dict:
    reg = copy.deepcopy(spec or {})
    args = _extra_args(reg.pop("kubeletExtraArgs", None), api_version)
    if args:
        reg["kubeletExtraArgs"] = args
    taints = list(reg.get("taints") or []) + list(extra_taints)
    reg["taints"] = taints or None
    return reg


def _ca_files(certs: dict, include_keys: bool = True) -> list[dict]:
    files = []
    for suffix, (crt_path, key_path) in pki.CA_SECRETS.items():
        files.append(cloudinit.write_file(f"{CERTS_DIR}/{crt_path}", certs[suffix]["crt"], "0640"))
        if include_keys:
            files.append(cloudinit.write_file(f"{CERTS_DIR}/{key_path}", certs[suffix]["key"], "0600"))
    return files


def cluster_configuration(cluster: dict, spec: dict, version: str, api_version: str) -> dict:
    """ClusterConfiguration with what CABPK injects (clusterName, version, networking, endpoint)."""
    cc = copy.deepcopy(spec.get("clusterConfiguration") or {})
    for key in ("apiServer", "controllerManager", "dns", "etcd", "scheduler"):
        cc.setdefault(key, {})
    if api_version.endswith("v1beta4"):
        cc.setdefault("proxy", {})
    cc["apiVersion"] = api_version
    cc["kind"] = "ClusterConfiguration"
    cc["clusterName"] = meta.name(cluster)
    cc["kubernetesVersion"] = version
    net = (cluster.get("spec") or {}).get("clusterNetwork") or {}
    networking = dict(cc.get("networking") or {})
    if net.get("serviceDomain"):
        networking["dnsDomain"] = net["serviceDomain"]
    if (net.get("pods") or {}).get("cidrBlocks"):
        networking["podSubnet"] = ",".join(net["pods"]["cidrBlocks"])
    if (net.get("services") or {}).get("cidrBlocks"):
        networking["serviceSubnet"] = ",".join(net["services"]["cidrBlocks"])
    cc["networking"] = networking
    ep = endpoint(cluster)
    if ep and not cc.get("controlPlaneEndpoint"):
        cc["controlPlaneEndpoint"] = f"{ep[0]}:{ep[1]}"
    return cc


def _kubeadm_command(verb: str, path: str, verbosity) -> str:
    v = f" --v {verbosity}" if verbosity is not None else ""
    return f"kubeadm {verb} --config {path}{v}  && {cloudinit.SENTINEL}"


def _document(spec: dict, files: list[dict], command: str) -> str:
    runcmd = list(spec.get("preKubeadmCommands") or []) + [command] + list(spec.get("postKubeadmCommands") or [])
    user_files = []
    for f in spec.get("files") or []:
        if f.get("contentFrom"):
            raise Invalid("contentFrom must be resolved before rendering", field="spec.files")
        user_files.append({k: v for k, v in f.items() if v is not None})
    disks, filesystems = _disk_setup(spec.get("diskSetup"))
    return cloudinit.document(
        files[:-1] + user_files + files[-1:],
        runcmd,
        bootcmd=spec.get("bootCommands"),
        users=spec.get("users"),
        ntp=spec.get("ntp"),
        disk_setup=disks,
        fs_setup=filesystems,
        mounts=spec.get("mounts"),
    )


def _disk_setup(disk_setup: dict | None) -> tuple[dict | None, list | None]:
    """CABPK's diskSetup as cloud-init's ``disk_setup`` (by device) and ``fs_setup`` (its cloud-config template)."""
    if not disk_setup:
        return None, None
    disks = {}
    for part in disk_setup.get("partitions") or []:
        entry = {}
        if part.get("tableType"):
            entry["table_type"] = part["tableType"]
        entry["layout"] = part.get("layout", False)
        if part.get("overwrite"):
            entry["overwrite"] = part["overwrite"]
        disks[part["device"]] = entry
    filesystems = []
    for fs in disk_setup.get("filesystems") or []:
        entry = {"label": fs.get("label"), "filesystem": fs.get("filesystem"), "device": fs.get("device")}
        for key, target in (("partition", "partition"), ("overwrite", "overwrite"), ("replaceFS", "replace_fs")):
            if fs.get(key):
                entry[target] = fs[key]
        if fs.get("extraOpts"):
            entry["extra_opts"] = list(fs["extraOpts"])
        filesystems.append(entry)
    return disks or None, filesystems or None


def render_init(cluster: dict, spec: dict, version: str, certs: dict) -> str:
    """Cloud-config for ``kubeadm init`` on the first control-plane machine."""
    api = kubeadm_api_version(version)
    init = copy.deepcopy(spec.get("initConfiguration") or {})
    init["apiVersion"] = api
    init["kind"] = "InitConfiguration"
    init.setdefault("localAPIEndpoint", {})
    init["nodeRegistration"] = _node_registration(init.get("nodeRegistration"), api)
    body = cloudinit.kubeadm_yaml(cluster_configuration(cluster, spec, version, api), init)
    files = _ca_files(certs) + [cloudinit.write_file(INIT_CONFIG_PATH, body)]
    return _document(spec, files, _kubeadm_command("init", INIT_CONFIG_PATH, spec.get("verbosity")))


def render_join(cluster: dict, spec: dict, version: str, certs: dict, token: str, control_plane: bool) -> str:
    """Cloud-config for ``kubeadm join``: CA key pairs for control-plane machines, the token for all."""
    api = kubeadm_api_version(version)
    ep = endpoint(cluster)
    join = copy.deepcopy(spec.get("joinConfiguration") or {})
    join["apiVersion"] = api
    join["kind"] = "JoinConfiguration"
    discovery = join.setdefault("discovery", {})
    bt = discovery.setdefault("bootstrapToken", {})
    bt.setdefault("apiServerEndpoint", f"{ep[0]}:{ep[1]}")
    hashes = pki.ca_cert_hashes(certs["ca"]["crt"])
    if hashes:
        bt.setdefault("caCertHashes", hashes)
    else:
        bt["unsafeSkipCAVerification"] = True
    bt["token"] = token
    extra = [] if control_plane else [{"key": names.NODE_UNINITIALIZED_TAINT, "effect": "NoSchedule"}]
    join["nodeRegistration"] = _node_registration(join.get("nodeRegistration"), api, extra)
    if control_plane:
        join.setdefault("controlPlane", {}).setdefault("localAPIEndpoint", {})
        body = cloudinit.kubeadm_yaml(join, leading_separator=False)
        files = _ca_files(certs)
    else:
        join.pop("controlPlane", None)
        body = cloudinit.kubeadm_yaml(join)
        files = []
    files.append(cloudinit.write_file(JOIN_CONFIG_PATH, body))
    return _document(spec, files, _kubeadm_command("join", JOIN_CONFIG_PATH, spec.get("verbosity")))


# --- the flow --------------------------------------------------------------------


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def _rfc3339(t: datetime.datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def owner_machine(store, config: dict) -> dict:
    ns = meta.namespace(config)
    refs = meta.owners_of_kind(config, "Machine")
    if not refs:
        raise Requeue(f"KubeadmConfig {ns}/{meta.name(config)} has no owner Machine yet", after=5)
    return store.get("Machine", refs[0]["name"], ns)


def is_control_plane(machine: dict) -> bool:
    return names.CONTROL_PLANE_LABEL in meta.labels(machine)


def control_plane_initialized(cluster: dict) -> bool:
    return bool(((cluster.get("status") or {}).get("initialization") or {}).get("controlPlaneInitialized"))


def _take_init_lock(store, cluster: dict, machine: dict, check_mode: bool) -> bool:
    """The ``<cluster>-lock`` ConfigMap CABPK uses so that only one machine runs kubeadm init."""
    ns, lock_name = meta.namespace(cluster), f"{meta.name(cluster)}-lock"
    info = json.dumps({"machineName": meta.name(machine)})
    try:
        lock = store.get("ConfigMap", lock_name, ns)
        holder = json.loads((lock.get("data") or {}).get("lock-information", "{}")).get("machineName")
        if holder == meta.name(machine):
            return True
        try:
            store.get("Machine", holder, ns)
            return False
        except NotFound:
            # CABPK's init mutex: the holder is gone (a first control plane remediated before it initialized)
            if check_mode:
                return True
            try:
                store.delete("ConfigMap", lock_name, ns)
            except NotFound:
                pass
    except NotFound:
        pass
    if check_mode:
        return True
    cm = meta.new("ConfigMap", lock_name, ns, labels={names.CLUSTER_NAME_LABEL: meta.name(cluster)})
    cm["data"] = {"lock-information": info}
    meta.set_owner(cm, cluster)
    try:
        store.create(cm)
        return True
    except AlreadyExists:
        return False


def release_init_lock(store, cluster: dict) -> bool:
    try:
        store.delete("ConfigMap", f"{meta.name(cluster)}-lock", meta.namespace(cluster))
        return True
    except NotFound:
        return False


def reconcile_config(
    store,
    config: dict,
    *,
    tokens: TokenWriter | None = None,
    token_ttl: int = DEFAULT_TOKEN_TTL,
    user_data_template=None,
    check_mode: bool = False,
    now=_now,
    expiry_probe=None,
) -> runner.Step:
    """One CABPK reconcile of ``config`` (a KubeadmConfig dict as stored).

    ``expiry_probe(host, port)``: reads a machine's API server certificate expiry (bootstrap.certificates).
    """
    ns, cfg_name = meta.namespace(config), meta.name(config)
    where = f"KubeadmConfig {ns}/{cfg_name}"
    fmt = (config.get("spec") or {}).get("format") or "cloud-config"
    if fmt != "cloud-config":
        # CABPK would write an Ignition v3 config; this renderer writes cloud-config only, and
        # cloud-config labelled "ignition" would not boot an Ignition host
        raise Invalid(
            f"format {fmt!r} is not supported: the collection renders cloud-config bootstrap data only",
            obj=where,
            field="spec.format",
        )
    machine = owner_machine(store, config)
    cluster_name = (machine.get("spec") or {}).get("clusterName")
    if not cluster_name:
        raise Invalid("clusterName is required", obj=f"Machine {ns}/{meta.name(machine)}", field="spec.clusterName")
    cluster = store.get("Cluster", cluster_name, ns)
    status = config.get("status") or {}
    # KCP: the admin kubeconfig's client certificate is renewed when less than six months remain
    renewed = certificates.renew_kubeconfig(store, cluster, now=now(), check=check_mode)

    if status.get("dataSecretName"):
        changed = renewed
        if tokens and not (machine.get("status") or {}).get("nodeRef"):
            changed |= _refresh_token(config, tokens, token_ttl, now(), check_mode)
        changed |= certificates.annotate_certificates_expiry(
            store, config, machine, cluster, check=check_mode, probe=expiry_probe
        )
        return runner.Step(
            done=True,
            changed=changed,
            message="bootstrap data ready",
            data={"dataSecretName": status["dataSecretName"]},
        )

    init = (cluster.get("status") or {}).get("initialization") or {}
    if not init.get("infrastructureProvisioned"):
        raise Requeue(f"waiting for Cluster {ns}/{cluster_name} infrastructure to be provisioned", after=5)
    version = (machine.get("spec") or {}).get("version")
    if not version:
        raise Invalid("version is required", obj=f"Machine {ns}/{meta.name(machine)}", field="spec.version")
    spec = copy.deepcopy(config.get("spec") or {})
    certs, changed = ensure_certificates(store, cluster, check_mode=check_mode)
    changed |= ensure_kubeconfig(store, cluster, certs["ca"], check_mode=check_mode) or renewed
    cp = is_control_plane(machine)

    if not control_plane_initialized(cluster):
        if not cp:
            raise Requeue("waiting for the control plane to be initialized", after=30)
        if not _take_init_lock(store, cluster, machine, check_mode):
            raise Requeue(
                "waiting for the control plane to be initialized (another machine holds the init lock)", after=10
            )
        kind = "init"
        value = render_init(cluster, spec, version, certs)
    else:
        if endpoint(cluster) is None:
            raise Requeue(f"Cluster {ns}/{cluster_name} has no spec.controlPlaneEndpoint yet", after=10)
        if tokens is None:
            raise Requeue("waiting for the workload cluster API to create a bootstrap token", after=10)
        bt = ((spec.get("joinConfiguration") or {}).get("discovery") or {}).get("bootstrapToken") or {}
        token = bt.get("token") or pki.new_token()
        if not check_mode and not bt.get("token"):
            tokens.create(pki.token_secret(token, token_ttl, now()))
            # CABPK saves the discovery it filled in into the spec.
            spec.setdefault("joinConfiguration", {}).setdefault("discovery", {}).setdefault("bootstrapToken", {})[
                "token"
            ] = token
        kind = "join-control-plane" if cp else "join"
        value = render_join(cluster, spec, version, certs, token, control_plane=cp)

    if user_data_template is not None:
        value = user_data_template(cluster=cluster, machine=machine, config=config, kubeadm_user_data=value, role=kind)

    fmt = spec.get("format") or "cloud-config"
    if check_mode:
        return runner.Step(
            done=True,
            changed=True,
            message=f"would render {kind} bootstrap data",
            data={"dataSecretName": cfg_name, "bootstrap": kind},
        )
    if spec != (config.get("spec") or {}):
        config["spec"] = spec
        config = store.update(config)
    secret = _cluster_secret(cluster, cfg_name, {"value": value, "format": fmt}, None)
    secret["metadata"]["ownerReferences"] = [meta.owner_reference(config, controller=True)]
    try:
        store.create(secret)
    except AlreadyExists:
        pass  # CABPK: the data is never regenerated
    config = store.get("KubeadmConfig", cfg_name, ns)
    st = config.setdefault("status", {})
    st["dataSecretName"] = cfg_name
    st.setdefault("initialization", {})["dataSecretCreated"] = True
    store.update_status(config)
    return runner.Step(
        done=True,
        changed=True,
        message=f"{kind} bootstrap data rendered",
        data={"dataSecretName": cfg_name, "bootstrap": kind, "where": where},
    )


def _refresh_token(config: dict, tokens: TokenWriter, ttl: int, now: datetime.datetime, check_mode: bool) -> bool:
    """Extend the token to now+TTL when less than 5/6 of the TTL is left (CABPK's refresh rule)."""
    bt = (((config.get("spec") or {}).get("joinConfiguration") or {}).get("discovery") or {}).get("bootstrapToken")
    token = (bt or {}).get("token")
    if not token:
        return False
    token_id = token.split(".")[0]
    current = tokens.expiration(token_id)
    if current:
        expires = datetime.datetime.strptime(current, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
        if (expires - now).total_seconds() >= ttl * 5 / 6:
            return False
    if not check_mode:
        if current is None:
            tokens.create(pki.token_secret(token, ttl, now))
        else:
            tokens.set_expiration(token_id, _rfc3339(now + datetime.timedelta(seconds=ttl)))
    return True
