"""Bad cluster descriptions, one per kind of mistake an operator makes, with the object and field the error must name.

Used by tests/unit/capi/test_description_validation.py (the engine, hermetic) and by
tests/integration/e2e/test_validation_playbook.py (provision_cluster.yml on a few of them); docs/reliability.md
is generated from the table (``python tests/unit/capi/test_description_validation.py``).
"""

from __future__ import annotations

import copy
import pathlib

# the add-on cases' manifest files (absolute: the playbook test runs them too)
ADDONS = pathlib.Path(__file__).resolve().parent / "addon_manifests"
IMAGE = {"url": "http://images.example/node.qcow2", "checksum": "0" * 64, "checksumType": "sha256", "format": "qcow2"}


def metal3() -> dict:
    return {
        "name": "v1",
        "namespace": "valid",
        "provider": "metal3",
        "kubernetes_version": "v1.34.4",
        "control_plane_endpoint": {"host": "127.0.6.9", "port": 6443},
        "control_plane": {"replicas": 1, "image": copy.deepcopy(IMAGE), "automated_cleaning_mode": "disabled"},
        "workers": [
            {"name": "md-0", "replicas": 1, "image": copy.deepcopy(IMAGE), "host_selector": {"matchLabels": {"r": "w"}}}
        ],
        "cluster_network": {"pods": ["192.168.0.0/16"], "services": ["10.128.0.0/12"]},
        "kubeadm": {"kubelet_extra_args": {"max-pods": 50}, "pre_commands": ["echo hi"]},
        "ip_pools": [
            {
                "name": "v1-prov",
                "spec": {
                    "namePrefix": "v1-prov",
                    "pools": [{"start": "10.5.0.10", "end": "10.5.0.20"}],
                    "prefix": 24,
                    "gateway": "10.5.0.1",
                },
            },
        ],  # fmt: skip
        "data_template": {
            "spec": {
                "metaData": {"strings": [{"key": "cluster", "value": "v1"}]},
                "networkData": {
                    "links": {
                        "ethernets": [{"type": "phy", "id": "enp1s0", "macAddress": {"fromHostInterface": "enp1s0"}}]
                    },
                    "networks": {"ipv4": [{"id": "prov", "link": "enp1s0", "ipAddressFromIPPool": "v1-prov"}]},
                },
            }
        },
        "hosts": [
            {
                "name": "v1-host-0",
                "spec": {"bmc": {"address": "fake://v1-host-0"}, "bootMACAddress": "52:54:00:aa:00:00"},
            },
            {
                "name": "v1-host-1",
                "bmc_username": "admin",
                "bmc_password": "s3cret-bmc",
                "spec": {
                    "bmc": {"address": "redfish+http://127.0.0.1:8000/redfish/v1/Systems/1"},
                    "bootMACAddress": "52:54:00:aa:00:01",
                },
            },
        ],  # fmt: skip
    }


def maas() -> dict:
    return {
        "name": "v2",
        "namespace": "valid",
        "provider": "maas",
        "control_plane": {"replicas": 1, "image": "ubuntu/jammy", "constraints": {"minCPU": 2, "tags": ["cp"]}},
        "workers": [{"name": "md-0", "replicas": 1, "image": "ubuntu/jammy", "constraints": {"minMemory": 2048}}],
    }


def _set(path: str, value):
    """A mutation: set (or with value DELETE, remove) the dotted/indexed path."""

    def mutate(desc):
        keys = path.replace("]", "").replace("[", ".").split(".")
        node = desc
        for k in keys[:-1]:
            node = node[int(k)] if isinstance(node, list) else node[k]
        last = int(keys[-1]) if isinstance(node, list) else keys[-1]
        if value is DELETE:
            del node[last]
        else:
            node[last] = copy.deepcopy(value)
        return desc

    return mutate


DELETE = object()


def _whole(value):
    return lambda _desc: copy.deepcopy(value)


def _add_worker(**pool):
    def mutate(desc):
        desc["workers"].append({"name": "md-0", "replicas": 1, "image": desc["workers"][0]["image"], **pool})
        return desc

    return mutate


