"""Every kind of the object model, with its apiVersion, plural and scope.

A kind is named by its plain name when that is unique ("Metal3Machine"), or
qualified by its group when it is not ("IPAddress.ipam.metal3.io" versus
"IPAddress.ipam.cluster.x-k8s.io").  ``resolve`` accepts either, or a plain
name plus an apiVersion.
"""

from __future__ import annotations

from dataclasses import dataclass

from ansible_collections.baremetal.capi.plugins.module_utils.errors import UnknownKind

CAPI_GROUP = "cluster.x-k8s.io"
CONTROLPLANE_GROUP = "controlplane.cluster.x-k8s.io"
BOOTSTRAP_GROUP = "bootstrap.cluster.x-k8s.io"
INFRA_GROUP = "infrastructure.cluster.x-k8s.io"
M3IPAM_GROUP = "ipam.metal3.io"
CAPI_IPAM_GROUP = "ipam.cluster.x-k8s.io"
BMO_GROUP = "metal3.io"
REMEDIATION_GROUP = "remediation.capi.baremetal.io"
ADDONS_GROUP = "addons.cluster.x-k8s.io"


@dataclass(frozen=True)
class Kind:
    kind: str
    group: str
    version: str
    plural: str
    namespaced: bool = True
    short_names: tuple = ()
    status_subresource: bool = True
    # Node keeps the status it is created with (kubelet registers with it);
    # custom resources with a status subresource drop it on create.
    status_on_create: bool = False

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def key(self) -> str:
        """The qualified name, unique across the model."""
        return f"{self.kind}.{self.group}" if self.group else self.kind

    @property
    def core(self) -> bool:
        return self.group == ""

    @property
    def crd_name(self) -> str:
        return f"{self.plural}.{self.group}"


def _k(kind, group, version, plural, short=(), **kw) -> Kind:
    return Kind(kind, group, version, plural, short_names=tuple(short), **kw)


ALL: tuple[Kind, ...] = (
    _k("Cluster", CAPI_GROUP, "v1beta2", "clusters", ("cl",)),
    _k("Machine", CAPI_GROUP, "v1beta2", "machines", ("ma",)),
    _k("MachineSet", CAPI_GROUP, "v1beta2", "machinesets", ("ms",)),
    _k("MachineDeployment", CAPI_GROUP, "v1beta2", "machinedeployments", ("md",)),
    _k("MachineHealthCheck", CAPI_GROUP, "v1beta2", "machinehealthchecks", ("mhc",)),
    _k("ClusterResourceSet", ADDONS_GROUP, "v1beta2", "clusterresourcesets", ("crs",)),
    _k("ClusterResourceSetBinding", ADDONS_GROUP, "v1beta2", "clusterresourcesetbindings", status_subresource=False),
    _k("KubeadmControlPlane", CONTROLPLANE_GROUP, "v1beta2", "kubeadmcontrolplanes", ("kcp",)),
    _k("KubeadmConfig", BOOTSTRAP_GROUP, "v1beta2", "kubeadmconfigs"),
    _k("KubeadmConfigTemplate", BOOTSTRAP_GROUP, "v1beta2", "kubeadmconfigtemplates", status_subresource=False),
    _k("Metal3Cluster", INFRA_GROUP, "v1beta2", "metal3clusters", ("m3c",)),
    _k("Metal3ClusterTemplate", INFRA_GROUP, "v1beta2", "metal3clustertemplates", ("m3ct",), status_subresource=False),
    _k("Metal3Machine", INFRA_GROUP, "v1beta2", "metal3machines", ("m3m",)),
    _k("Metal3MachineTemplate", INFRA_GROUP, "v1beta2", "metal3machinetemplates", ("m3mt",), status_subresource=False),
    _k("Metal3DataTemplate", INFRA_GROUP, "v1beta2", "metal3datatemplates", ("m3dt",)),
    _k("Metal3DataClaim", INFRA_GROUP, "v1beta2", "metal3dataclaims", ("m3dc",)),
    _k("Metal3Data", INFRA_GROUP, "v1beta2", "metal3datas", ("m3d",)),
    _k("Metal3Remediation", INFRA_GROUP, "v1beta2", "metal3remediations", ("m3r",)),
    _k("Metal3RemediationTemplate", INFRA_GROUP, "v1beta2", "metal3remediationtemplates", ("m3rt",)),
    _k("IPPool", M3IPAM_GROUP, "v1alpha1", "ippools", ("ipp",)),
    _k("IPClaim", M3IPAM_GROUP, "v1alpha1", "ipclaims", ("ipc",)),
    _k("IPAddress", M3IPAM_GROUP, "v1alpha1", "ipaddresses", ("ipa",), status_subresource=False),
    _k("IPAddressClaim", CAPI_IPAM_GROUP, "v1beta2", "ipaddressclaims"),
    _k("IPAddress", CAPI_IPAM_GROUP, "v1beta2", "ipaddresses", status_subresource=False),
    _k("BareMetalHost", BMO_GROUP, "v1alpha1", "baremetalhosts", ("bmh", "bmhost")),
    _k("HardwareData", BMO_GROUP, "v1alpha1", "hardwaredata", ("hd",), status_subresource=False),
    _k("HostFirmwareSettings", BMO_GROUP, "v1alpha1", "hostfirmwaresettings", ("hfs",)),
    _k("HostFirmwareComponents", BMO_GROUP, "v1alpha1", "hostfirmwarecomponents"),
    _k("FirmwareSchema", BMO_GROUP, "v1alpha1", "firmwareschemas", status_subresource=False),
    _k("MaasCluster", INFRA_GROUP, "v1beta1", "maasclusters"),
    _k("MaasMachine", INFRA_GROUP, "v1beta1", "maasmachines"),
    _k("MaasMachineTemplate", INFRA_GROUP, "v1beta1", "maasmachinetemplates", status_subresource=False),
    _k("MaasRemediation", REMEDIATION_GROUP, "v1alpha1", "maasremediations", ("maasr",)),
    _k("Secret", "", "v1", "secrets", status_subresource=False),
    _k("ConfigMap", "", "v1", "configmaps", ("cm",), status_subresource=False),
    _k("Namespace", "", "v1", "namespaces", ("ns",), namespaced=False),
    _k("Node", "", "v1", "nodes", ("no",), namespaced=False, status_on_create=True),
)

