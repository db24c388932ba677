# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The cluster description's own rules (types, known keys, names, CIDRs, selectors), before any object is built.

``check(desc)`` raises Invalid naming ``capi_cluster`` and the field (``workers[1].kubelet_extra_args``) on
the first thing wrong, so the description filter never meets a string where it expects a mapping and the
``cluster_validate`` task fails before anything is written.  ``SCHEMA`` mirrors
docs/cluster-description-spec.yml (tests/unit/capi/test_description_validation.py compares them); the rules
a type cannot say (DNS-1123 names, CIDRs, odd control planes, MAAS constraints) follow it.
"""

from __future__ import annotations

import ipaddress
import re

from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.model import selectors
from ansible_collections.baremetal.capi.plugins.module_utils.model.meta import DNS1123_LABEL, DNS1123_SUBDOMAIN

WHERE = "capi_cluster"

# type names as in the argument spec; a mapping value is a dict's sub-options
_POOL = {
    "name": "str",
    "replicas": "int",
    "host_selector": "dict",
    "constraints": "dict",
    "failure_domains": ("list", "str"),
    "image": "raw",
    "kubelet_extra_args": "dict",
    "deletion_order": "str",
    "data_template": "str",
    "automated_cleaning_mode": "str",
}
SCHEMA = {
    "name": "str",
    "namespace": "str",
    "provider": "str",
    "kubernetes_version": "str",
    "store": "dict",
    "control_plane": {
        **{k: v for k, v in _POOL.items() if k not in ("name", "deletion_order", "data_template")},
        "rollout": {"max_surge": "int", "after": "str", "certificates_expiry_days": "int"},
        # the KubeadmControlPlane's own files and commands (a kube-vip / keepalived VIP, as CAPM3 users do)
        "kubeadm": "dict",
    },
    "workers": (
        "list",
        {
            **_POOL,
            "rollout": {"strategy": "str", "max_surge": "raw", "max_unavailable": "raw", "after": "str"},
            "min_ready_seconds": "int",
            "remediation_max_in_flight": "raw",
        },
    ),
    "cluster_network": "dict",
    "control_plane_endpoint": "dict",
    "endpoint_via_maas_dns": "bool",
    "dns_domain": "str",
    "api_server_interface": "str",
    "data_template": "dict",
    "ip_pools": ("list", "dict"),
    "hosts": ("list", "dict"),
    "kubeadm": "dict",
    "addons": ("list", {"name": "str", "strategy": "str", "manifests": ("list", "str"), "resources": ("list", "dict")}),
}
REQUIRED = ("name", "provider", "control_plane")

# CAPMAAS's MaasMachineSpec fields a pool's constraints may carry (api/v1beta1/maasmachine_types.go)
MAAS_CONSTRAINTS = {"minCPU": int, "minMemory": int, "tags": list, "resourcePool": str, "deployInMemory": bool}
METAL3_IMAGE = ("url", "checksum", "checksumType", "format", "diskFormat")
CLEANING_MODES = ("metadata", "disabled")
DELETION_ORDERS = ("Random", "Newest", "Oldest")
ROLLOUT_STRATEGIES = ("RollingUpdate", "OnDelete")
ADDON_STRATEGIES = ("ApplyOnce", "Reconcile")
INT_OR_PERCENT = re.compile(r"^\d+%?$")
RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")
KUBEADM_KEYS = {
    "kubelet_extra_args": dict,
    "pre_commands": list,
    "post_commands": list,
    "files": list,
    "users": list,
    "format": str,
    "user_data_template": str,
}
# control_plane.kubeadm: what only the KubeadmControlPlane's KubeadmConfigSpec gets, after the shared kubeadm's
CONTROL_PLANE_KUBEADM = {k: KUBEADM_KEYS[k] for k in ("pre_commands", "post_commands", "files", "users")}
NETWORK_KEYS = ("pods", "services", "service_domain")
VERSION = re.compile(r"^v?\d+\.\d+\.\d+([-+][0-9A-Za-z.-]+)?$")
_TYPES = {"str": str, "int": int, "bool": bool, "dict": dict, "list": list}
_TYPE_WORDS = {"str": "a string", "int": "an integer", "bool": "a boolean", "dict": "a mapping", "list": "a list"}
# Cluster API's replicas fields are *int32 (api/core/v1beta2 MachineDeploymentSpec.Replicas,
# controlplane/kubeadm/api/v1beta2 KubeadmControlPlaneSpec.Replicas): the API server refuses anything larger.
REPLICAS_MAX = 2**31 - 1
# The workload Kubernetes minor versions the collection provisions: Cluster API v1.12's floor (its release notes,
# "Workload Cluster: v1.29.x -> v1.35.x") to v1.13's ceiling ("v1.30.x -> v1.37.x"); kubeadm's v1beta3/v1beta4
# configs (bootstrap/kubeadm.py) cover both ends.
SUPPORTED_MINORS = ((1, 29), (1, 37))
# KubeadmControlPlane's Machines are <cluster>-control-plane-<suffix>: a worker pool named so (or starting so)
# makes MachineDeployments and Machines that read as the control plane's.
RESERVED_POOL_NAMES = ("control-plane",)


def fail(msg: str, field: str):
    raise Invalid(msg, obj=WHERE, field=field)


# Ansible hands the module its own subclasses (_AnsibleTaggedFloat, _AnsibleTaggedStr, ...): the user's word
# for a value is the plain type it derives from, bool before int (a bool is an int in Python).
_PLAIN_TYPES = (
    (bool, "a boolean"),
    (int, "an integer"),
    (float, "a float"),
    (str, "a string"),
    (dict, "a mapping"),
    (list, "a list"),
)


def _type_name(value) -> str:
    if value is None:
        return "null"
    for plain, name in _PLAIN_TYPES:
        if isinstance(value, plain):
            return f"{name} ({value!r})" if plain in (float, int) and not isinstance(value, bool) else name
    return type(value).__name__.lstrip("_").replace("AnsibleTagged", "").lower() or "a value"


def _is(value, type_name: str) -> bool:
    if type_name == "raw":
        return True
    if type_name == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, _TYPES[type_name])


def _walk(value, schema, field: str) -> None:
    """Types and known keys of ``value`` against a SCHEMA node."""
    if isinstance(schema, dict):
        if not isinstance(value, dict):
            fail(f"must be a mapping, got {_type_name(value)}", field)
        unknown = sorted(set(value) - set(schema))
        if unknown:
            fail(f"unknown key(s) {', '.join(map(str, unknown))} (known: {', '.join(schema)})", field)
        for key, sub in schema.items():
            if value.get(key) is not None:
                _walk(value[key], sub, f"{field}.{key}" if field else key)
        return
    if isinstance(schema, tuple):
        _kind, elements = schema
        if not isinstance(value, list):
            fail(f"must be a list, got {_type_name(value)}", field)
        for i, item in enumerate(value):
            _walk(item, elements, f"{field}[{i}]")
        return
    if not _is(value, schema):
        fail(f"must be {_TYPE_WORDS[schema]}, got {_type_name(value)}", field)


def dns_label(value, field: str, what: str = "name") -> None:
    if not isinstance(value, str) or len(value) > 63 or not DNS1123_LABEL.match(value):
        fail(f"{what} {value!r} is not a DNS-1123 label (lowercase a-z, 0-9 and '-', at most 63)", field)


def dns_subdomain(value, field: str) -> None:
    if not isinstance(value, str) or len(value) > 253 or not DNS1123_SUBDOMAIN.match(value):
        fail(f"name {value!r} is not a DNS-1123 subdomain (lowercase a-z, 0-9, '-' and '.')", field)


def _cidrs(value, field: str) -> None:
    if not isinstance(value, list) or not value:
        fail("must be a non-empty list of CIDRs", field)
    for i, cidr in enumerate(value):
        try:
            ipaddress.ip_network(str(cidr), strict=True)
        except ValueError as exc:
            fail(f"invalid CIDR {cidr!r}: {exc}", f"{field}[{i}]")


def _kubelet_args(value, field: str) -> None:
    for key, arg in value.items():
        if not isinstance(key, str) or not key or key.startswith("-"):
            fail(f"argument name {key!r}: a flag name without leading dashes", field)
        if not isinstance(arg, (str, int, float, bool)):
            fail(f"the value of {key} must be a string (or a number), got {_type_name(arg)}", f"{field}.{key}")


def _pool(desc: dict, pool: dict, field: str, provider: str) -> None:
    if provider == "metal3":
        image = pool.get("image")
        if image is None:
            fail("is required (a mapping with url, checksum, checksumType, format)", f"{field}.image")
        if not isinstance(image, dict):
            fail(
                f"a mapping with url, checksum, checksumType, format is required, got {_type_name(image)}",
                f"{field}.image",
            )
        unknown = sorted(set(image) - set(METAL3_IMAGE))
        if unknown:
            fail(f"unknown key(s) {', '.join(unknown)} (known: url, checksum, checksumType, format)", f"{field}.image")
        for key, val in image.items():
            if not isinstance(val, str):
                fail(f"must be a string, got {_type_name(val)}", f"{field}.image.{key}")
        if pool.get("constraints") is not None:
            fail("MAAS allocation constraints; a metal3 pool chooses hosts with host_selector", f"{field}.constraints")
        if pool.get("host_selector") is not None:
            try:
                selectors.parse(pool["host_selector"], where=f"{field}.host_selector")
            except Invalid as exc:
                fail(exc.message, exc.field or f"{field}.host_selector")
        mode = pool.get("automated_cleaning_mode")
        if mode is not None and mode not in CLEANING_MODES:
            fail(f"must be metadata or disabled, got {mode!r}", f"{field}.automated_cleaning_mode")
    else:
        image = pool.get("image")
        if image is not None and (not isinstance(image, str) or not image):
            fail(f"a MAAS image name such as ubuntu/jammy, got {_type_name(image)}", f"{field}.image")
        for key in ("host_selector", "data_template", "automated_cleaning_mode"):
            if pool.get(key) is not None:
                fail("Metal3 only; MAAS machines are allocated by constraints", f"{field}.{key}")
        for key, val in (pool.get("constraints") or {}).items():
            want = MAAS_CONSTRAINTS.get(key)
            cfield = f"{field}.constraints.{key}"
            if want is None:
                fail(f"unknown constraint (known: {', '.join(MAAS_CONSTRAINTS)})", cfield)
            if want is int and (isinstance(val, bool) or not isinstance(val, int) or val < 0):
                fail(f"must be an integer >= 0, got {val!r}", cfield)
            if want is not int and not isinstance(val, want):
                fail(f"must be {_TYPE_WORDS[want.__name__]}, got {_type_name(val)}", cfield)
            if key == "tags" and not all(isinstance(t, str) and t for t in val):
                fail("must be a list of tag names", cfield)
    for i, fd in enumerate(pool.get("failure_domains") or []):
        dns_label(fd, f"{field}.failure_domains[{i}]", "failure domain")
    replicas = pool.get("replicas")
    if replicas is not None and replicas < 0:
        fail(f"must be >= 0, got {replicas}", f"{field}.replicas")
    if replicas is not None and replicas > REPLICAS_MAX:
        fail(f"must be at most {REPLICAS_MAX} (Cluster API's replicas are int32), got {replicas}", f"{field}.replicas")
    if pool.get("kubelet_extra_args") is not None:
        _kubelet_args(pool["kubelet_extra_args"], f"{field}.kubelet_extra_args")


def check_types(desc) -> None:
    """Only the types and known keys (what naming the objects needs; deprovisioning asks no more)."""
    _walk(desc, SCHEMA, "")
    for key in ("name", "provider"):
        if not desc.get(key):
            fail("is required", key)
    if desc["provider"] not in ("metal3", "maas"):
        fail(f"must be metal3 or maas, got {desc['provider']!r}", "provider")


def check(desc) -> None:
    """Raise Invalid on the first thing wrong with the description itself (no object built yet)."""
    check_types(desc)
    for key in REQUIRED:
        if desc.get(key) in (None, "", {}):
            fail("is required", key)
    provider = desc["provider"]
    if provider not in ("metal3", "maas"):
        fail(f"must be metal3 or maas, got {provider!r}", "provider")
    dns_label(desc["name"], "name", "cluster name")
    if desc.get("namespace") is not None:
        dns_label(desc["namespace"], "namespace", "namespace")
    if desc.get("kubernetes_version") is not None:
        _version(desc["kubernetes_version"])
    cp = desc["control_plane"]
    replicas = cp.get("replicas", 1)
    if replicas < 1 or replicas % 2 == 0:
        fail(f"must be odd with stacked etcd (1, 3, 5), got {replicas}", "control_plane.replicas")
    _pool(desc, cp, "control_plane", provider)
    seen: dict = {}
    for i, pool in enumerate(desc.get("workers") or []):
        field = _named_entry(seen, pool, "workers", i, "pool name", "pool name")
        if any(pool["name"] == r or pool["name"].startswith(f"{r}-") for r in RESERVED_POOL_NAMES):
            fail(
                f"pool name {pool['name']!r} is reserved: the control plane's objects and Machines are "
                f"{desc['name']}-control-plane-*",
                f"{field}.name",
            )
        if pool.get("deletion_order") is not None and pool["deletion_order"] not in DELETION_ORDERS:
            fail(
                f"must be one of {', '.join(DELETION_ORDERS)}, got {pool['deletion_order']!r}",
                f"{field}.deletion_order",
            )
        if pool.get("data_template") is not None:
            dns_subdomain(pool["data_template"], f"{field}.data_template")
        _pool(desc, pool, field, provider)
        _worker_rollout(pool, field)
        # CAPI labels every Machine with its MachineDeployment's name: a label value, at most 63
        for fd in pool.get("failure_domains") or [None]:
            md = f"{desc['name']}-{pool['name']}" + (f"-{fd}" if fd else "")
            if len(md) > 63:
                fail(f"MachineDeployment name {md!r} is longer than 63 (it is a label value)", f"{field}.name")
    _addons(desc.get("addons") or [])
    _network(desc.get("cluster_network") or {})
    _endpoint(desc, provider)
    _kubeadm(desc.get("kubeadm") or {})
    _kubeadm((desc.get("control_plane") or {}).get("kubeadm") or {}, "control_plane.kubeadm", CONTROL_PLANE_KUBEADM)
    if provider == "metal3":
        _metal3_parts(desc)
        if desc.get("api_server_interface") is not None:
            fail("MAAS only (the MaasCluster's apiServerInterfaceName)", "api_server_interface")
    else:
        for key in ("ip_pools", "hosts"):
            if desc.get(key):
                fail("Metal3 only (a MAAS cluster's machines get their addresses from MAAS)", key)
        if desc.get("dns_domain") is not None and not DNS1123_SUBDOMAIN.match(desc["dns_domain"]):
            fail(f"{desc['dns_domain']!r} is not a DNS domain", "dns_domain")
        iface = desc.get("api_server_interface")
        if iface is not None and (not iface or any(c.isspace() for c in iface) or "/" in iface):
            fail(f"{iface!r} is not a MAAS interface name (such as eno2)", "api_server_interface")


def minor_of(version: str) -> tuple[int, int]:
    """``v1.34.4`` -> (1, 34) (a VERSION-shaped string)."""
    major, minor = version.lstrip("v").split(".")[:2]
    return int(major), int(minor)


def supported_range() -> str:
    (lo_major, lo_minor), (hi_major, hi_minor) = SUPPORTED_MINORS
    return f"v{lo_major}.{lo_minor}.x to v{hi_major}.{hi_minor}.x"


def _version(version) -> None:
    if not VERSION.match(version):
        fail(f"{version!r} is not a version such as v1.34.4", "kubernetes_version")
    lo, hi = SUPPORTED_MINORS
    if not lo <= minor_of(version) <= hi:
        fail(f"{version} is not a supported Kubernetes version (supported: {supported_range()})", "kubernetes_version")


def _int_or_percent(value, field: str) -> None:
    if isinstance(value, bool) or not INT_OR_PERCENT.match(str(value)):
        fail(f"must be an integer >= 0 or a percentage such as 25%, got {value!r}", field)


def _worker_rollout(pool: dict, field: str) -> None:
    """A pool's rollout, readiness and remediation settings (the MachineDeployment webhook's rules)."""
    rollout = pool.get("rollout") or {}
    strategy = rollout.get("strategy") or "RollingUpdate"
    if strategy not in ROLLOUT_STRATEGIES:
        fail(f"must be one of {', '.join(ROLLOUT_STRATEGIES)}, got {strategy!r}", f"{field}.rollout.strategy")
    for key in ("max_surge", "max_unavailable"):
        if rollout.get(key) is not None:
            _int_or_percent(rollout[key], f"{field}.rollout.{key}")
    zero = ("0", "0%")
    if str(rollout.get("max_surge", 1)) in zero and str(rollout.get("max_unavailable", 0)) in zero:
        fail("max_surge and max_unavailable must not both be 0", f"{field}.rollout")
    if rollout.get("after") is not None and not RFC3339.match(rollout["after"]):
        fail(f"{rollout['after']!r} is not an RFC 3339 time such as 2026-01-01T00:00:00Z", f"{field}.rollout.after")
    if pool.get("min_ready_seconds") is not None and pool["min_ready_seconds"] < 0:
        fail(f"must be >= 0, got {pool['min_ready_seconds']}", f"{field}.min_ready_seconds")
    if pool.get("remediation_max_in_flight") is not None:
        _int_or_percent(pool["remediation_max_in_flight"], f"{field}.remediation_max_in_flight")


def _named_entry(seen: dict, entry: dict, list_field: str, i: int, label: str, noun: str) -> str:
    """``<list_field>[i].name``: required, a DNS label, unique in the list (``seen``: name -> index). Returns
    the entry's field path."""
    field = f"{list_field}[{i}]"
    if not entry.get("name"):
        fail("is required", f"{field}.name")
    dns_label(entry["name"], f"{field}.name", label)
    if entry["name"] in seen:
        fail(f"duplicate {noun} {entry['name']!r} (also {list_field}[{seen[entry['name']]}])", f"{field}.name")
    seen[entry["name"]] = i
    return field


