"""Upstream label, annotation, finalizer, condition and providerID strings, defined once.

Grouped by where they come from.  Add to the group a string belongs to;
import from here everywhere else.
"""

from __future__ import annotations

# --- Cluster API core (cluster.x-k8s.io) ---------------------------------
CLUSTER_NAME_LABEL = "cluster.x-k8s.io/cluster-name"
CONTROL_PLANE_LABEL = "cluster.x-k8s.io/control-plane"
CONTROL_PLANE_NAME_LABEL = "cluster.x-k8s.io/control-plane-name"
DEPLOYMENT_NAME_LABEL = "cluster.x-k8s.io/deployment-name"
SET_NAME_LABEL = "cluster.x-k8s.io/set-name"
# not a Node label in CAPI (cluster-api internal/controllers/machine/machine_controller_noderef.go)
MACHINE_NAME_LABEL = "cluster.x-k8s.io/machine-name"
PAUSED_ANNOTATION = "cluster.x-k8s.io/paused"
CLONED_FROM_NAME_ANNOTATION = "cluster.x-k8s.io/cloned-from-name"
CLONED_FROM_GROUPKIND_ANNOTATION = "cluster.x-k8s.io/cloned-from-groupkind"
DELETE_MACHINE_ANNOTATION = "cluster.x-k8s.io/delete-machine"
# ours: the ClusterResourceSets (and their ConfigMaps) written from a cluster description's add-ons
ADDON_FROM_DESCRIPTION_LABEL = "addons.capi.baremetal.io/from-description"
REMEDIATE_MACHINE_ANNOTATION = "cluster.x-k8s.io/remediate-machine"
NODE_UNINITIALIZED_TAINT = "node.cluster.x-k8s.io/uninitialized"
MACHINE_FINALIZER = "machine.cluster.x-k8s.io"
CLUSTER_FINALIZER = "cluster.cluster.x-k8s.io"
KUBECONFIG_SECRET_SUFFIX = "-kubeconfig"
CLUSTER_SECRET_TYPE = "cluster.x-k8s.io/secret"
KUBECONFIG_SECRET_KEY = "value"
# Annotations and label domains the Machine controller keeps on a Node (cluster-api
# internal/controllers/machine/machine_controller_noderef.go reconcileNode)
CLUSTER_NAME_ANNOTATION = "cluster.x-k8s.io/cluster-name"
CLUSTER_NAMESPACE_ANNOTATION = "cluster.x-k8s.io/cluster-namespace"
MACHINE_ANNOTATION = "cluster.x-k8s.io/machine"
OWNER_KIND_ANNOTATION = "cluster.x-k8s.io/owner-kind"
OWNER_NAME_ANNOTATION = "cluster.x-k8s.io/owner-name"
LABELS_FROM_MACHINE_ANNOTATION = "cluster.x-k8s.io/labels-from-machine"
NODE_ROLE_LABEL_DOMAIN = "node-role.kubernetes.io"
NODE_RESTRICTION_LABEL_DOMAIN = "node-restriction.kubernetes.io"
MANAGED_NODE_LABEL_DOMAIN = "node.cluster.x-k8s.io"
PRE_DRAIN_HOOK_PREFIX = "pre-drain.delete.hook.machine.cluster.x-k8s.io"
PRE_TERMINATE_HOOK_PREFIX = "pre-terminate.delete.hook.machine.cluster.x-k8s.io"
KCP_CLEANUP_HOOK = "pre-terminate.delete.hook.machine.cluster.x-k8s.io/kcp-cleanup"
KCP_FINALIZER = "kubeadm.controlplane.cluster.x-k8s.io"
# On the KubeadmConfig (or the Machine, which wins): when the machine's certificates expire, RFC 3339
CERTIFICATES_EXPIRY_ANNOTATION = "machine.cluster.x-k8s.io/certificates-expiry"
EXCLUDE_NODE_DRAINING_ANNOTATION = "machine.cluster.x-k8s.io/exclude-node-draining"
EXCLUDE_WAIT_FOR_NODE_VOLUME_DETACH_ANNOTATION = "machine.cluster.x-k8s.io/exclude-wait-for-node-volume-detach"
NODE_DELETION_TIMEOUT_DEFAULT = 10  # seconds; the Machine webhook's default
# Node drain: Pods labelled cluster.x-k8s.io/drain=skip stay, =wait-completed are waited for, never evicted
DRAIN_LABEL = "cluster.x-k8s.io/drain"
DRAIN_SKIP = "skip"
DRAIN_WAIT_COMPLETED = "wait-completed"
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"

