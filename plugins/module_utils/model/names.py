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
MACHINE_NAME_LABEL = "cluster.x-k8s.io/machine-name"  # not a Node label in CAPI; see capi-core.md
PAUSED_ANNOTATION = "cluster.x-k8s.io/paused"
CLONED_FROM_NAME_ANNOTATION = "cluster.x-k8s.io/cloned-from-name"
CLONED_FROM_GROUPKIND_ANNOTATION = "cluster.x-k8s.io/cloned-from-groupkind"
DELETE_MACHINE_ANNOTATION = "cluster.x-k8s.io/delete-machine"
REMEDIATE_MACHINE_ANNOTATION = "cluster.x-k8s.io/remediate-machine"
NODE_UNINITIALIZED_TAINT = "node.cluster.x-k8s.io/uninitialized"
MACHINE_FINALIZER = "machine.cluster.x-k8s.io"
CLUSTER_FINALIZER = "cluster.cluster.x-k8s.io"
KUBECONFIG_SECRET_SUFFIX = "-kubeconfig"
CLUSTER_SECRET_TYPE = "cluster.x-k8s.io/secret"

# Machine phases (capi-core.md §2.3)
PHASE_PENDING = "Pending"
PHASE_PROVISIONING = "Provisioning"
PHASE_PROVISIONED = "Provisioned"
PHASE_RUNNING = "Running"
PHASE_DELETING = "Deleting"
PHASE_DELETED = "Deleted"
PHASE_FAILED = "Failed"
PHASE_UNKNOWN = "Unknown"

# Condition types shared by the providers
READY = "Ready"
PAUSED = "Paused"
OWNER_REMEDIATED = "OwnerRemediated"
HEALTH_CHECK_SUCCEEDED = "HealthCheckSucceeded"

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

# --- baremetal-operator (metal3.io) ---------------------------------------
BMH_PAUSED_ANNOTATION = "baremetalhost.metal3.io/paused"
BMH_DETACHED_ANNOTATION = "baremetalhost.metal3.io/detached"
BMH_STATUS_ANNOTATION = "baremetalhost.metal3.io/status"
BMH_FINALIZER = "baremetalhost.metal3.io"
REBOOT_ANNOTATION = "reboot.metal3.io"
INSPECT_ANNOTATION = "inspect.metal3.io"
HARDWARE_DETAILS_ANNOTATION = "inspect.metal3.io/hardwaredetails"

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

# --- this collection -------------------------------------------------------
MAAS_REMEDIATION_FINALIZER = "maasremediation.remediation.capi.baremetal.io"
