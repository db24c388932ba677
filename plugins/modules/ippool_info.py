#!/usr/bin/python
# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# The Apache License 2.0 is compatible with the GNU General Public License version 3 (GPLv3).

from __future__ import annotations

DOCUMENTATION = r"""
module: ippool_info
short_description: Read Metal3 IPPools with their allocations and free addresses
version_added: 0.1.0
description:
  - Returns C(ipam.metal3.io/v1alpha1) IPPools with what is allocated now - every IPAddress (Metal3 and Cluster API
    IPAM) naming the pool - the pool's capacity and how many addresses are still free (pre-allocated addresses
    count as taken).
author:
  - baremetal.capi contributors (!UNKNOWN)
extends_documentation_fragment:
  - baremetal.capi.store
  - baremetal.capi.namespace
  - baremetal.capi.attributes.info_module
options:
  name:
    description: One pool. All pools of the namespace when not given.
    type: str
"""

EXAMPLES = r"""
- name: How full is the provisioning pool?
  baremetal.capi.ippool_info:
    name: provisioning-pool
    namespace: metal3
  register: info

- name: Say so
  ansible.builtin.debug:
    msg: "{{ info.pools[0].free }} of {{ info.pools[0].capacity }} free"
"""

RETURN = r"""
pools:
  description: One entry per pool.
  returned: always
  type: list
  elements: dict
  contains:
    object:
      description: The IPPool object.
      type: dict
    allocations:
      description: Claim name to allocated address (the shape of upstream's C(status.indexes)).
      type: dict
      sample: {test1-workers-0-provisioning-pool: 172.22.0.50}
    allocated:
      description: How many addresses are allocated.
      type: int
      sample: 1
    capacity:
      description: How many addresses the pool's ranges hold.
      type: int
      sample: 50
    free:
      description: How many addresses are neither allocated nor pre-allocated.
      type: int
      sample: 49
"""

from ansible_collections.baremetal.capi.plugins.module_utils.errors import NotFound  # noqa: E402
from ansible_collections.baremetal.capi.plugins.module_utils.metal3.ipam import IPAM  # noqa: E402
from ansible_collections.baremetal.capi.plugins.module_utils.module import CapiModule, namespace_argument_spec  # noqa: E402


def main():
    module = CapiModule(
        argument_spec=dict(name=dict(type="str"), **namespace_argument_spec()),
        supports_check_mode=True,
    )
    p = module.params
    ns = p["namespace"] or module.namespace
    with module.errors():
        ipam = IPAM(module.store)
        if p["name"]:
            try:
                pools = [module.store.get("IPPool", p["name"], ns)]
            except NotFound:
                pools = []
        else:
            pools = module.store.list("IPPool", ns)
        module.exit(False, pools=[dict(object=pool, **ipam.pool_info(pool)) for pool in pools])


if __name__ == "__main__":
    main()