def _add_pool(pool):
    def mutate(desc):
        desc["ip_pools"].append(copy.deepcopy(pool))
        return desc

    return mutate


def _with_nics(field: str, name: str):
    """Every host with its inventory (hardware.nics: enp1s0), and ``field`` of the data template naming ``name``."""

    def mutate(desc):
        for i, host in enumerate(desc["hosts"]):
            host["hardware"] = {"nics": [{"name": "enp1s0", "mac": f"52:54:00:aa:00:0{i}"}]}
        return _set(field, name)(desc)

    return mutate


M, A = metal3, maas
# (kind of bad input, base description, mutation, object the message names, field it names)
CASES = [
    ("description is a string", M, _whole("v1"), "capi_cluster", "must be a mapping"),
    ("unknown top-level key", M, _set("nmae", "x"), "capi_cluster", "nmae"),
    ("unknown control_plane key", M, _set("control_plane.replica", 3), "capi_cluster", "control_plane"),
    ("unknown worker pool key", M, _set("workers[0].size", 3), "capi_cluster", "workers[0]"),
    ("name missing", M, _set("name", DELETE), "capi_cluster", "name"),
    ("cluster name not DNS-1123", M, _set("name", "My_Cluster"), "capi_cluster", "name"),
    ("namespace not DNS-1123", M, _set("namespace", "Team.A"), "capi_cluster", "namespace"),
    ("unknown provider", M, _set("provider", "aws"), "capi_cluster", "provider"),
    ("provider not a string", M, _set("provider", 3), "capi_cluster", "provider"),
    ("kubernetes_version not a version", M, _set("kubernetes_version", "latest"), "capi_cluster", "kubernetes_version"),
    ("control_plane a string", M, _set("control_plane", "3"), "capi_cluster", "control_plane"),
    (
        "control-plane replicas a string",
        M,
        _set("control_plane.replicas", "three"),
        "capi_cluster",
        "control_plane.replicas",
    ),  # fmt: skip
    ("even control-plane replicas", M, _set("control_plane.replicas", 2), "capi_cluster", "control_plane.replicas"),
    ("no control-plane machine", M, _set("control_plane.replicas", 0), "capi_cluster", "control_plane.replicas"),
    ("workers a mapping", M, _set("workers", {"name": "md-0"}), "capi_cluster", "workers"),
    ("worker pool a string", M, _set("workers", ["md-0"]), "capi_cluster", "workers[0]"),
    ("worker pool without name", M, _set("workers[0].name", DELETE), "capi_cluster", "workers[0].name"),
    ("worker pool name not DNS-1123", M, _set("workers[0].name", "MD_0"), "capi_cluster", "workers[0].name"),
    ("two worker pools with one name", M, _add_worker(), "capi_cluster", "workers[1].name"),
    ("negative worker replicas", M, _set("workers[0].replicas", -1), "capi_cluster", "workers[0].replicas"),
    (
        "unknown deletion order",
        M,
        _set("workers[0].deletion_order", "Largest"),
        "capi_cluster",
        "workers[0].deletion_order",
    ),  # fmt: skip
    (
        "unknown rollout strategy",
        M,
        _set("workers[0].rollout", {"strategy": "Recreate"}),
        "capi_cluster",
        "workers[0].rollout.strategy",
    ),  # fmt: skip
    (
        "max_surge neither integer nor percentage",
        M,
        _set("workers[0].rollout", {"max_surge": "one"}),
        "capi_cluster",
        "workers[0].rollout.max_surge",
    ),  # fmt: skip
    (
        "max_surge and max_unavailable both 0",
        M,
        _set("workers[0].rollout", {"max_surge": 0, "max_unavailable": "0%"}),
        "capi_cluster",
        "workers[0].rollout",
    ),  # fmt: skip
    (
        "rollout after not a time",
        M,
        _set("workers[0].rollout", {"after": "tomorrow"}),
        "capi_cluster",
        "workers[0].rollout.after",
    ),  # fmt: skip
    (
        "negative min_ready_seconds",
        M,
        _set("workers[0].min_ready_seconds", -5),
        "capi_cluster",
        "workers[0].min_ready_seconds",
    ),  # fmt: skip
    ("add-on without name", M, _set("addons", [{"manifests": ["cni.yaml"]}]), "capi_cluster", "addons[0].name"),
    (
        "add-on without manifests or resources",
        M,
        _set("addons", [{"name": "cni"}]),
        "capi_cluster",
        "addons[0]",
    ),  # fmt: skip
    (
        "unknown add-on strategy",
        M,
        _set("addons", [{"name": "cni", "strategy": "Always", "manifests": ["cni.yaml"]}]),
        "capi_cluster",
        "addons[0].strategy",
    ),  # fmt: skip
    (
        "add-on resource of another kind",
        M,
        _set("addons", [{"name": "cni", "resources": [{"kind": "Deployment", "name": "x"}]}]),
        "capi_cluster",
        "addons[0].resources[0]",
    ),  # fmt: skip
    (
        "add-on manifest file missing",
        M,
        _set("addons", [{"name": "cni", "manifests": [str(ADDONS / "missing.yaml")]}]),
        "capi_cluster.addons[0]",
        "manifests[0]",
    ),  # fmt: skip
    (
        "add-on manifest not YAML",
        M,
        _set("addons", [{"name": "cni", "manifests": [str(ADDONS / "cni.yaml"), str(ADDONS / "not-yaml.yaml")]}]),
        "capi_cluster.addons[0]",
        "manifests[1]",
    ),  # fmt: skip
    (
        "add-on manifest document without kind",
        M,
        _set("addons", [{"name": "cni", "manifests": [str(ADDONS / "no-kind.yaml")]}]),
        "capi_cluster.addons[0]",
        "manifests[0]",
    ),  # fmt: skip
    (
        "kubelet extra args a string",
        M,
        _set("kubeadm.kubelet_extra_args", "max-pods=50"),
        "capi_cluster",
        "kubeadm.kubelet_extra_args",
    ),  # fmt: skip
    (
        "pool kubelet extra args a string",
        M,
        _set("workers[0].kubelet_extra_args", "a=b"),
        "capi_cluster",
        "workers[0].kubelet_extra_args",
    ),  # fmt: skip
    (
        "kubelet arg value a list",
        M,
        _set("kubeadm.kubelet_extra_args", {"node-labels": ["a=b"]}),
        "capi_cluster",
        "kubeadm.kubelet_extra_args.node-labels",
    ),  # fmt: skip
    ("unknown kubeadm key", M, _set("kubeadm.preCommands", ["x"]), "capi_cluster", "kubeadm"),
    (
        "kubeadm pre_commands a string",
        M,
        _set("kubeadm.pre_commands", "echo hi"),
        "capi_cluster",
        "kubeadm.pre_commands",
    ),  # fmt: skip
    ("kubeadm format unknown", M, _set("kubeadm.format", "yaml"), "capi_cluster", "kubeadm.format"),
    ("metal3 image missing", M, _set("control_plane.image", DELETE), "capi_cluster", "control_plane.image"),
    ("metal3 image a string", M, _set("control_plane.image", "ubuntu/jammy"), "capi_cluster", "control_plane.image"),
    ("unknown image key", M, _set("control_plane.image.sha", "x"), "capi_cluster", "control_plane.image"),
    (
        "image URL not a URI",
        M,
        _set("control_plane.image.url", "not a url"),
        "Metal3MachineTemplate",
        "spec.template.spec.image.url",
    ),
    (
        "image checksum missing",
        M,
        _set("workers[0].image.checksum", DELETE),
        "Metal3MachineTemplate",
        "image.checksum",
    ),  # fmt: skip
    (
        "unknown image checksumType",
        M,
        _set("control_plane.image.checksumType", "md6"),
        "Metal3MachineTemplate",
        "image.checksumType",
    ),  # fmt: skip
    (
        "unknown image disk format",
        M,
        _set("control_plane.image.format", "vhd"),
        "Metal3MachineTemplate",
        "image.diskFormat",
    ),  # fmt: skip
    (
        "host selector unknown operator",
        M,
        _set("workers[0].host_selector", {"matchExpressions": [{"key": "r", "operator": "Like", "values": ["w"]}]}),
        "capi_cluster",
        "workers[0].host_selector.matchExpressions[0]",
    ),  # fmt: skip
    (
        "host selector bad label key",
        M,
        _set("workers[0].host_selector", {"matchLabels": {"-bad": "w"}}),
        "capi_cluster",
        "workers[0].host_selector.matchLabels",
    ),  # fmt: skip
    ("host selector a string", M, _set("workers[0].host_selector", "r=w"), "capi_cluster", "workers[0].host_selector"),
    (
        "unknown automated cleaning mode",
        M,
        _set("control_plane.automated_cleaning_mode", "always"),
        "capi_cluster",
        "control_plane.automated_cleaning_mode",
    ),  # fmt: skip
    (
        "failure domain not DNS-1123",
        M,
        _set("control_plane.failure_domains", ["Rack 1"]),
        "capi_cluster",
        "control_plane.failure_domains[0]",
    ),  # fmt: skip
    ("invalid pod CIDR", M, _set("cluster_network.pods", ["10.0.0.0/33"]), "capi_cluster", "cluster_network.pods[0]"),
    (
        "pod CIDR with host bits",
        M,
        _set("cluster_network.pods", ["192.168.1.0/16"]),
        "capi_cluster",
        "cluster_network.pods[0]",
    ),  # fmt: skip
    (
        "service CIDRs a string",
        M,
        _set("cluster_network.services", "10.96.0.0/12"),
        "capi_cluster",
        "cluster_network.services",
    ),  # fmt: skip
    ("unknown cluster_network key", M, _set("cluster_network.pod", ["10.0.0.0/8"]), "capi_cluster", "cluster_network"),
    ("metal3 endpoint missing", M, _set("control_plane_endpoint", DELETE), "capi_cluster", "control_plane_endpoint"),
    (
        "endpoint port out of range",
        M,
        _set("control_plane_endpoint.port", 70000),
        "capi_cluster",
        "control_plane_endpoint.port",
    ),  # fmt: skip
    (
        "endpoint without host",
        M,
        _set("control_plane_endpoint", {"port": 6443}),
        "capi_cluster",
        "control_plane_endpoint.host",
    ),  # fmt: skip
    (
        "two IP pools with one name",
        M,
        _add_pool(
            {"name": "v1-prov", "spec": {"namePrefix": "x", "pools": [{"start": "10.6.0.10", "end": "10.6.0.20"}]}}
        ),
        "capi_cluster",
        "ip_pools[1].name",
    ),  # fmt: skip
    ("IP pool name not DNS-1123", M, _set("ip_pools[0].name", "Prov_Net"), "capi_cluster", "ip_pools[0].name"),
    ("IP pool without spec", M, _set("ip_pools[0].spec", DELETE), "capi_cluster", "ip_pools[0].spec"),
    ("IP pool prefix 33", M, _set("ip_pools[0].spec.prefix", 33), "IPPool valid/v1-prov", "spec.prefix"),
    (
        "IP pool gateway outside the subnet",
        M,
        _set("ip_pools[0].spec.gateway", "10.9.0.1"),
        "IPPool valid/v1-prov",
        "spec.gateway",
    ),  # fmt: skip
    (
        "IP pool start outside its subnet",
        M,
        _set("ip_pools[0].spec.pools", [{"subnet": "10.5.0.0/24", "start": "10.5.1.10"}]),
        "IPPool valid/v1-prov",
        "spec.pools[0].start",
    ),  # fmt: skip
    (
        "overlapping IP pools",
        M,
        _add_pool(
            {
                "name": "v1-other",
                "spec": {"namePrefix": "v1-other", "pools": [{"start": "10.5.0.15", "end": "10.5.0.30"}], "prefix": 24},
            }
        ),
        "IPPool valid/v1-other",
        "spec.pools[0]",
    ),  # fmt: skip
    (
        "IP pool without namePrefix",
        M,
        _set("ip_pools[0].spec.namePrefix", DELETE),
        "IPPool valid/v1-prov",
        "spec.namePrefix",
    ),  # fmt: skip
    (
        "IP pool start after end",
        M,
        _set("ip_pools[0].spec.pools[0].start", "10.5.0.30"),
        "IPPool valid/v1-prov",
        "spec.pools[0]",
    ),  # fmt: skip
    (
        "IP pool address not an IP",
        M,
        _set("ip_pools[0].spec.pools[0].end", "10.5.0.300"),
        "IPPool valid/v1-prov",
        "spec.pools[0]",  # ip-address-manager's webhook names the entry: invalid End IP "..."
    ),  # fmt: skip
    (
        "networkData pool that does not exist",
        M,
        _set("data_template.spec.networkData.networks.ipv4[0].ipAddressFromIPPool", "v1-missing"),
        "Metal3DataTemplate valid/v1-nodes",
        "spec.networkData.networks.ipv4[0]",
    ),  # fmt: skip
    (
        "metaData pool that does not exist",
        M,
        _set("data_template.spec.metaData.ipAddressesFromPool", [{"key": "ip", "name": "v1-nope"}]),
        "Metal3DataTemplate valid/v1-nodes",
        "spec.metaData.ipAddressesFromPool[0]",
    ),  # fmt: skip
    (
        "unknown data template field",
        M,
        _set("data_template.spec.userData", {}),
        "Metal3DataTemplate valid/v1-nodes",
        "spec",
    ),  # fmt: skip
    (
        "unknown ethernet link type",
        M,
        _set("data_template.spec.networkData.links.ethernets[0].type", "nic"),
        "Metal3DataTemplate valid/v1-nodes",
        "spec.networkData.links.ethernets[0].type",
    ),  # fmt: skip
    ("data template name not DNS-1123", M, _set("data_template.name", "Nodes!"), "capi_cluster", "data_template.name"),
    (
        "BMC credentials missing",
        M,
        _set("hosts[1].bmc_password", DELETE),
        "BareMetalHost valid/v1-host-1",
        "bmc_password",
    ),  # fmt: skip
    (
        "BMC credentials Secret not stored",
        M,
        _set(
            "hosts[1]",
            {
                "name": "v1-host-1",
                "spec": {
                    "bmc": {"address": "redfish+http://127.0.0.1:8000/redfish/v1/Systems/1", "credentialsName": "nope"},
                    "bootMACAddress": "52:54:00:aa:00:01",
                },
            },
        ),
        "BareMetalHost valid/v1-host-1",
        "spec.bmc.credentialsName",
    ),  # fmt: skip
    (
        "boot MAC not a MAC",
        M,
        _set("hosts[0].spec.bootMACAddress", "52:54:00:aa:00"),
        "BareMetalHost valid/v1-host-0",
        "spec.bootMACAddress",
    ),  # fmt: skip
    (
        "unknown BMC scheme",
        M,
        _set("hosts[0].spec.bmc.address", "telnet://10.0.0.1"),
        "BareMetalHost valid/v1-host-0",
        "spec.bmc.address",
    ),  # fmt: skip
    ("host name not DNS-1123", M, _set("hosts[0].name", "Host_0"), "capi_cluster", "hosts[0].name"),
    ("two hosts with one name", M, _set("hosts[1].name", "v1-host-0"), "capi_cluster", "hosts[1].name"),
    (
        "unknown MAAS constraint",
        A,
        _set("control_plane.constraints.maxCPU", 4),
        "capi_cluster",
        "control_plane.constraints.maxCPU",
    ),  # fmt: skip
    (
        "MAAS minCPU a string",
        A,
        _set("workers[0].constraints.minCPU", "two"),
        "capi_cluster",
        "workers[0].constraints.minCPU",
    ),  # fmt: skip
    (
        "MAAS tags a string",
        A,
        _set("control_plane.constraints.tags", "cp"),
        "capi_cluster",
        "control_plane.constraints.tags",
    ),  # fmt: skip
    ("MAAS image a mapping", A, _set("control_plane.image", {"url": "x"}), "capi_cluster", "control_plane.image"),
    (
        "host selector on a MAAS pool",
        A,
        _set("workers[0].host_selector", {"matchLabels": {"a": "b"}}),
        "capi_cluster",
        "workers[0].host_selector",
    ),  # fmt: skip
    ("IP pools on a MAAS cluster", A, _set("ip_pools", [{"name": "p", "spec": {}}]), "capi_cluster", "ip_pools"),
    ("MAAS DNS domain invalid", A, _set("dns_domain", "My Domain"), "capi_cluster", "dns_domain"),
    (
        "MAAS API-server interface invalid",
        A,
        _set("api_server_interface", "eno 2"),
        "capi_cluster",
        "api_server_interface",
    ),  # fmt: skip
    (
        "MAAS API-server interface on Metal3",
        M,
        _set("api_server_interface", "eno2"),
        "capi_cluster",
        "api_server_interface",
    ),  # fmt: skip
    ("description null", M, _whole(None), "capi_cluster", "must be a mapping, got null"),
    ("description a list", M, _whole([{"name": "v1"}]), "capi_cluster", "must be a mapping, got a list"),
    ("worker replicas a float", M, _set("workers[0].replicas", 3.5), "capi_cluster", "workers[0].replicas"),
    (
        "worker replicas beyond int32",
        M,
        _set("workers[0].replicas", 1000000000000),
        "capi_cluster",
        "workers[0].replicas",
    ),  # fmt: skip
    (
        "control-plane replicas beyond int32",
        M,
        _set("control_plane.replicas", 2**31 + 1),
        "capi_cluster",
        "control_plane.replicas",
    ),  # fmt: skip
    ("Kubernetes version too old", M, _set("kubernetes_version", "v1.18.0"), "capi_cluster", "kubernetes_version"),
    ("Kubernetes version too new", M, _set("kubernetes_version", "v1.99.0"), "capi_cluster", "kubernetes_version"),
    ("Kubernetes major version 2", M, _set("kubernetes_version", "v2.0.0"), "capi_cluster", "kubernetes_version"),
    (
        "image checksum one short of sha256",
        M,
        _set("workers[0].image.checksum", "a" * 63),
        "capi_cluster",
        "workers[0].image.checksum",
    ),  # fmt: skip
    (
        "image checksum not hexadecimal",
        M,
        _set("control_plane.image.checksum", "z" * 64),
        "capi_cluster",
        "control_plane.image.checksum",
    ),  # fmt: skip
    (
        "md5-length checksum typed sha256",
        M,
        _set("workers[0].image.checksum", "b" * 32),
        "capi_cluster",
        "workers[0].image.checksum",
    ),  # fmt: skip
    (
        "sha512 checksum typed md5",
        M,
        _set("control_plane.image", {**IMAGE, "checksum": "c" * 128, "checksumType": "md5"}),
        "capi_cluster",
        "control_plane.image.checksum",
    ),  # fmt: skip
    (
        "untyped checksum of no algorithm's length",
        M,
        _set("control_plane.image", {"url": IMAGE["url"], "checksum": "d" * 40, "format": "qcow2"}),
        "capi_cluster",
        "control_plane.image.checksum",
    ),  # fmt: skip
    (
        "ftp image URL",
        M,
        _set("workers[0].image.url", "ftp://images.example/node.qcow2"),
        "capi_cluster",
        "workers[0].image.url",
    ),  # fmt: skip
    (
        "image URL without a scheme",
        M,
        _set("control_plane.image.url", "/srv/images/node.qcow2"),
        "capi_cluster",
        "control_plane.image.url",
    ),  # fmt: skip
    (
        "broadcast boot MAC",
        M,
        _set("hosts[0].spec.bootMACAddress", "ff:ff:ff:ff:ff:ff"),
        "BareMetalHost valid/v1-host-0",
        "spec.bootMACAddress",
    ),  # fmt: skip
    (
        "multicast boot MAC",
        M,
        _set("hosts[1].spec.bootMACAddress", "01:00:5e:00:00:fb"),
        "BareMetalHost valid/v1-host-1",
        "spec.bootMACAddress",
    ),  # fmt: skip
    (
        "two hosts with one boot MAC",
        M,
        _set("hosts[1].spec.bootMACAddress", "52-54-00-AA-00-00"),
        "BareMetalHost valid/v1-host-1",
        "spec.bootMACAddress",
    ),  # fmt: skip
    (
        "two hosts with one BMC address",
        M,
        _set("hosts[1].spec.bmc.address", "fake://v1-host-0"),
        "BareMetalHost valid/v1-host-1",
        "spec.bmc.address",
    ),  # fmt: skip
    (
        "pod CIDR overlapping the service CIDR",
        M,
        _set("cluster_network.pods", ["10.128.0.0/16"]),
        "capi_cluster",
        "cluster_network.pods[0]",
    ),  # fmt: skip
    (
        "service CIDR inside the pod CIDR",
        M,
        _set("cluster_network.services", ["192.168.96.0/20"]),
        "capi_cluster",
        "cluster_network.pods[0]",
    ),  # fmt: skip
    (
        "endpoint host an impossible address",
        M,
        _set("control_plane_endpoint.host", "999.1.1.1"),
        "capi_cluster",
        "control_plane_endpoint.host",
    ),  # fmt: skip
    (
        "endpoint host not a DNS name",
        M,
        _set("control_plane_endpoint.host", "api_server.example.com"),
        "capi_cluster",
        "control_plane_endpoint.host",
    ),  # fmt: skip
    (
        "endpoint inside an IP pool",
        M,
        _set("control_plane_endpoint.host", "10.5.0.15"),
        "capi_cluster",
        "control_plane_endpoint.host",
    ),  # fmt: skip
    (
        "worker pool named control-plane",
        M,
        _set("workers[0].name", "control-plane"),
        "capi_cluster",
        "workers[0].name",
    ),  # fmt: skip
    (
        "worker pool name starting control-plane-",
        M,
        _set("workers[0].name", "control-plane-extra"),
        "capi_cluster",
        "workers[0].name",
    ),  # fmt: skip
    (
        "networkData interface no host has",
        M,
        _with_nics("data_template.spec.networkData.links.ethernets[0].macAddress.fromHostInterface", "eno9"),
        "Metal3DataTemplate valid/v1-nodes",
        "spec.networkData.links.ethernets[0].macAddress.fromHostInterface",
    ),  # fmt: skip
    (
        "metaData interface no host has",
        M,
        _with_nics("data_template.spec.metaData.fromHostInterfaces", [{"key": "mac", "interface": "eth7"}]),
        "Metal3DataTemplate valid/v1-nodes",
        "spec.metaData.fromHostInterfaces[0].interface",
    ),  # fmt: skip
    (
        "data template without metaData",
        M,
        _set("data_template.spec.metaData", DELETE),
        "Metal3DataTemplate valid/v1-nodes",
        "spec.metaData",
    ),  # fmt: skip
    (
        "add-on manifest with a secret, not YAML",
        M,
        _set("addons", [{"name": "db", "manifests": [str(ADDONS / "secret-not-yaml.yaml")]}]),
        "capi_cluster.addons[0]",
        "line 6, column 13",
    ),  # fmt: skip
    (
        "MAAS constraints on a Metal3 pool",
        M,
        _set("workers[0].constraints", {"minCPU": 2}),
        "capi_cluster",
        "workers[0].constraints",
    ),  # fmt: skip
]


