#!/usr/bin/python
# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# The Apache License 2.0 is compatible with the GNU General Public License version 3 (GPLv3).

from __future__ import annotations

DOCUMENTATION = r"""
module: ipclaim
short_description: Claim (or release) an address from a Metal3 IPPool
version_added: 0.1.0
description:
  - Creates an C(ipam.metal3.io/v1alpha1) IPClaim and allocates its address as the ip-address-manager does - the
    claim's pre-allocation, else the address asked for with the C(ipAddress) annotation (O(ip_address)), else the
    first free address (V(sequential) pools) or a random free one (V(random) pools), range by range.
  - The address is an IPAddress named C(<namePrefix>-<ip with dashes>), owned by the pool and the claim, with
    finalizer C(ipaddress.ipam.metal3.io); the claim gets C(status.address) and finalizer C(ipclaim.ipam.metal3.io).
  - An address is never handed out twice, also to tasks running at the same time on other hosts of the same store.
  - When no address is free the task fails with upstream's message C(Exhausted IP Pools) (also written to the
    claim's C(status.errorMessage)). Unlike upstream, running the task again retries, and succeeds once an address
    has been released; with O(wait=true) the task itself keeps retrying.
  - O(state=absent) deletes the claim and releases its address (once no other finalizer holds the claim).
author:
  - baremetal.capi contributors (!UNKNOWN)
extends_documentation_fragment:
  - baremetal.capi.store
  - baremetal.capi.namespace
  - baremetal.capi.wait
  - baremetal.capi.attributes
options:
  name:
    description: The claim's name. A name listed in the pool's C(preAllocations) gets that address.
    type: str
    required: true
  namespace:
    description: The claim's namespace (the pool's). Defaults to O(store.namespace), then V(default).
    type: str
  pool:
    description: The IPPool to claim from (same namespace). Required with O(state=present).
    type: str
  ip_address:
    description: A specific address to ask for (the claim's C(ipAddress) annotation).
    type: str
  labels:
    description: Labels of the claim; the IPAddress gets them too.
    type: dict
  state:
    description: V(present) claims an address; V(absent) releases it and deletes the claim.
    type: str
    choices: [present, absent]
    default: present
  wait:
    description: When the pool is exhausted, keep retrying until an address is free or O(wait_timeout) passes.
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
- name: An address for the API endpoint
  baremetal.capi.ipclaim:
    name: test1-vip
    namespace: metal3
    pool: baremetal-pool
  register: vip

- name: Use it
  ansible.builtin.debug:
    msg: "{{ vip.address }}/{{ vip.prefix }} via {{ vip.gateway }}"

- name: Ask for one address in particular
  baremetal.capi.ipclaim:
    name: test1-ingress
    namespace: metal3
    pool: baremetal-pool
    ip_address: 192.168.111.250

- name: Give it back
  baremetal.capi.ipclaim:
    name: test1-vip
    namespace: metal3
    state: absent
"""

RETURN = r"""
address:
  description:
    - The allocated address (in check mode, the one that would be taken), V(null) if none.
    - In check mode on a V(random) pool, the first free address; the real run picks one at random.
  returned: always
  type: str
  sample: 192.168.111.20
prefix:
  description: The prefix length of the range the address came from (else the pool's).
  returned: when an address is allocated
  type: int
  sample: 24
gateway:
  description: The gateway of the range the address came from (else the pool's).
  returned: when an address is allocated
  type: str
  sample: 192.168.111.1
dnsServers:
  description: The DNS servers of the range the address came from (else the pool's).
  returned: when an address is allocated
  type: list
  elements: str
  sample: [8.8.8.8]
claim:
  description: The IPClaim after the task (as it would be, in check mode), or V(null) once deleted.
  returned: always
  type: dict
ip_address_object:
  description: The IPAddress object holding the address.
  returned: when an address is allocated (not in check mode)
  type: dict
"""

from ansible_collections.baremetal.capi.plugins.module_utils.capi import refs  # noqa: E402
from ansible_collections.baremetal.capi.plugins.module_utils.metal3.ipam import IPAM, AllocationFailed  # noqa: E402
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta, names  # noqa: E402
from ansible_collections.baremetal.capi.plugins.module_utils.module import (  # noqa: E402
    CapiModule,
    namespace_argument_spec,
    wait_argument_spec,
)


def main():
    module = CapiModule(
        argument_spec=dict(
            name=dict(type="str", required=True),
            **namespace_argument_spec(),
            pool=dict(type="str"),
            ip_address=dict(type="str"),
            labels=dict(type="dict"),
            state=dict(type="str", choices=["present", "absent"], default="present"),
            **wait_argument_spec(wait=False, timeout=300),
        ),
        required_if=[("state", "present", ["pool"])],
        supports_check_mode=True,
    )
    p = module.params
    ns = p["namespace"] or module.namespace
    with module.errors():
        ipam = IPAM(module.store)
        before = refs.get_or_none(module.store, "IPClaim", p["name"], ns)
        if p["state"] == "absent":
            changed = ipam.delete_claim(p["name"], ns, check=module.check_mode)
            module.exit(changed, before=before, after=None, claim=None, address=None)
        annotations = {names.IPADDRESS_ANNOTATION: p["ip_address"]} if p["ip_address"] else None
        obj = meta.new(
            "IPClaim",
            p["name"],
            ns,
            spec={"pool": {"name": p["pool"], "namespace": ns}},
            labels=p["labels"] or None,
            annotations=annotations,
        )
        changed, claim, address = module.until(lambda: ipam.apply_claim(obj, check=module.check_mode), AllocationFailed)
        result = dict(claim=claim, address=None)
        if address is not None:
            spec = address["spec"]
            result.update(
                address=spec["address"],
                prefix=spec.get("prefix", 0),
                gateway=spec.get("gateway"),
                dnsServers=spec.get("dnsServers") or [],
            )
            if not module.check_mode:
                result["ip_address_object"] = address
        module.exit(changed, before=before, after=claim, **result)


if __name__ == "__main__":
    main()