def _addons(addons: list) -> None:
    seen: dict = {}
    for i, addon in enumerate(addons):
        field = _named_entry(seen, addon, "addons", i, "add-on name", "add-on")
        strategy = addon.get("strategy") or "ApplyOnce"
        if strategy not in ADDON_STRATEGIES:
            fail(f"must be one of {', '.join(ADDON_STRATEGIES)}, got {strategy!r}", f"{field}.strategy")
        if not addon.get("manifests") and not addon.get("resources"):
            fail("manifests or resources is required", field)
        for j, res in enumerate(addon.get("resources") or []):
            if (
                res.get("kind") not in ("ConfigMap", "Secret")
                or not isinstance(res.get("name"), str)
                or not res["name"]
            ):
                fail("each resource is {kind: ConfigMap or Secret, name}", f"{field}.resources[{j}]")


def _network(net: dict) -> None:
    unknown = sorted(set(net) - set(NETWORK_KEYS))
    if unknown:
        fail(f"unknown key(s) {', '.join(unknown)} (known: {', '.join(NETWORK_KEYS)})", "cluster_network")
    for key in ("pods", "services"):
        if net.get(key) is not None:
            _cidrs(net[key], f"cluster_network.{key}")
    nets = {}
    for key in ("pods", "services"):
        nets[key] = [(i, ipaddress.ip_network(str(c), strict=True)) for i, c in enumerate(net.get(key) or [])]
    for i, pod in nets["pods"]:
        for j, svc in nets["services"]:
            if pod.version == svc.version and pod.overlaps(svc):
                fail(
                    f"{pod} overlaps the services CIDR {svc} (cluster_network.services[{j}]): a Service address "
                    "would also be a Pod's",
                    f"cluster_network.pods[{i}]",
                )
    domain = net.get("service_domain")
    if domain is not None and (not isinstance(domain, str) or not DNS1123_SUBDOMAIN.match(domain)):
        fail(f"{domain!r} is not a DNS domain", "cluster_network.service_domain")