def _host(name: str, ns: str, mac: str, bmc: str) -> dict:
    return {"apiVersion": "metal3.io/v1alpha1", "kind": "BareMetalHost", "metadata": {"name": name, "namespace": ns},
            "spec": {"bmc": {"address": bmc}, "bootMACAddress": mac, "online": False}}  # fmt: skip


def _ippool(name: str, ns: str, cluster: str, start: str, end: str) -> dict:
    return {"apiVersion": "ipam.metal3.io/v1alpha1", "kind": "IPPool",
            "metadata": {"name": name, "namespace": ns, "labels": {"cluster.x-k8s.io/cluster-name": cluster}},
            "spec": {"namePrefix": name, "prefix": 24, "pools": [{"start": start, "end": end}]}}  # fmt: skip


def _kcp(version: str) -> dict:
    return {"apiVersion": "controlplane.cluster.x-k8s.io/v1beta2", "kind": "KubeadmControlPlane",
            "metadata": {"name": "v1-control-plane", "namespace": "valid",
                         "labels": {"cluster.x-k8s.io/cluster-name": "v1"}},
            "spec": {"replicas": 1, "version": version}}  # fmt: skip


def _md(version: str) -> dict:
    return {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineDeployment",
            "metadata": {"name": "v1-md-0", "namespace": "valid", "labels": {"cluster.x-k8s.io/cluster-name": "v1"}},
            "spec": {"clusterName": "v1", "replicas": 1, "template": {"spec": {"clusterName": "v1",
                                                                                "version": version}}}}  # fmt: skip