# Machine phases (cluster-api internal/controllers/machine/machine_controller_status.go setMachinePhaseAndLastUpdated)
PHASE_PENDING = "Pending"
PHASE_PROVISIONING = "Provisioning"
PHASE_PROVISIONED = "Provisioned"
PHASE_RUNNING = "Running"
PHASE_DELETING = "Deleting"
PHASE_DELETED = "Deleted"
PHASE_FAILED = "Failed"
PHASE_UNKNOWN = "Unknown"
PHASE_UPDATING = "Updating"
# Cluster phases (cluster-api internal/controllers/cluster/cluster_controller_phases.go reconcilePhase)
CLUSTER_PHASE_PENDING = "Pending"
CLUSTER_PHASE_PROVISIONING = "Provisioning"
CLUSTER_PHASE_PROVISIONED = "Provisioned"
CLUSTER_PHASE_DELETING = "Deleting"

# Condition types shared by the providers
READY = "Ready"
PAUSED = "Paused"
OWNER_REMEDIATED = "OwnerRemediated"
HEALTH_CHECK_SUCCEEDED = "HealthCheckSucceeded"
AVAILABLE = "Available"
DELETING = "Deleting"
UPDATING = "Updating"
INFRASTRUCTURE_READY = "InfrastructureReady"
BOOTSTRAP_CONFIG_READY = "BootstrapConfigReady"
NODE_READY = "NodeReady"
NODE_HEALTHY = "NodeHealthy"
ROLLING_OUT = "RollingOut"
SCALING_UP = "ScalingUp"
SCALING_DOWN = "ScalingDown"
REMEDIATING = "Remediating"
# Conditions whose True is the unhealthy state (cluster-api internal/util/tree: negativePolarityConditions)
NEGATIVE_POLARITY_CONDITIONS = (PAUSED, DELETING, ROLLING_OUT, SCALING_UP, SCALING_DOWN, UPDATING, REMEDIATING)
# Condition reasons (v1beta2, cluster.x-k8s.io/api/core/v1beta2 *_conditions.go)
READY_REASON = "Ready"
NOT_READY_REASON = "NotReady"
PAUSED_REASON = "Paused"
NOT_PAUSED_REASON = "NotPaused"
DELETING_REASON = "Deleting"
NOT_DELETING_REASON = "NotDeleting"
DELETING_DRAINING_NODE_REASON = "DrainingNode"
DELETING_WAITING_FOR_VOLUME_DETACH_REASON = "WaitingForVolumeDetach"
DELETING_WAITING_FOR_PRE_TERMINATE_HOOK_REASON = "WaitingForPreTerminateHook"
UP_TO_DATE = "UpToDate"
UP_TO_DATE_REASON = "UpToDate"
NOT_UP_TO_DATE_REASON = "NotUpToDate"
INFRASTRUCTURE_READY_REASON = "InfrastructureReady"
INFRASTRUCTURE_NOT_READY_REASON = "InfrastructureNotReady"
INFRASTRUCTURE_DOES_NOT_EXIST_REASON = "InfrastructureDoesNotExist"
INFRASTRUCTURE_DELETED_REASON = "InfrastructureDeleted"
BOOTSTRAP_CONFIG_READY_REASON = "BootstrapConfigReady"
BOOTSTRAP_CONFIG_NOT_READY_REASON = "BootstrapConfigNotReady"
NODE_READY_REASON = "NodeReady"
NODE_NOT_READY_REASON = "NodeNotReady"
NODE_READY_UNKNOWN_REASON = "NodeReadyUnknown"
NODE_DOES_NOT_EXIST_REASON = "NodeDoesNotExist"
NODE_DELETED_REASON = "NodeDeleted"
WAITING_FOR_CLUSTER_INFRASTRUCTURE_READY_REASON = "WaitingForClusterInfrastructureReady"
WAITING_FOR_BOOTSTRAP_DATA_REASON = "WaitingForBootstrapData"

