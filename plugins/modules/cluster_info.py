#!/usr/bin/python
# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# The Apache License 2.0 is compatible with the GNU General Public License version 3 (GPLv3).

from __future__ import annotations

DOCUMENTATION = r"""
module: cluster_info
short_description: A cluster's objects as a tree with their conditions, as clusterctl describe cluster prints it
version_added: 0.2.0
description:
  - Reads the objects of Cluster O(cluster) and changes nothing. They come back as a tree, in the order
    C(clusterctl describe cluster) prints them. The Cluster has its infrastructure cluster (Metal3Cluster or
    MaasCluster) and its control plane, with the control plane's Machines under it. Under C(Workers) come the
    MachineDeployments, each with its MachineSets and their Machines. Machines no one controls go under
    C(Other).
  - Under each Machine comes its infrastructure machine, and under that what the machine runs on. For a
    Metal3Machine that is its BareMetalHost, with the host's C(operationalStatus) and error. For a MaasMachine
    it is the MAAS machine, as the MaasMachine recorded it. MAAS itself is not called.
  - Each line shows one condition of the object. When a condition fails, the line shows it, with its reason
    and message. A condition fails when it is C(False), or C(True) for those whose C(True) is the bad state
    (C(Paused), C(Deleting), C(RollingOut), ...). Otherwise the line shows the summary condition, C(Available)
    or C(Ready), as upstream does. STATUS names the condition, for example C(Ready=True).
  - A referenced object that is missing from the store gets a failing line of its own (C(Exists=False),
    reason C(NotFound)).
  - Machines are not grouped. MachineSets and infrastructure machines are always shown. A Machine's
    KubeadmConfig is shown only when it fails.
  - Secrets are never read.
  - C(playbooks/cluster_info.yml) prints RV(lines).
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
"""

EXAMPLES = r"""
- name: Describe cluster demo
  baremetal.capi.cluster_info:
    cluster: demo
    namespace: demo
  register: capi_describe

- name: Print it
  ansible.builtin.debug:
    msg: "{{ capi_describe.lines }}"

- name: Fail when an object of the cluster fails
  ansible.builtin.assert:
    that: capi_describe.failing | length == 0
    fail_msg: "{{ capi_describe.failing | map(attribute='object') | join(', ') }}"
"""

RETURN = r"""
tree:
  description:
    - The Cluster's line, and under C(children) the lines below it, in print order.
    - Each line has C(kind), C(name), C(namespace), C(metaName) (C(ClusterInfrastructure), C(ControlPlane),
      C(MachineInfrastructure), C(BootstrapConfig), C(Host) or C(MAAS machine)) and C(deleting).
    - It has C(condition) (C(type), C(status), C(reason), C(message), C(lastTransitionTime)) and C(failing).
    - It has the replica counters C(replicas) (current/desired), C(available), C(ready) and C(upToDate) (null
      when not reported), and C(children).
    - A line that is not a stored object (C(Workers), C(Other), a MAAS machine, a missing object) also has
      C(virtual=true).
  returned: always
  type: dict
lines:
  description:
    - The tree as text, one line per entry, under the header C(NAME REPLICAS AVAILABLE READY UP TO DATE STATUS
      REASON SINCE MESSAGE).
    - A long message goes on over the next lines, in the MESSAGE column.
  returned: always
  type: list
  elements: str
  sample:
    - "NAME                                   REPLICAS  AVAILABLE  READY  UP TO DATE  STATUS  ..."
    - "Cluster/c1                             3/3                  2      3           InfrastructureReady=True ..."
    - "        └─MachineInfrastructure - Metal3Machine/c1-md-0-x  AssociateBareMetalHost=False ..."
failing:
  description: The failing lines, depth first.
  returned: always
  type: list
  elements: dict
  contains:
    object:
      description: The line's name, for example C(MachineInfrastructure - Metal3Machine/c1-md-0-x).
      type: str
    condition:
      description: The failing condition (C(type), C(status), C(reason), C(message), C(lastTransitionTime)).
      type: dict
"""

from ansible_collections.baremetal.capi.plugins.module_utils.module import CapiModule, namespace_argument_spec  # noqa: E402


def main():
    module = CapiModule(
        argument_spec=dict(cluster=dict(type="str", required=True), **namespace_argument_spec()),
        supports_check_mode=True,
    )
    p = module.params
    ns = p["namespace"] or module.namespace
    with module.errors():
        from ansible_collections.baremetal.capi.plugins.module_utils.capi import describe, describe_text

        tree = describe.describe(module.store, p["cluster"], ns)
        module.exit(False, tree=tree, lines=describe_text.render(tree), failing=describe_text.failing(tree))


if __name__ == "__main__":
    main()
