# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""One cluster description (the ``capi_cluster`` variable) -> the Cluster API objects that make it.

docs/cluster-description.md documents the description; the ``capi_*`` filters (plugins/filter) are thin
wrappers of this file. Keeping the mapping in Python keeps it testable and keeps cloud-init's own
``{{ ds.meta_data.* }}`` away from Ansible's templating (a filter's output is never templated again).

- ``objects(desc, part)``: ``part`` is ``cluster`` (Cluster, MaasCluster), ``bootstrap``
  (KubeadmConfigTemplates), ``machines`` (infrastructure machine templates, KubeadmControlPlane,
  MachineDeployments);
- ``names(desc)``: the names the roles refer to; ``scaled``: the description with new replica counts.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
from collections.abc import Mapping, Sequence

from ansible_collections.baremetal.capi.plugins.module_utils.capi import description
from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.store.base import default_sqlite_path

CAPI = "cluster.x-k8s.io"
INFRA = "infrastructure.cluster.x-k8s.io"
CONTROLPLANE = "controlplane.cluster.x-k8s.io"
BOOTSTRAP = "bootstrap.cluster.x-k8s.io"
CLUSTER_NAME_LABEL = "cluster.x-k8s.io/cluster-name"
DEFAULT_VERSION = "v1.34.4"

# CAPM3's cluster templates: the host's uuid as a Node label and the providerID from the host's meta_data,
# both rendered by cloud-init on the host (the data carries "## template: jinja").
METAL3_NODE_NAME = "{{ ds.meta_data.name }}"
METAL3_NODE_LABELS = "metal3.io/uuid={{ ds.meta_data.uuid }}"
METAL3_PROVIDER_ID = "metal3://{{ ds.meta_data.providerid }}"

_INFRA = {
    "metal3": ("Metal3Cluster", "Metal3MachineTemplate", "v1beta2"),
    "maas": ("MaasCluster", "MaasMachineTemplate", "v1beta1"),
}


class DescriptionError(ValueError):
    pass


def plain(value):
    """Plain dicts, lists and strings (Ansible hands lazily templated containers, which must not be deep-copied)."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (str, bytes)):
        return str(value)
    if isinstance(value, Sequence):
        return [plain(v) for v in value]
    return value


def _version(desc: dict) -> str:
    v = str(desc.get("kubernetes_version") or DEFAULT_VERSION)
    return v if v.startswith("v") else "v" + v


def _provider(desc: dict) -> str:
    provider = desc.get("provider")
    if provider not in _INFRA:
        raise DescriptionError(f"capi_cluster.provider: must be metal3 or maas, got {provider!r}")
    return provider


def _meta(kind: str, api: str, name: str, desc: dict, labels: dict | None = None) -> dict:
    md = {"name": name, "namespace": desc.get("namespace") or "default"}
    md["labels"] = {CLUSTER_NAME_LABEL: desc["name"], **(labels or {})}
    return {"apiVersion": api, "kind": kind, "metadata": md}


def _ref(obj: dict) -> dict:
    return {"apiGroup": obj["apiVersion"].rpartition("/")[0], "kind": obj["kind"], "name": obj["metadata"]["name"]}


def _hash(spec) -> str:
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:6]


def names(desc: dict) -> dict:
    """The names of what the description makes; worker pools as they become MachineDeployments."""
    desc = plain(desc)
    _checked(desc, description.check_types)
    cname = desc["name"]
    deployments = []
    for pool in desc.get("workers") or []:
        deployments += [d["name"] for d in _deployments_of(desc, pool)]
    cp_fds = list((desc.get("control_plane") or {}).get("failure_domains") or [])
    worker_fds = [fd for p in desc.get("workers") or [] for fd in p.get("failure_domains") or [] if fd not in cp_fds]
    fds = [{"name": fd, "controlPlane": True} for fd in cp_fds]
    fds += [{"name": fd, "controlPlane": False} for fd in dict.fromkeys(worker_fds)]
    return {
        "cluster": cname,
        "failure_domains": fds,
        "namespace": desc.get("namespace") or "default",
        "control_plane": f"{cname}-control-plane",
        "machine_deployments": deployments,
        "data_template": (desc.get("data_template") or {}).get("name") or f"{cname}-nodes",
        # with endpoint_via_maas_dns: the kubeconfig for the DNS record's address, beside the default store
        "maas_kubeconfig": os.path.join(
            os.path.dirname(default_sqlite_path()), f"{desc.get('namespace') or 'default'}-{cname}.kubeconfig"
        ),
    }


# --- kubeadm -------------------------------------------------------------------------------------------


def _kubelet_args(desc: dict, extra: dict | None) -> list[dict]:
    """kubeletExtraArgs as v1beta2's list: the provider's first, the description's merged in (node-labels joined)."""
    args: dict[str, str] = {}
    if _provider(desc) == "metal3":
        args["node-labels"] = METAL3_NODE_LABELS
        args["provider-id"] = METAL3_PROVIDER_ID
    kubeadm = desc.get("kubeadm") or {}
    for source in (kubeadm.get("kubelet_extra_args") or {}, extra or {}):
        for key, value in source.items():
            if key == "node-labels" and args.get(key):
                args[key] = f"{args[key]},{value}"
            else:
                args[key] = str(value)
    return [{"name": k, "value": v} for k, v in args.items()]