# --- KubeadmControlPlane remediation and CABPK certificates ----------------
# (api/controlplane/kubeadm/v1beta2: annotations, the Machine OwnerRemediated reasons, the Machine conditions)
REMEDIATION_IN_PROGRESS_ANNOTATION = "controlplane.cluster.x-k8s.io/remediation-in-progress"
REMEDIATION_FOR_ANNOTATION = "controlplane.cluster.x-k8s.io/remediation-for"
KCP_CANNOT_BE_REMEDIATED_REASON = "CannotBeRemediated"
KCP_REMEDIATION_DEFERRED_REASON = "RemediationDeferred"
KCP_REMEDIATION_MACHINE_DELETING_REASON = "MachineDeleting"
# the KubeadmControlPlane's Deleting condition (KubeadmControlPlaneDeleting*Reason)
KCP_DELETING_WAITING_FOR_WORKERS_REASON = "WaitingForWorkersDeletion"
KCP_DELETING_WAITING_FOR_MACHINE_DELETION_REASON = "WaitingForMachineDeletion"
KCP_DEFAULT_MIN_HEALTHY_PERIOD_SECONDS = 3600
KCP_MACHINE_API_SERVER_POD_HEALTHY = "APIServerPodHealthy"
KCP_MACHINE_CONTROLLER_MANAGER_POD_HEALTHY = "ControllerManagerPodHealthy"
KCP_MACHINE_SCHEDULER_POD_HEALTHY = "SchedulerPodHealthy"
KCP_MACHINE_ETCD_POD_HEALTHY = "EtcdPodHealthy"
KCP_MACHINE_ETCD_MEMBER_HEALTHY = "EtcdMemberHealthy"

# --- CAPM3 (infrastructure.cluster.x-k8s.io, Metal3*) --------------------
METAL3_CLUSTER_FINALIZER = "metal3cluster.infrastructure.cluster.x-k8s.io"
METAL3_MACHINE_FINALIZER = "metal3machine.infrastructure.cluster.x-k8s.io"
METAL3_DATA_TEMPLATE_FINALIZER = "metal3datatemplate.infrastructure.cluster.x-k8s.io"
METAL3_DATA_FINALIZER = "metal3data.infrastructure.cluster.x-k8s.io"
METAL3_DATA_CLAIM_FINALIZER = "metal3dataclaim.infrastructure.cluster.x-k8s.io"
METAL3_REMEDIATION_FINALIZER = "metal3remediation.infrastructure.cluster.x-k8s.io"
HOST_ANNOTATION = "metal3.io/BareMetalHost"
NODE_REUSE_LABEL = "infrastructure.cluster.x-k8s.io/node-reuse"
FAILURE_DOMAIN_LABEL = "infrastructure.cluster.x-k8s.io/failure-domain"
DATA_NAME_LABEL = "infrastructure.cluster.x-k8s.io/data-name"
POOL_NAME_LABEL = "infrastructure.cluster.x-k8s.io/pool-name"
UNHEALTHY_ANNOTATION = "capm3.metal3.io/unhealthy"
UNHEALTHY_ANNOTATION_DEPRECATED = "capi.metal3.io/unhealthy"
LABEL_SYNC_PREFIXES_ANNOTATION = "metal3.io/metal3-label-sync-prefixes"
METAL3_UUID_NODE_LABEL = "metal3.io/uuid"
METAL3_PROVIDER_ID_PREFIX = "metal3://"
PAUSED_ANNOTATION_VALUE_CAPM3 = "metal3.io/capm3"
NODE_ANNOTATIONS_BACKUP = "remediation.metal3.io/node-annotations-backup"
NODE_LABELS_BACKUP = "remediation.metal3.io/node-labels-backup"
REBOOT_REMEDIATION_PREFIX = "reboot.metal3.io/metal3-remediation-"
BLOCK_MOVE_ANNOTATION = "clusterctl.cluster.x-k8s.io/block-move"
FAST_TRACK_ENV = "CAPM3_FAST_TRACK"
METAL3_CLUSTER_DEFAULT_PORT = 6443
# Metal3Cluster conditions and reasons (v1beta2)
BAREMETAL_INFRASTRUCTURE_READY = "BaremetalInfrastructureReady"
CONTROL_PLANE_ENDPOINT_FAILED_REASON = "ControlPlaneEndpointFailed"
INTERNAL_FAILURE_REASON = "InternalFailureOccured"  # sic, upstream spelling
# Metal3Machine conditions and reasons (v1beta2)
ASSOCIATE_BMH = "AssociateBareMetalHost"
ASSOCIATE_BMH_SUCCESS_REASON = "AssociateBareMetalHostSuccess"
ASSOCIATE_BMH_VIA_NODE_REUSE_SUCCESS_REASON = "AssociateBareMetalHostViaNodeReuseSuccess"
ASSOCIATE_BMH_FAILED_REASON = "AssociateBareMetalHostFailed"
WAITING_FOR_METAL3_MACHINE_OWNER_REF_REASON = "WaitingForMetal3MachineOwnerRef"
WAITING_FOR_METAL3_CLUSTER_REASON = "WaitingforMetal3Cluster"  # sic
ASSOCIATE_METADATA = "AssociateMetal3MachineMetaData"
ASSOCIATE_METADATA_SUCCESS_REASON = "AssociateMetal3MachineMetaDataSuccess"
ASSOCIATE_METADATA_FAILED_REASON = "AssociateMetal3MachineMetaDataFailed"
METAL3_DATA_READY = "Metal3DataReady"
WAITING_FOR_METAL3_DATA_REASON = "WaitingForMetal3Data"
METAL3_DATA_SECRETS_READY_REASON = "Metal3DataSecretsReady"
METAL3_MACHINE_PAUSED_REASON = "Metal3MachinePaused"
DELETION_FAILED_REASON = "DeletionFailed"