BY_KEY: dict[str, Kind] = {k.key: k for k in ALL}
_BY_NAME: dict[str, list[Kind]] = {}
for _kind in ALL:
    _BY_NAME.setdefault(_kind.kind, []).append(_kind)

# The qualified names of the two IPAddress kinds, for code that needs one.
M3_IPADDRESS = "IPAddress.ipam.metal3.io"
CAPI_IPADDRESS = "IPAddress.ipam.cluster.x-k8s.io"


def resolve(kind, api_version: str | None = None) -> Kind:
    """The Kind for a plain or qualified kind name (optionally with its apiVersion)."""
    if isinstance(kind, Kind):
        return kind
    if not isinstance(kind, str) or not kind:
        raise UnknownKind(f"kind must be a non-empty string, got {kind!r}")
    if api_version:
        group, _sep, version = api_version.rpartition("/")
        found = BY_KEY.get(f"{kind}.{group}" if group else kind)
        if found is None:
            raise UnknownKind(
                f"unknown kind {kind!r} in apiVersion {api_version!r}; known: {', '.join(sorted(BY_KEY))}"
            )
        if found.version != version:
            # Older served versions convert on input (see model.convert); the
            # group decides the kind.
            pass
        return found
    if kind in BY_KEY:
        return BY_KEY[kind]
    found_list = _BY_NAME.get(kind)
    if not found_list:
        raise UnknownKind(f"unknown kind {kind!r}; known: {', '.join(sorted(BY_KEY))}")
    if len(found_list) > 1:
        raise UnknownKind(f"kind {kind!r} is ambiguous; say one of {', '.join(k.key for k in found_list)}")
    return found_list[0]


def of(obj: dict) -> Kind:
    """The Kind of an object dict (from its apiVersion and kind)."""
    if not isinstance(obj, dict):
        raise UnknownKind(f"an object must be a mapping, got {type(obj).__name__}")
    return resolve(obj.get("kind"), obj.get("apiVersion"))
