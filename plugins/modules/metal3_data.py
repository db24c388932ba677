#!/usr/bin/python
# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# The Apache License 2.0 is compatible with the GNU General Public License version 3 (GPLv3).

from __future__ import annotations

DOCUMENTATION = r"""
module: metal3_data
short_description: Render a Metal3Machine's metaData and networkData Secrets from its data template
version_added: 0.1.0
description:
  - For a Metal3Machine with C(spec.dataTemplate), does what CAPM3's Metal3Machine, Metal3DataTemplate and
    Metal3Data controllers do - creates the Metal3DataClaim (named after the Metal3Machine), gives it the lowest free
    index of the template, creates the Metal3Data C(<template>-<index>), claims an address from every pool the
    template names (an IPClaim C(<metal3data>-<pool>) answered at once for Metal3 IPPools; a Cluster API
    IPAddressClaim for other providers' pools, answered by that provider), and renders the Secrets
    C(<metal3machine>-metadata) and C(<metal3machine>-networkdata) (keys C(metaData) and C(networkData), YAML).
  - The Metal3Machine needs its owner Machine and the C(metal3.io/BareMetalHost) annotation naming its host, whose
    C(status.hardware.nics) give the MAC addresses.
  - Secrets that exist are never rewritten, so a host is re-provisioned in exactly the same state.
  - Everything is checked before the first write - unknown pool, bad MAC address, bond parameter colliding with a
    key, missing host interface - and the task fails naming the object and the field.
  - "When a pool is exhausted the Metal3Data gets C(IP Allocation for <pool> failed : Exhausted IP Pools) and the
    task fails; running it again (or O(wait=true)) succeeds once an address is free."
  - Then, as the Metal3Machine controller does, sets the Metal3Machine's C(status.renderedData) and its
    C(status.metaData) / C(status.networkData) (unless they already name the user's own Secrets).
  - O(state=absent) releases the addresses, the index and the Metal3Data; the Secrets go with the Metal3Data.
author:
  - baremetal.capi contributors (!UNKNOWN)
extends_documentation_fragment:
  - baremetal.capi.store
  - baremetal.capi.namespace
  - baremetal.capi.wait
  - baremetal.capi.attributes
options:
  metal3machine:
    description: The Metal3Machine's name.
    type: str
    required: true
    aliases: [name]
  namespace:
    description: Its namespace. Defaults to O(store.namespace), then V(default).
    type: str
  state:
    description: V(present) renders the data; V(absent) releases it.
    type: str
    choices: [present, absent]
    default: present
  bmh_name_based_preallocation:
    description:
      - Name the IPClaims C(<baremetalhost>-<pool>) instead of C(<metal3data>-<pool>), with the labels
        C(infrastructure.cluster.x-k8s.io/data-name) and C(infrastructure.cluster.x-k8s.io/pool-name), as CAPM3 does
        with C(--enable-bmh-name-based-preallocation). A pool's C(preAllocations) keyed by those names then give a host
        the same address every time it is provisioned.
    type: bool
    default: false
  wait:
    description: Keep retrying while a pool is exhausted or a Cluster API IPAM provider has not answered yet.
    type: bool
    default: false
  wait_timeout:
    description: Seconds to keep retrying with O(wait=true).
    type: int
    default: 300
  wait_sleep:
    description: Seconds between two attempts.
    type: float
    default: 2
"""

EXAMPLES = r"""
- name: Render the data of a worker
  baremetal.capi.metal3_data:
    metal3machine: test1-workers-7xk2p
    namespace: metal3
  register: data

- name: What would be rendered, without writing anything
  baremetal.capi.metal3_data:
    metal3machine: test1-workers-7xk2p
    namespace: metal3
  check_mode: true
  register: preview

- name: Release it when the machine goes
  baremetal.capi.metal3_data:
    metal3machine: test1-workers-7xk2p
    namespace: metal3
    state: absent
"""

RETURN = r"""
meta_data:
  description: The metaData (in check mode, what would be rendered; the stored one when its Secret exists).
  returned: when the template has metaData
  type: dict
  sample: {local-hostname: test1-workers-abcde, providerid: metal3/node-1/test1-workers-7xk2p}
network_data:
  description: The networkData, as C(links), C(networks), C(services) (OpenStack network_data.json shape).
  returned: when the template has networkData
  type: dict
addresses:
  description: Pool name to the address taken (in check mode, the one that would be taken) - C(address),
    C(prefix), C(gateway), C(dnsServers); V(null) for a pool with nothing (yet).
  returned: when present
  type: dict
data:
  description: The Metal3Data's name (C(<template>-<index>)).
  returned: when present
  type: str
  sample: test1-workers-3
index:
  description: The index the template gave the machine.
  returned: when present
  type: int
  sample: 3
diff:
  description: With C(--diff), the metaData and networkData before (V(null) without a Secret) and after the task.
  returned: when diff mode is on
  type: dict
secrets:
  description: The Secret names by key (C(metaData), C(networkData)).
  returned: when present
  type: dict
  sample: {metaData: test1-workers-7xk2p-metadata, networkData: test1-workers-7xk2p-networkdata}
"""


from ansible_collections.baremetal.capi.plugins.module_utils.errors import NotFound, Requeue  # noqa: E402
from ansible_collections.baremetal.capi.plugins.module_utils.metal3.data import (  # noqa: E402
    METADATA_SUFFIX,
    NETWORKDATA_SUFFIX,
    DataManager,
    secret_payload,
)
from ansible_collections.baremetal.capi.plugins.module_utils.metal3.ipam import AllocationFailed  # noqa: E402
from ansible_collections.baremetal.capi.plugins.module_utils.module import (  # noqa: E402
    CapiModule,
    namespace_argument_spec,
    wait_argument_spec,
)


def main():
    module = CapiModule(
        argument_spec=dict(
            metal3machine=dict(type="str", required=True, aliases=["name"]),
            **namespace_argument_spec(),
            state=dict(type="str", choices=["present", "absent"], default="present"),
            bmh_name_based_preallocation=dict(type="bool", default=False),
            **wait_argument_spec(wait=False, timeout=300),
        ),
        supports_check_mode=True,
    )
    p = module.params
    ns = p["namespace"] or module.namespace
    with module.errors():
        manager = DataManager(
            module.store, bmh_name_based_preallocation=p["bmh_name_based_preallocation"], update_machine_status=True
        )
        before = {}
        for key, suffix in (("metaData", METADATA_SUFFIX), ("networkData", NETWORKDATA_SUFFIX)):
            try:
                before[key] = secret_payload(module.store.get("Secret", p["metal3machine"] + suffix, ns), key)
            except NotFound:
                before[key] = None
        if p["state"] == "absent":  # the data Secrets go with the Metal3Data
            removed = manager.delete(p["metal3machine"], ns, check=module.check_mode)
            changed = removed.pop("changed")
            module.exit(changed, before=before, after=dict.fromkeys(before) if changed else before, **removed)
        result = module.until(
            lambda: manager.reconcile(p["metal3machine"], ns, check=module.check_mode), AllocationFailed, Requeue
        )
        after = {"metaData": result["metaData"], "networkData": result["networkData"]}
        renamed = {"metaData": "meta_data", "networkData": "network_data"}
        out = {renamed.get(k, k): v for k, v in result.items() if k not in ("changed", "claim")}
        module.exit(result["changed"], before=before, after=after, **out)


if __name__ == "__main__":
    main()