def _node_registration(desc: dict, extra_args: dict | None) -> dict:
    reg: dict = {}
    if _provider(desc) == "metal3":
        reg["name"] = METAL3_NODE_NAME
    args = _kubelet_args(desc, extra_args)
    if args:
        reg["kubeletExtraArgs"] = args
    return reg


def kubeadm_config_spec(desc: dict, *, control_plane: bool, pool: dict | None = None) -> dict:
    """A KubeadmConfigSpec: node registration, commands, files, users (CABPK injects the rest)."""
    kubeadm = desc.get("kubeadm") or {}
    extra = ((pool or desc.get("control_plane") or {}).get("kubelet_extra_args")) or None
    reg = _node_registration(desc, extra)
    spec: dict = {"joinConfiguration": {"nodeRegistration": copy.deepcopy(reg)}}
    if control_plane:
        spec["initConfiguration"] = {"nodeRegistration": copy.deepcopy(reg)}
    for key, field in (
        ("pre_commands", "preKubeadmCommands"),
        ("post_commands", "postKubeadmCommands"),
        ("files", "files"),
        ("users", "users"),
    ):
        extra = ((desc.get("control_plane") or {}).get("kubeadm") or {}).get(key) if control_plane else None
        if kubeadm.get(key) or extra:
            # the control plane's own entries after the shared ones (a VIP manifest, its preKubeadmCommands)
            spec[field] = copy.deepcopy(list(kubeadm.get(key) or []) + list(extra or []))
    if kubeadm.get("format"):
        spec["format"] = kubeadm["format"]
    return spec


# --- objects -------------------------------------------------------------------------------------------


def _cluster_objects(desc: dict) -> list[dict]:
    provider = _provider(desc)
    cname = desc["name"]
    infra_kind, _t, infra_version = _INFRA[provider]
    net = desc.get("cluster_network") or {}
    spec: dict = {
        "clusterNetwork": {
            "pods": {"cidrBlocks": list(net.get("pods") or ["192.168.0.0/16"])},
            "services": {"cidrBlocks": list(net.get("services") or ["10.128.0.0/12"])},
            "serviceDomain": net.get("service_domain") or "cluster.local",
        },
        "controlPlaneRef": {
            "apiGroup": CONTROLPLANE,
            "kind": "KubeadmControlPlane",
            "name": names(desc)["control_plane"],
        },
        "infrastructureRef": {"apiGroup": INFRA, "kind": infra_kind, "name": cname},
    }
    ep = desc.get("control_plane_endpoint") or {}
    if provider == "maas" and ep.get("host"):
        # CAPMAAS: a DNS name given by the user is the record's name; otherwise one is made up.
        spec["controlPlaneEndpoint"] = {"host": ep["host"], "port": int(ep.get("port") or 6443)}
    cluster = _meta("Cluster", f"{CAPI}/v1beta2", cname, desc)
    cluster["spec"] = spec
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": cluster["metadata"]["namespace"]}}
    out = [namespace, cluster]
    if provider == "maas":
        mc = _meta("MaasCluster", f"{INFRA}/{infra_version}", cname, desc)
        mc["spec"] = {"dnsDomain": desc.get("dns_domain") or "maas"}
        if desc.get("api_server_interface"):
            # CAPMAAS (spectrocloud-public): the control planes publish their address on this MAAS interface
            mc["spec"]["apiServerInterfaceName"] = desc["api_server_interface"]
        fds = sorted({fd for p in [desc.get("control_plane") or {}] for fd in p.get("failure_domains") or []})
        if fds:
            mc["spec"]["failureDomains"] = fds
        out.append(mc)
    return out


