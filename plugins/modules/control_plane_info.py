#!/usr/bin/python
# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# The Apache License 2.0 is compatible with the GNU General Public License version 3 (GPLv3).

from __future__ import annotations

DOCUMENTATION = r"""
module: control_plane_info
short_description: A cluster's control plane as KubeadmControlPlane sees it, and the plan of its rollout
version_added: 0.1.0
description:
  - Reads the KubeadmControlPlane of O(cluster) and its Machines, and changes nothing. For each Machine it says
    whether it is up to date and why not, as KCP judges it. A Machine is out of date when its version, its
    infrastructure template or the compared parts of its KubeadmConfig differ. C(rollout.after) and
    C(rollout.before.certificatesExpiryDays) can also make it out of date.
  - With O(definition), the plan is the one of that KubeadmControlPlane, for example the one a new
    C(kubernetes_version) in the description would write. RV(replace) lists the Machines that would be
    replaced, one at a time, in KCP's order. RV(machine_deployments) lists the MachineDeployments that would
    move to another version after the control plane.
  - C(provision_cluster.yml) in check mode prints this plan.
author:
  - baremetal.capi contributors (!UNKNOWN)
extends_documentation_fragment:
  - baremetal.capi.store
  - baremetal.capi.namespace
  - baremetal.capi.attributes.INFO_MODULE
options:
  cluster:
    description: The Cluster.
    type: str
    required: true
  definition:
    description:
      - A KubeadmControlPlane to plan for instead of the stored one (same name and namespace). It is not written.
    type: dict
  deployments:
    description:
      - MachineDeployments to plan for instead of the stored ones of O(cluster). They are not written.
    type: list
    elements: dict
"""

EXAMPLES = r"""
- name: What an upgrade of demo to v1.35.0 would replace
  baremetal.capi.control_plane_info:
    cluster: demo
    namespace: demo
    definition: "{{ desired_kcp }}"
  register: plan

- name: Show it
  ansible.builtin.debug:
    var: plan.steps
"""

RETURN = r"""
control_plane:
  description: The KubeadmControlPlane's name.
  returned: always
  type: str
version:
  description: The oldest version of its Machines (KCP's C(status.version)).
  returned: always
  type: str
target_version:
  description: The KubeadmControlPlane's C(spec.version).
  returned: always
  type: str
max_surge:
  description: C(rollout.strategy.rollingUpdate.maxSurge) (1 - a new machine first; 0 - an old one removed first).
  returned: always
  type: int
machines:
  description: The control-plane Machines not being deleted.
  returned: always
  type: list
  elements: dict
  contains:
    machine:
      description: The Machine's name.
      type: str
    version:
      description: Its C(spec.version).
      type: str
    up_to_date:
      description: Whether it needs no rollout.
      type: bool
    reasons:
      description: Why it needs one, in upstream's C(UpToDate) condition words.
      type: list
      elements: str
replace:
  description: The Machines that would be replaced, in order, one at a time.
  returned: always
  type: list
  elements: str
machine_deployments:
  description: MachineDeployments whose machines would move to another version, after the control plane.
  returned: always
  type: list
  elements: dict
steps:
  description: The plan as lines of text, in order.
  returned: always
  type: list
  elements: str
"""

from ansible_collections.baremetal.capi.plugins.module_utils.module import CapiModule, namespace_argument_spec  # noqa: E402


def main():
    module = CapiModule(
        argument_spec=dict(
            cluster=dict(type="str", required=True),
            **namespace_argument_spec(),
            definition=dict(type="dict"),
            deployments=dict(type="list", elements="dict"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    ns = p["namespace"] or module.namespace
    with module.errors():
        from ansible_collections.baremetal.capi.plugins.module_utils.capi import kcp_plan, refs
        from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid

        store = module.store
        cluster = store.get("Cluster", p["cluster"], ns)
        ref = (cluster.get("spec") or {}).get("controlPlaneRef")
        kcp = p["definition"] or (refs.get_ref(store, ref, ns) if ref else None)
        if kcp is None:
            raise Invalid(
                "has no KubeadmControlPlane", obj=f"Cluster {ns}/{p['cluster']}", field="spec.controlPlaneRef"
            )
        kcp = {**kcp, "metadata": {**(kcp.get("metadata") or {}), "namespace": ns}}
        mds = p["deployments"]
        if mds is None:
            mds = [
                md
                for md in store.list("MachineDeployment", ns)
                if (md.get("spec") or {}).get("clusterName") == p["cluster"]
            ]
        report = kcp_plan.rollout_report(
            store, kcp, [{**m, "metadata": {**m["metadata"], "namespace": ns}} for m in mds]
        )
        module.close_store()
    module.exit(False, **report)


if __name__ == "__main__":
    main()