# --- baremetal-operator (metal3.io) ---------------------------------------
BMH_PAUSED_ANNOTATION = "baremetalhost.metal3.io/paused"
BMH_DETACHED_ANNOTATION = "baremetalhost.metal3.io/detached"
BMH_STATUS_ANNOTATION = "baremetalhost.metal3.io/status"
BMH_FINALIZER = "baremetalhost.metal3.io"
REBOOT_ANNOTATION = "reboot.metal3.io"
INSPECT_ANNOTATION = "inspect.metal3.io"
HARDWARE_DETAILS_ANNOTATION = "inspect.metal3.io/hardwaredetails"

# BareMetalHost status.provisioning.state (baremetal-operator apis/metal3.io/v1alpha1/baremetalhost_types.go
# ProvisioningState)
BMH_STATE_NONE = ""
BMH_STATE_UNMANAGED = "unmanaged"
BMH_STATE_REGISTERING = "registering"
BMH_STATE_MATCH_PROFILE = "match profile"
BMH_STATE_PREPARING = "preparing"
BMH_STATE_READY = "ready"
BMH_STATE_AVAILABLE = "available"
BMH_STATE_PROVISIONING = "provisioning"
BMH_STATE_PROVISIONED = "provisioned"
BMH_STATE_EXTERNALLY_PROVISIONED = "externally provisioned"
BMH_STATE_DEPROVISIONING = "deprovisioning"
BMH_STATE_INSPECTING = "inspecting"
BMH_STATE_POWERING_OFF_BEFORE_DELETE = "powering off before delete"
BMH_STATE_DELETING = "deleting"

# BareMetalHost status.errorType (baremetal-operator apis/metal3.io/v1alpha1/baremetalhost_types.go ErrorType)
BMH_ERROR_REGISTRATION = "registration error"
BMH_ERROR_INSPECTION = "inspection error"
BMH_ERROR_PREPARATION = "preparation error"
BMH_ERROR_PROVISIONING = "provisioning error"
BMH_ERROR_POWER = "power management error"
BMH_ERROR_PROVISIONED_REGISTRATION = "provisioned registration error"
BMH_ERROR_DETACH = "detach error"
BMH_ERROR_SERVICING = "servicing error"
# BMO --max-provisioning-retries: failed deploys of one image before provisioning stops (0: no limit)
BMH_MAX_PROVISIONING_RETRIES = 5