def _infra_template_spec(desc: dict, pool: dict) -> dict:
    if _provider(desc) == "metal3":
        spec: dict = {"dataTemplate": {"name": pool.get("data_template") or names(desc)["data_template"]}}
        if not pool.get("image"):
            raise DescriptionError(f"capi_cluster: pool {pool.get('name', 'control_plane')}: image is required")
        spec["image"] = copy.deepcopy(pool["image"])
        if "format" in spec["image"]:  # v1beta1's name; stored as diskFormat (model/convert.py)
            spec["image"].setdefault("diskFormat", spec["image"].pop("format"))
        if pool.get("host_selector"):
            spec["hostSelector"] = copy.deepcopy(pool["host_selector"])
        spec["automatedCleaningMode"] = pool.get("automated_cleaning_mode") or "metadata"
        return spec
    constraints = copy.deepcopy(pool.get("constraints") or {})
    spec = {"minCPU": constraints.pop("minCPU", 1), "minMemory": constraints.pop("minMemory", 1024)}
    spec["image"] = pool.get("image") or "ubuntu/jammy"
    spec.update(constraints)  # tags, resourcePool, deployInMemory: upstream's field names
    return spec


def _infra_template(desc: dict, pool_name: str, pool: dict) -> dict:
    _kind, tkind, version = _INFRA[_provider(desc)]
    spec = _infra_template_spec(desc, pool)
    # Templates are immutable upstream: a changed one is a new template (a content-hashed name).
    obj = _meta(tkind, f"{INFRA}/{version}", f"{desc['name']}-{pool_name}-{_hash(spec)}", desc)
    obj["spec"] = {"template": {"spec": spec}}
    return obj


def _config_template(desc: dict, pool: dict) -> dict:
    spec = kubeadm_config_spec(desc, control_plane=False, pool=pool)
    obj = _meta("KubeadmConfigTemplate", f"{BOOTSTRAP}/v1beta2", f"{desc['name']}-{pool['name']}-{_hash(spec)}", desc)
    obj["spec"] = {"template": {"spec": spec}}
    return obj


def _deployments_of(desc: dict, pool: dict) -> list[dict]:
    """One MachineDeployment per failure domain of a pool (replicas spread, the first ones get the rest)."""
    if not pool.get("name"):
        raise DescriptionError("capi_cluster.workers[]: name is required")
    replicas = int(pool.get("replicas", 1))
    fds = list(pool.get("failure_domains") or [])
    base = f"{desc['name']}-{pool['name']}"
    if not fds:
        return [{"name": base, "replicas": replicas, "failure_domain": None}]
    out = []
    for i, fd in enumerate(fds):
        share = replicas // len(fds) + (1 if i < replicas % len(fds) else 0)
        out.append({"name": f"{base}-{fd}", "replicas": share, "failure_domain": fd})
    return out


def _kcp_rollout(rollout: dict) -> dict:
    """control_plane.rollout -> KCP ``spec.rollout`` (after, before.certificatesExpiryDays, strategy)."""
    out: dict = {}
    if rollout.get("after"):
        out["after"] = str(rollout["after"])
    if rollout.get("certificates_expiry_days") is not None:
        out["before"] = {"certificatesExpiryDays": int(rollout["certificates_expiry_days"])}
    if rollout.get("max_surge") is not None:
        surge = int(rollout["max_surge"])
        if surge not in (0, 1):
            raise DescriptionError(f"capi_cluster.control_plane.rollout.max_surge: must be 0 or 1, got {surge}")
        out["strategy"] = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": surge}}
    return out


def _rollout_fields(md: dict, pool: dict) -> None:
    """A pool's rollout, readiness and remediation settings, under MachineDeployment v1beta2 names."""
    rollout = pool.get("rollout") or {}
    where = f"capi_cluster.workers[{pool['name']}].rollout"
    unknown = sorted(set(rollout) - {"strategy", "max_surge", "max_unavailable", "after"})
    if unknown:
        raise DescriptionError(f"{where}: unknown key(s) {', '.join(unknown)}")
    strategy = {"type": rollout.get("strategy") or "RollingUpdate"}
    if strategy["type"] not in ("RollingUpdate", "OnDelete"):
        raise DescriptionError(f"{where}.strategy: must be RollingUpdate or OnDelete, got {strategy['type']!r}")
    rolling = {}
    for key, field in (("max_surge", "maxSurge"), ("max_unavailable", "maxUnavailable")):
        if rollout.get(key) is not None:
            value = rollout[key]
            rolling[field] = int(value) if isinstance(value, str) and value.isdigit() else value
    if rolling:
        strategy["rollingUpdate"] = rolling
    if rollout:
        md["spec"]["rollout"] = {"strategy": strategy}
        if rollout.get("after"):
            md["spec"]["rollout"]["after"] = str(rollout["after"])
    if pool.get("min_ready_seconds") is not None:
        md["spec"]["template"]["spec"]["minReadySeconds"] = int(pool["min_ready_seconds"])
    if pool.get("remediation_max_in_flight") is not None:
        md["spec"]["remediation"] = {"maxInFlight": pool["remediation_max_in_flight"]}