def _endpoint(desc: dict, provider: str) -> None:
    ep = desc.get("control_plane_endpoint")
    if ep is None:
        if provider == "metal3":
            fail("{host, port} of the API is required for a Metal3 cluster", "control_plane_endpoint")
        return
    unknown = sorted(set(ep) - {"host", "port"})
    if unknown:
        fail(f"unknown key(s) {', '.join(unknown)} (known: host, port)", "control_plane_endpoint")
    if not isinstance(ep.get("host"), str) or not ep["host"]:
        fail("a host name or address is required", "control_plane_endpoint.host")
    if not valid_host(ep["host"]):
        fail(
            f"{ep['host']!r} is neither an IP address nor a DNS name (RFC 1123)",
            "control_plane_endpoint.host",
        )
    port = ep.get("port", 6443)
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        fail(f"{port!r} is not a port (1-65535)", "control_plane_endpoint.port")


_HOSTNAME_LABEL = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$")


def valid_host(host: str) -> bool:
    """An IP address, or a DNS name whose last label is not all digits (999.1.1.1 is a bad address, not a name;
    Kubernetes' IsDNS1123Subdomain, case-insensitive as DNS is)."""
    try:
        ipaddress.ip_address(host.strip("[]"))
        return True
    except ValueError:
        pass
    name = host[:-1] if host.endswith(".") else host
    labels = name.split(".")
    if len(name) > 253 or labels[-1].isdigit():
        return False
    return all(_HOSTNAME_LABEL.match(label) for label in labels)