# HostFirmwareSettings / HostFirmwareComponents (BMO hostfirmwaresettings_types.go, hostfirmwarecomponents_types.go)
HFS_KIND = "HostFirmwareSettings"
HFC_KIND = "HostFirmwareComponents"
FIRMWARE_SCHEMA_KIND = "FirmwareSchema"
FIRMWARE_CHANGE_DETECTED = "ChangeDetected"  # the spec differs from the status
FIRMWARE_VALID = "Valid"  # the spec can be configured on the host
HFS_REASON_SUCCESS = "Success"
HFS_REASON_CONFIGURATION_ERROR = "ConfigurationError"
HFC_REASON_OK = "OK"
HFC_REASON_INVALID_COMPONENT = "InvalidComponent"

# BareMetalHost status.operationalStatus
BMH_OPERATIONAL_OK = "OK"
BMH_OPERATIONAL_DISCOVERED = "discovered"
BMH_OPERATIONAL_ERROR = "error"
BMH_OPERATIONAL_DELAYED = "delayed"
BMH_OPERATIONAL_DETACHED = "detached"

# spec.automatedCleaningMode, spec.image.format (diskFormat in CAPM3), reboot modes
CLEANING_MODE_METADATA = "metadata"
CLEANING_MODE_DISABLED = "disabled"
IMAGE_FORMAT_LIVE_ISO = "live-iso"
IMAGE_FORMATS = ("raw", "qcow2", "vdi", "vmdk", "live-iso")
CHECKSUM_TYPES = ("md5", "sha256", "sha512", "auto")
REBOOT_MODE_HARD = "hard"
REBOOT_MODE_SOFT = "soft"
# Ironic maintenance reason BMO sets before deleting a node in an unstable state
IRONIC_FORCED_DELETE_REASON = "forcing deletion in baremetal-operator"

# --- IPAM (ipam.metal3.io) -----------------------------------------------
IPPOOL_FINALIZER = "ippool.ipam.metal3.io"
IPCLAIM_FINALIZER = "ipclaim.ipam.metal3.io"
IPADDRESS_FINALIZER = "ipaddress.ipam.metal3.io"
CAPI_IPADDRESSCLAIM_FINALIZER = "ipam.metal3.io/ipaddressclaim"
CAPI_IPADDRESS_FINALIZER = "ipam.metal3.io/ipaddress"
IPADDRESS_ANNOTATION = "ipAddress"