def _machine_objects(desc: dict, bootstrap: dict) -> list[dict]:
    cname, version = desc["name"], _version(desc)
    cp = desc.get("control_plane") or {}
    out = []
    cp_template = _infra_template(desc, "control-plane", cp)
    out.append(cp_template)
    kcp = _meta("KubeadmControlPlane", f"{CONTROLPLANE}/v1beta2", names(desc)["control_plane"], desc)
    kcp["spec"] = {
        "replicas": int(cp.get("replicas", 1)),
        "version": version,
        "machineTemplate": {"spec": {"infrastructureRef": _ref(cp_template)}},
        "kubeadmConfigSpec": kubeadm_config_spec(desc, control_plane=True),
    }
    rollout = _kcp_rollout(cp.get("rollout") or {})
    if rollout:
        kcp["spec"]["rollout"] = rollout
    out.append(kcp)
    for pool in desc.get("workers") or []:
        template = _infra_template(desc, pool["name"], pool)
        out.append(template)
        for d in _deployments_of(desc, pool):
            md = _meta("MachineDeployment", f"{CAPI}/v1beta2", d["name"], desc)
            tspec = {
                "clusterName": cname,
                "version": version,
                "bootstrap": {"configRef": _ref(bootstrap[pool["name"]])},
                "infrastructureRef": _ref(template),
            }
            if d["failure_domain"]:
                tspec["failureDomain"] = d["failure_domain"]
            md["spec"] = {
                "clusterName": cname,
                "replicas": d["replicas"],
                "template": {"metadata": {"labels": {CLUSTER_NAME_LABEL: cname}}, "spec": tspec},
            }
            if pool.get("deletion_order"):
                md["spec"]["deletion"] = {"order": pool["deletion_order"]}
            _rollout_fields(md, pool)
            out.append(md)
    return out


def _checked(desc, check=description.check) -> None:
    """The description's own rules first: a bad type is named, never met by the mapping as a crash."""
    try:
        check(desc)
    except Invalid as exc:
        raise DescriptionError(str(exc)) from None


def objects(desc: dict, part: str) -> list[dict]:
    desc = plain(desc)
    _checked(desc)
    bootstrap = {p["name"]: _config_template(desc, p) for p in desc.get("workers") or []}
    if part == "cluster":
        return _cluster_objects(desc)
    if part == "bootstrap":
        return list(bootstrap.values())
    if part == "machines":
        return _machine_objects(desc, bootstrap)
    if part == "all":  # what cluster_validate admits together
        return _cluster_objects(desc) + list(bootstrap.values()) + _machine_objects(desc, bootstrap)
    raise DescriptionError(f"capi_objects: part must be cluster, bootstrap, machines or all, got {part!r}")


def scaled(desc: dict, control_plane=None, workers=None) -> dict:
    """The description with other replicas: ``control_plane`` (int or None) and ``workers`` ({pool: int})."""
    out = plain(desc)
    if control_plane not in (None, ""):
        out.setdefault("control_plane", {})["replicas"] = int(control_plane)
    if isinstance(workers, str):
        # AWX survey answers and -e key=value arrive as text: '{"md-0": 0}'.
        text = workers.strip()
        try:
            workers = json.loads(text) if text else {}
        except ValueError:
            workers = text
    if not isinstance(workers or {}, dict):
        raise DescriptionError(f"capi_worker_replicas: not a mapping of pool name to replicas: {workers!r}")
    known = {p.get("name") for p in out.get("workers") or []}
    unknown = sorted(set(workers or {}) - known)
    if unknown:
        raise DescriptionError(f"capi_worker_replicas: no worker pool named {', '.join(unknown)}")
    for pool in out.get("workers") or []:
        if pool.get("name") in (workers or {}):
            pool["replicas"] = int(workers[pool["name"]])
    return out


# --- the final table -----------------------------------------------------------------------------------
