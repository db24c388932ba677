# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What the API server's conversion, defaulting and validating webhooks do to an object before it is written.

No webhook server runs in front of the embedded store (nor, for our own CRDs, in front of a management
cluster), so writes that take a whole object from the user (the ``object`` module) pass it through
``admit`` first: older field names are converted to the stored version, the upstream defaults are
applied, and the upstream validation rules run, raising Invalid with the object and field named before
anything is written.  The provider flows call the same validators themselves.
"""

from __future__ import annotations

from ansible_collections.baremetal.capi.plugins.module_utils.model import convert, kinds


def _registry() -> dict:
    # Imported here: the flows import much, and most writes never need them.
    from ansible_collections.baremetal.capi.plugins.module_utils.capi import addons, control_plane, deployment
    from ansible_collections.baremetal.capi.plugins.module_utils.maas import cluster as maas_cluster
    from ansible_collections.baremetal.capi.plugins.module_utils.maas import state as maas_state
    from ansible_collections.baremetal.capi.plugins.module_utils.metal3 import cluster as m3_cluster
    from ansible_collections.baremetal.capi.plugins.module_utils.metal3 import data_webhooks, host_spec, ipaddr
    from ansible_collections.baremetal.capi.plugins.module_utils.metal3 import host_firmware_webhooks as hfw
    from ansible_collections.baremetal.capi.plugins.module_utils.model import template_webhooks as tw
    from ansible_collections.baremetal.capi.plugins.module_utils.remediation import common as remediation

    def plain(validate):
        return lambda obj, old: validate(obj)

    def both(first, then):
        # the rule that compares with the old object first: upstream refuses the update before anything else
        def run(obj, old):
            then(obj, old)
            first(obj)

        return run

    return {
        # kind key: (default(obj) -> obj or None, validate(obj, old))
        "Metal3Cluster.infrastructure.cluster.x-k8s.io": (m3_cluster.default, plain(m3_cluster.validate)),
        "Metal3Machine.infrastructure.cluster.x-k8s.io": (None, plain(host_spec.validate)),
        "Metal3DataTemplate.infrastructure.cluster.x-k8s.io": (
            data_webhooks.default_template,
            data_webhooks.validate_template,
        ),
        "Metal3Data.infrastructure.cluster.x-k8s.io": (None, data_webhooks.validate_data),
        "Metal3DataClaim.infrastructure.cluster.x-k8s.io": (None, data_webhooks.validate_claim),
        "Metal3Remediation.infrastructure.cluster.x-k8s.io": (
            remediation.default_remediation,
            plain(remediation.validate_remediation),
        ),
        "Metal3RemediationTemplate.infrastructure.cluster.x-k8s.io": (
            remediation.default_template,
            plain(remediation.validate_template),
        ),
        "IPPool.ipam.metal3.io": (None, ipaddr.validate_pool),
        "IPClaim.ipam.metal3.io": (None, ipaddr.validate_claim),
        "IPAddress.ipam.metal3.io": (None, tw.validate_metal3_ipaddress),
        "Metal3MachineTemplate.infrastructure.cluster.x-k8s.io": (None, tw.validate_metal3_machine_template),
        "Metal3ClusterTemplate.infrastructure.cluster.x-k8s.io": (None, tw.validate_metal3_cluster_template),
        "MaasCluster.infrastructure.cluster.x-k8s.io": (None, both(maas_cluster.validate, tw.validate_maas_cluster)),
        "MaasMachine.infrastructure.cluster.x-k8s.io": (None, both(maas_state.validate, tw.validate_maas_machine)),
        "MaasMachineTemplate.infrastructure.cluster.x-k8s.io": (None, tw.validate_maas_machine_template),
        "KubeadmControlPlane.controlplane.cluster.x-k8s.io": (None, plain(control_plane.validate_control_plane)),
        "MachineDeployment.cluster.x-k8s.io": (None, plain(deployment.validate_deployment)),
        "ClusterResourceSet.addons.cluster.x-k8s.io": (addons.default, addons.validate),
        "HostFirmwareSettings.metal3.io": (None, hfw.validate_settings_object),
        "HostFirmwareComponents.metal3.io": (None, hfw.validate_components_object),
    }


_REGISTRY: dict | None = None


def admit(obj: dict, old: dict | None = None) -> dict:
    """``obj`` converted, defaulted and validated (a copy); Invalid names the object and field."""
    global _REGISTRY
    if _REGISTRY is None:
        _REGISTRY = _registry()
    out = convert.to_current(obj)
    entry = _REGISTRY.get(kinds.of(out).key)
    if entry is None:
        return out
    default, validate = entry
    if default is not None:
        out = default(out)
    validate(out, old)
    return out