# --- CAPMAAS ---------------------------------------------------------------
MAAS_CLUSTER_FINALIZER = "maascluster.infrastructure.cluster.x-k8s.io"
MAAS_MACHINE_FINALIZER = "maasmachine.infrastructure.cluster.x-k8s.io"
MAAS_PROVIDER_ID_PREFIX = "maas:///"
MAAS_DNS_TTL = 10  # the DNS resource's address_ttl (pkg/maas/dns/dns.go)
MAAS_DEFAULT_API_PORT = 6443
MAAS_API_SERVER_READY_LABEL = "cluster-api-maas/api-server-ready"  # on the workload kube-system namespace
MAAS_PREFERRED_SUBNET_CONFIGMAP = "maas-preferred-subnet"  # spectro-master (PCP-6608)
MAAS_PREFERRED_SUBNET_KEY = "preferredSubnets"
MAAS_POWER_ON_COMMENT = "maas provider power on"
MAAS_CUSTOM_OSYSTEM = "custom"  # an image name without "/" (splitImage)
# MaasCluster conditions and reasons (api/v1beta1/condition_consts.go)
MAAS_LOAD_BALANCER_READY = "LoadBalancerReady"  # const DNSReadyCondition
MAAS_LOAD_BALANCER_READY_REASON = "LoadBalancerReady"
MAAS_LOAD_BALANCER_FAILED_REASON = "LoadBalancerFailed"
MAAS_WAIT_FOR_DNS_NAME_REASON = "WaitForDNSName"
MAAS_API_SERVER_AVAILABLE = "APIServerAvailable"
MAAS_API_SERVER_AVAILABLE_REASON = "APIServerAvailable"
MAAS_API_SERVER_NOT_READY_REASON = "APIServerNotReady"
# MaasMachine conditions and reasons
MAAS_MACHINE_DEPLOYED = "MachineDeployed"
MAAS_MACHINE_DEPLOYED_REASON = "MachineDeployed"
MAAS_DELETED_REASON = "Deleted"
MAAS_WAITING_FOR_CLUSTER_INFRASTRUCTURE_REASON = "WaitingForClusterInfrastructure"
MAAS_WAITING_FOR_BOOTSTRAP_DATA_REASON = "WaitingForBootstrapData"
MAAS_MACHINE_DEPLOYING_REASON = "MachineDeploying"
MAAS_MACHINE_TERMINATED_REASON = "MachineTerminatedReason"
MAAS_MACHINE_POWERED_OFF_REASON = "MachinePoweredOff"
MAAS_MACHINE_STATE_UNDEFINED_REASON = "MachineStateUndefined"
MAAS_MACHINE_NOT_FOUND_REASON = "MachineNotFound"
MAAS_MACHINE_DEPLOY_FAILED_REASON = "MachineDeployFailed"
MAAS_MACHINE_DEPLOY_STARTED_REASON = "MachineDeployStartedReason"
MAAS_DNS_ATTACHED = "DNSAttached"
MAAS_DNS_ATTACHED_REASON = "DNSAttached"
MAAS_DNS_ATTACH_PENDING_REASON = "DNSAttachPending"
MAAS_DNS_DETACH_PENDING_REASON = "DNSDetachPending"
MAAS_UPDATE_MACHINE_ERROR = "UpdateMachineError"  # capi MachineStatusError
# MAAS machine status_name values (maas src/maascommon/enums/node.py NodeStatus, labels in src/maascommon/node.py)
# and CAPMAAS's sets (cluster-api-provider-maas api/v1beta1/types.go)
MAAS_STATE_NEW = "New"
MAAS_STATE_READY = "Ready"
MAAS_STATE_ALLOCATED = "Allocated"
MAAS_STATE_DEPLOYING = "Deploying"
MAAS_STATE_DEPLOYED = "Deployed"
MAAS_STATE_RELEASING = "Releasing"
MAAS_STATE_DISK_ERASING = "Disk erasing"
MAAS_STATE_FAILED_DEPLOYMENT = "Failed deployment"
MAAS_STATE_BROKEN = "Broken"
MAAS_STATES_RUNNING = (MAAS_STATE_DEPLOYING, MAAS_STATE_DEPLOYED)
MAAS_STATES_OPERATIONAL = MAAS_STATES_RUNNING + (MAAS_STATE_ALLOCATED,)
MAAS_STATES_TERMINATED = (MAAS_STATE_DISK_ERASING, MAAS_STATE_RELEASING, MAAS_STATE_READY, MAAS_STATE_NEW)
MAAS_STATES_FAILED = (MAAS_STATE_FAILED_DEPLOYMENT, MAAS_STATE_BROKEN)
# This collection: machines whose deployment failed for a MaasMachine, "<system_id>@<epoch s>,...", kept out of
# its allocations for MAAS_FAILED_COOLDOWN seconds (CAPMAAS would take the same machine again at once).
MAAS_FAILED_MACHINES_ANNOTATION = "maas.capi.baremetal.io/failed-system-ids"
MAAS_FAILED_COOLDOWN = 600
MAAS_STATE_COMMISSIONING = "Commissioning"
MAAS_STATE_FAILED_COMMISSIONING = "Failed commissioning"
# CAPMAAS's LXD VM path (spec.lxd, controllers/maasmachine_controller.go createVMViaMAAS / PrepareLXDVM)
MAAS_VM_NAME_ANNOTATION = "maas.spectrocloud.com/vm-name"
MAAS_POWER_TYPE_LXD = "lxd"
MAAS_LXD_DEFAULT_DISK_GB = 60  # lxd.vmConfig.diskSize default

# --- this collection -------------------------------------------------------
# MAAS remediation (CAPMAAS has none): the power-off request on the MaasMachine, shaped like Metal3's, and
# the tag a machine gets at the retry limit, which allocation always excludes (not_tags).
MAAS_POWER_OFF_PREFIX = "reboot.metal3.io/maas-remediation-"
MAAS_UNHEALTHY_TAG = "capi-unhealthy"
MAAS_REMEDIATION_FINALIZER = "maasremediation.remediation.capi.baremetal.io"
