#!/usr/bin/python
# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# The Apache License 2.0 is compatible with the GNU General Public License version 3 (GPLv3).

from __future__ import annotations

DOCUMENTATION = r"""
module: metal3_labelsync
short_description: Copy prefixed BareMetalHost labels onto the workload Nodes as CAPM3's label sync does
version_added: 0.1.0
description:
  - Does what CAPM3's Metal3LabelSync controller does, once per run. The label prefixes come from the Metal3Cluster
    annotation C(metal3.io/metal3-label-sync-prefixes) (comma separated, trimmed, empty entries ignored, each a
    DNS-1123 subdomain; a bad one fails the task naming it).
  - For every consumed BareMetalHost (O(host), or every host of O(cluster) or of the namespace), the path host
    C(spec.consumerRef) - Metal3Machine - Machine - C(status.nodeRef) leads to the workload Node. Labels
    C(<prefix>/<name>) with a listed prefix are made the host's - set when missing or different, removed when the
    host does not have them. Unprefixed labels and labels of other prefixes are never touched; nothing flows from the
    Node to the host.
  - CAPM3 runs this every 60 seconds; schedule C(playbooks/sync_labels.yml) (for example as an AWX schedule) to do
    the same.
  - In check mode nothing is written; each host reports the labels that would be set and removed.
author:
  - baremetal.capi contributors (!UNKNOWN)
extends_documentation_fragment:
  - baremetal.capi.store
  - baremetal.capi.namespace
  - baremetal.capi.attributes.no_diff
options:
  host:
    description: One BareMetalHost. Mutually exclusive with O(cluster).
    type: str
  cluster:
    description: The consumed hosts of this Cluster (label C(cluster.x-k8s.io/cluster-name)).
    type: str
  workload_kubeconfig:
    description: A kubeconfig (path or text) for the workload cluster, instead of the C(<cluster>-kubeconfig) Secret.
    type: str
  workers:
    description: How many hosts are synced at the same time.
    type: int
    default: 8
"""

EXAMPLES = r"""
- name: The Metal3Cluster names the prefixes to sync
  baremetal.capi.metal3_cluster:
    name: test1
    namespace: metal3
    annotations:
      metal3.io/metal3-label-sync-prefixes: my-prefix.example.com, rack.example.com

- name: Sync the labels of every host of cluster test1
  baremetal.capi.metal3_labelsync:
    cluster: test1
    namespace: metal3
"""

RETURN = r"""
hosts:
  description: One entry per BareMetalHost.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: C(<namespace>/<host>).
      type: str
    node:
      description: The workload Node.
      type: str
    prefixes:
      description: The sync prefixes.
      type: list
      elements: str
    set:
      description: Labels set on the Node (or that would be).
      type: dict
    removed:
      description: Labels removed from the Node (or that would be).
      type: list
      elements: str
    message:
      description: What was done, or why the host was not synced.
      type: str
"""

from ansible_collections.baremetal.capi.plugins.module_utils.module import CapiModule, namespace_argument_spec  # noqa: E402


def main():
    module = CapiModule(
        argument_spec=dict(
            host=dict(type="str"),
            cluster=dict(type="str"),
            **namespace_argument_spec(),
            workload_kubeconfig=dict(type="str", no_log=True),
            workers=dict(type="int", default=8),
        ),
        mutually_exclusive=[("host", "cluster")],
        supports_check_mode=True,
    )
    p = module.params
    ns = p["namespace"] or module.namespace
    with module.errors():
        from ansible_collections.baremetal.capi.plugins.module_utils import runner
        from ansible_collections.baremetal.capi.plugins.module_utils.metal3 import labelsync

        store = module.store
        targets = [h["metadata"]["name"] for h in labelsync.cluster_hosts(store, ns, p["cluster"], p["host"])]

        def step(name):
            return labelsync.sync_host(
                store, (ns, name), workload_kubeconfig=p["workload_kubeconfig"], check=module.check_mode
            )

        results = runner.run(targets, step, key=lambda n: f"{ns}/{n}", wait=False, workers=p["workers"])
        items = [r.as_dict() for r in results]
        for item in items:
            item.pop("traceback", None)
            item.pop("host", None)
        failed = [r for r in results if r.failed]
        changed = any(r.changed for r in results)
        if failed:
            module.fail("; ".join(f"{r.key}: {r.message}" for r in failed), changed=changed, hosts=items)
        module.exit(changed=changed, hosts=items)


if __name__ == "__main__":
    main()