def _kubeadm(kubeadm: dict, where: str = "kubeadm", known: dict | None = None) -> None:
    known = known or KUBEADM_KEYS
    for key, val in kubeadm.items():
        want = known.get(key)
        if want is None:
            fail(f"unknown key {key!r} (known: {', '.join(known)})", where)
        if not isinstance(val, want):
            fail(f"must be {_TYPE_WORDS[want.__name__]}, got {_type_name(val)}", f"{where}.{key}")
    if kubeadm.get("kubelet_extra_args") is not None:
        _kubelet_args(kubeadm["kubelet_extra_args"], f"{where}.kubelet_extra_args")
    for key in ("pre_commands", "post_commands"):
        for i, cmd in enumerate(kubeadm.get(key) or []):
            if not isinstance(cmd, str):
                fail(f"a command line (string), got {_type_name(cmd)}", f"{where}.{key}[{i}]")
    for key, required in (("files", "path"), ("users", "name")):
        for i, item in enumerate(kubeadm.get(key) or []):
            if not isinstance(item, dict) or not item.get(required):
                fail(f"a mapping with {required} is required", f"{where}.{key}[{i}]")
    if kubeadm.get("format") not in (None, "cloud-config", "ignition"):
        fail(f"must be cloud-config or ignition, got {kubeadm['format']!r}", f"{where}.format")