def _no(desc):
    return desc


# Bad input that only the store shows: (kind, base, mutation, object named, field named, objects stored first,
# text the message must also hold - the stored object it collides with).
STORED_CASES = [
    (
        "boot MAC of a host stored in another namespace",
        M, _no, "BareMetalHost valid/v1-host-1", "spec.bootMACAddress",
        [_host("old-0", "lab", "52:54:00:AA:00:01", "fake://old-0")], "BareMetalHost lab/old-0",
    ),
    (
        "BMC address of a host stored in another namespace",
        M, _no, "BareMetalHost valid/v1-host-0", "spec.bmc.address",
        [_host("old-1", "lab", "52:54:00:bb:00:01", "fake://v1-host-0")], "BareMetalHost lab/old-1",
    ),
    (
        "IP pool overlapping a stored pool of another cluster",
        M, _no, "IPPool valid/v1-prov", "spec.pools[0]",
        [_ippool("c7-prov", "team-b", "c7", "10.5.0.18", "10.5.0.40")], "IPPool team-b/c7-prov",
    ),
    (
        "IP pool overlapping a stored pool of the namespace",
        M, _no, "IPPool valid/v1-prov", "spec.pools[0]",
        [_ippool("v0-prov", "valid", "v0", "10.5.0.5", "10.5.0.10")], "IPPool valid/v0-prov",
    ),
    (
        "IP pool holding an address already allocated",
        M, _no, "IPPool valid/v1-prov", "spec.pools[0]",
        [{"apiVersion": "ipam.metal3.io/v1alpha1", "kind": "IPAddress",
          "metadata": {"name": "gone-10-5-0-12", "namespace": "lab"},
          "spec": {"address": "10.5.0.12", "prefix": 24, "pool": {"name": "gone"}, "claim": {"name": "x"}}}],
        "IPAddress lab/gone-10-5-0-12",
    ),
    (
        "control-plane upgrade skipping a minor",
        M, _no, "KubeadmControlPlane valid/v1-control-plane", "spec.version",
        [_kcp("v1.32.3")], "cannot update Kubernetes version from v1.32.3 to v1.34.4",
    ),
    (
        "control-plane upgrade skipping three minors",
        M, _set("kubernetes_version", "v1.37.0"), "KubeadmControlPlane valid/v1-control-plane", "spec.version",
        [_kcp("v1.34.1")], "cannot update Kubernetes version from v1.34.1 to v1.37.0",
    ),
    (
        "control-plane downgrade by two minors",
        M, _set("kubernetes_version", "v1.32.0"), "KubeadmControlPlane valid/v1-control-plane", "spec.version",
        [_kcp("v1.34.4")], "downgrade",
    ),
    (
        "workers beyond the kubelet skew",
        M, _no, "capi_cluster", "kubernetes_version",
        [_kcp("v1.33.2"), _md("v1.30.5")], "MachineDeployment valid/v1-md-0",
    ),
]  # fmt: skip


def bad(case) -> dict:
    _kind, base, mutate, _obj, _field = case
    return mutate(base())
