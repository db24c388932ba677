#!/usr/bin/python
# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# The Apache License 2.0 is compatible with the GNU General Public License version 3 (GPLv3).

from __future__ import annotations

DOCUMENTATION = r"""
module: cluster_addons
short_description: A cluster's add-ons as ClusterResourceSets, applied to its workload cluster
version_added: 0.1.0
description:
  - Writes each add-on of O(addons) as Cluster API does add-ons - a ClusterResourceSet C(<cluster>-<name>)
    selecting the Cluster, its O(addons[].manifests) files in a ConfigMap C(<cluster>-addon-<name>), plus the
    Secrets (of type C(addons.cluster.x-k8s.io/resource-set)) and ConfigMaps named in O(addons[].resources) - and
    removes the ClusterResourceSets of add-ons no longer listed, so they are no longer reconciled (what they
    applied stays in the workload cluster, as with Cluster API).
  - With O(apply), also applies them once the Cluster's control plane is initialized, as the ClusterResourceSet
    controller does - C(ApplyOnce) creates each object once and never touches it again, C(Reconcile) server-side
    applies a resource again whenever its hash changes - and records what was applied, with the hashes, in the
    ClusterResourceSetBinding named like the Cluster. The converge loop of M(baremetal.capi.cluster_machines)
    applies them too, as soon as the workload API answers, so a CNI add-on lets the Nodes become Ready.
author:
  - baremetal.capi contributors (!UNKNOWN)
extends_documentation_fragment:
  - baremetal.capi.store
  - baremetal.capi.namespace
  - baremetal.capi.attributes.no_diff
options:
  cluster:
    description: The Cluster.
    type: str
    required: true
  namespace:
    description: Its namespace. Defaults to O(store.namespace), then V(default).
    type: str
  addons:
    description: The add-ons (the cluster description's C(addons)); an empty list removes every described one.
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: The add-on's name.
        type: str
        required: true
      strategy:
        description: C(ApplyOnce) or C(Reconcile).
        type: str
        choices: [ApplyOnce, Reconcile]
        default: ApplyOnce
      manifests:
        description: YAML files (one or more documents each) to apply; relative paths are taken from O(base_dir).
        type: list
        elements: str
      resources:
        description: Secrets and ConfigMaps of the store to apply too, each C({kind, name}).
        type: list
        elements: dict
  base_dir:
    description: The directory relative O(addons[].manifests) paths are taken from (the role passes the inventory's).
    type: path
  apply:
    description: Apply the add-ons now (needs the workload API); otherwise only the objects are written.
    type: bool
    default: false
  workload_kubeconfig:
    description: A kubeconfig (path or text) for the workload cluster, instead of the C(<cluster>-kubeconfig) Secret.
    type: str
"""

EXAMPLES = r"""
- name: A CNI for cluster test1, from the manifest its project publishes
  baremetal.capi.cluster_addons:
    cluster: test1
    namespace: metal3
    addons:
      - name: cni
        manifests: [files/calico.yaml]
        strategy: Reconcile
    base_dir: "{{ inventory_dir }}"
"""

RETURN = r"""
created:
  description: The objects written for the first time (C(Kind name)).
  returned: always
  type: list
  elements: str
updated:
  description: The objects changed.
  returned: always
  type: list
  elements: str
deleted:
  description: The objects of add-ons no longer listed.
  returned: always
  type: list
  elements: str
applied:
  description:
    - With O(apply), per ClusterResourceSet its resources and what happened to each (C(applied), C(reapplied),
      C(unchanged), C(failed) with C(error)); empty while the control plane is not initialized (RV(waiting)).
  returned: always
  type: list
  elements: dict
waiting:
  description: Why nothing was applied yet.
  returned: when O(apply) found the control plane not initialized
  type: str
"""

from ansible_collections.baremetal.capi.plugins.module_utils.module import CapiModule, namespace_argument_spec  # noqa: E402


def main():
    module = CapiModule(
        argument_spec=dict(
            cluster=dict(type="str", required=True),
            **namespace_argument_spec(),
            addons=dict(
                type="list",
                elements="dict",
                default=[],
                options=dict(
                    name=dict(type="str", required=True),
                    strategy=dict(type="str", choices=["ApplyOnce", "Reconcile"], default="ApplyOnce"),
                    manifests=dict(type="list", elements="str"),
                    resources=dict(type="list", elements="dict"),
                ),
            ),
            base_dir=dict(type="path"),
            apply=dict(type="bool", default=False),
            workload_kubeconfig=dict(type="str", no_log=True),
        ),
        supports_check_mode=True,
    )
    p = module.params
    ns = p["namespace"] or module.namespace
    with module.errors():
        from ansible_collections.baremetal.capi.plugins.module_utils.capi import addon_sets, addons
        from ansible_collections.baremetal.capi.plugins.module_utils.capi import workload as wl

        report = addon_sets.ensure(
            module.store, p["cluster"], ns, p["addons"], base_dir=p["base_dir"], check=module.check_mode
        )
        changed = report.pop("changed")
        report["applied"] = []
        if p["apply"]:
            cluster = module.store.get("Cluster", p["cluster"], ns)
            client = None
            if (cluster.get("status") or {}).get("initialization", {}).get("controlPlaneInitialized"):
                client = wl.client_for(module.store, p["cluster"], ns, p["workload_kubeconfig"])
            out = addons.reconcile(module.store, cluster, client, check=module.check_mode)
            changed |= out["changed"]
            report["applied"] = out["sets"]
            if out["waiting"]:
                report["waiting"] = out["waiting"]
        module.exit(changed, **report)


if __name__ == "__main__":
    main()