def _metal3_parts(desc: dict) -> None:
    names: dict = {}
    for i, pool in enumerate(desc.get("ip_pools") or []):
        field = f"ip_pools[{i}]"
        unknown = sorted(set(pool) - {"name", "spec"})
        if unknown:
            fail(f"unknown key(s) {', '.join(unknown)} (known: name, spec)", field)
        dns_subdomain(pool.get("name"), f"{field}.name")
        if pool["name"] in names:
            fail(f"duplicate pool name {pool['name']!r} (also ip_pools[{names[pool['name']]}])", f"{field}.name")
        names[pool["name"]] = i
        if pool.get("spec") is None:
            fail("the IPPool spec (namePrefix, pools, prefix, gateway, ...) is required", f"{field}.spec")
        if not isinstance(pool["spec"], dict):
            fail(f"must be a mapping, got {_type_name(pool['spec'])}", f"{field}.spec")
    dt = desc.get("data_template") or {}
    unknown = sorted(set(dt) - {"name", "spec"})
    if unknown:
        fail(f"unknown key(s) {', '.join(unknown)} (known: name, spec)", "data_template")
    if dt.get("name") is not None:
        dns_subdomain(dt["name"], "data_template.name")
    if dt.get("spec") is not None and not isinstance(dt["spec"], dict):
        fail(f"must be a mapping, got {_type_name(dt['spec'])}", "data_template.spec")
    hosts: dict = {}
    for i, host in enumerate(desc.get("hosts") or []):
        field = f"hosts[{i}]"
        dns_subdomain(host.get("name"), f"{field}.name")
        if host["name"] in hosts:
            fail(f"duplicate host {host['name']!r} (also hosts[{hosts[host['name']]}])", f"{field}.name")
        hosts[host["name"]] = i
        for key in ("spec", "labels", "annotations", "hardware"):
            if host.get(key) is not None and not isinstance(host[key], dict):
                fail(f"must be a mapping, got {_type_name(host[key])}", f"{field}.{key}")
        if host.get("spec") is not None and not isinstance(host["spec"].get("bmc") or {}, dict):
            fail("must be a mapping with address", f"{field}.spec.bmc")
