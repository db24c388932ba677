#!/usr/bin/python
# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# The Apache License 2.0 is compatible with the GNU General Public License version 3 (GPLv3).

from __future__ import annotations

DOCUMENTATION = r"""
module: ippool
short_description: Create, update or delete a Metal3 IPPool (ipam.metal3.io)
version_added: 0.1.0
description:
  - Writes an C(ipam.metal3.io/v1alpha1) IPPool, validated as the ip-address-manager webhook does - valid IPs,
    C(start) not after C(end), a bounded pool for the V(random) strategy, pre-allocations unique and inside the
    pools, C(namePrefix) and C(allocationStrategy) immutable, addresses in use staying inside the pools.
  - Then reconciles the pool as the IPAM controller does - finalizer C(ippool.ipam.metal3.io), the
    C(cluster.x-k8s.io/cluster-name) and C(cluster.x-k8s.io/provider=ipam-metal3) labels and a Cluster owner
    reference when C(clusterName) is set, and C(status.indexes) (claim name to IP) rebuilt from the IPAddresses.
  - Claims do not rewrite the pool (so that allocating stays cheap however full the pool is); C(status.indexes) is
    refreshed when this module runs. M(baremetal.capi.ippool_info) always reads the live allocations.
  - Claims being deleted that only IPAM's finalizer still holds (Metal3 IPClaims and Cluster API IPAddressClaims)
    let their addresses go whenever this module runs, as the IPAM controller's pool reconcile does.
  - A pool with addresses allocated is not deleted; the task fails naming the claims (upstream keeps such a pool
    waiting). Claims already being deleted let their addresses go first, as upstream's pool deletion does.
author:
  - baremetal.capi contributors (!UNKNOWN)
extends_documentation_fragment:
  - baremetal.capi.store
  - baremetal.capi.namespace
  - baremetal.capi.attributes
options:
  name:
    description: The pool's name.
    type: str
    required: true
  namespace:
    description: The pool's namespace. Defaults to O(store.namespace), then V(default).
    type: str
  spec:
    description:
      - The IPPool spec, with upstream's field names - C(namePrefix) (required), C(pools) (a list of
        C(start)/C(end)/C(subnet) with optional C(prefix), C(gateway), C(dnsServers) that override the pool-wide
        ones), C(prefix), C(gateway), C(dnsServers), C(preAllocations) (claim name to IP), C(allocationStrategy)
        (V(sequential), the default, or V(random)), C(clusterName).
      - Required with O(state=present).
    type: dict
  labels:
    description: Labels, merged over the stored ones.
    type: dict
  state:
    description: V(present) creates or updates the pool; V(absent) deletes it.
    type: str
    choices: [present, absent]
    default: present
"""

EXAMPLES = r"""
- name: The provisioning network's pool
  baremetal.capi.ippool:
    name: provisioning-pool
    namespace: metal3
    spec:
      clusterName: test1
      namePrefix: test1-prov
      pools:
        - start: 172.22.0.50
          end: 172.22.0.99
      prefix: 24
      gateway: 172.22.0.1
      preAllocations:
        test1-controlplane-0-provisioning-pool: 172.22.0.60

- name: Two ranges, each with its own gateway, handed out at random
  baremetal.capi.ippool:
    name: baremetal-pool
    namespace: metal3
    spec:
      namePrefix: bm
      allocationStrategy: random
      pools:
        - subnet: 192.168.111.0/24
          gateway: 192.168.111.1
        - start: 192.168.112.10
          end: 192.168.112.200
          prefix: 24
          gateway: 192.168.112.1
      dnsServers: [8.8.8.8]

- name: Remove a pool that no longer has allocations
  baremetal.capi.ippool:
    name: baremetal-pool
    namespace: metal3
    state: absent
"""

RETURN = r"""
object:
  description: The IPPool after the task (as it would be, in check mode), or V(null) once deleted.
  returned: always
  type: dict
  sample:
    apiVersion: ipam.metal3.io/v1alpha1
    kind: IPPool
    metadata:
      name: provisioning-pool
      namespace: metal3
      finalizers: [ippool.ipam.metal3.io]
    spec:
      namePrefix: test1-prov
      allocationStrategy: sequential
      pools:
        - start: 172.22.0.50
          end: 172.22.0.99
    status:
      indexes:
        test1-workers-0-provisioning-pool: 172.22.0.50
"""

from ansible_collections.baremetal.capi.plugins.module_utils.capi import refs  # noqa: E402
from ansible_collections.baremetal.capi.plugins.module_utils.metal3.ipam import IPAM  # noqa: E402
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta  # noqa: E402
from ansible_collections.baremetal.capi.plugins.module_utils.module import CapiModule, namespace_argument_spec  # noqa: E402


def main():
    module = CapiModule(
        argument_spec=dict(
            name=dict(type="str", required=True),
            **namespace_argument_spec(),
            spec=dict(type="dict"),
            labels=dict(type="dict"),
            state=dict(type="str", choices=["present", "absent"], default="present"),
        ),
        required_if=[("state", "present", ["spec"])],
        supports_check_mode=True,
    )
    p = module.params
    ns = p["namespace"] or module.namespace
    with module.errors():
        ipam = IPAM(module.store)
        before = refs.get_or_none(module.store, "IPPool", p["name"], ns)
        if p["state"] == "absent":
            changed = ipam.delete_pool(p["name"], ns, check=module.check_mode)
            module.exit(changed, before=before, after=None, object=None)
        obj = meta.new("IPPool", p["name"], ns, spec=p["spec"], labels=p["labels"] or None)
        changed, after = ipam.apply_pool(obj, check=module.check_mode)
        module.exit(changed, before=before, after=after, object=after)


if __name__ == "__main__":
    main()
