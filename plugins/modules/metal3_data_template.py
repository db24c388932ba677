#!/usr/bin/python
# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# The Apache License 2.0 is compatible with the GNU General Public License version 3 (GPLv3).

from __future__ import annotations

DOCUMENTATION = r"""
module: metal3_data_template
short_description: Create or delete a Metal3DataTemplate (metaData and networkData of a machine set)
version_added: 0.1.0
description:
  - Writes an C(infrastructure.cluster.x-k8s.io/v1beta2) Metal3DataTemplate, validated as the CRD schema and
    CAPM3's webhook do - enums, ranges, interface names, list keys, C(fromHostInterfaces) needing C(interface)
    unless C(fromBootMAC), every ipv4/ipv6 network naming a pool - with the CRD defaults applied (C(step) 1,
    C(mtu) 1500, pool C(apiGroup) V(ipam.metal3.io) and C(kind) V(IPPool)).
  - v1beta1 field names are accepted and converted - C(ipAddressesFromIPPool), C(prefixesFromIPPool),
    C(gatewaysFromIPPool), C(dnsServersFromIPPool) become C(...FromPool), and a bond C(parameters) map becomes the
    v1beta2 list of C(name)/C(value).
  - C(metaData) and C(networkData) cannot change once the template exists (CAPM3 webhook) - the task fails naming
    the field; make a new template instead. Re-applying the same template changes nothing.
  - A template still used by a Metal3Data is not deleted; the task fails naming the users.
author:
  - baremetal.capi contributors (!UNKNOWN)
extends_documentation_fragment:
  - baremetal.capi.store
  - baremetal.capi.namespace
  - baremetal.capi.attributes
options:
  name:
    description: The template's name.
    type: str
    required: true
  namespace:
    description: The template's namespace. Defaults to O(store.namespace), then V(default).
    type: str
  spec:
    description:
      - The spec, with upstream's field names - C(metaData) (C(strings), C(objectNames), C(indexes), C(namespaces),
        C(ipAddressesFromPool), C(prefixesFromPool), C(gatewaysFromPool), C(dnsServersFromPool),
        C(fromHostInterfaces), C(fromLabels), C(fromAnnotations)) and C(networkData) (C(links) with C(ethernets),
        C(bonds), C(vlans); C(networks) with C(ipv4), C(ipv6), C(ipv4DHCP), C(ipv6DHCP), C(ipv6SLAAC); C(services)).
      - Required with O(state=present).
    type: dict
  labels:
    description: Labels, merged over the stored ones.
    type: dict
  state:
    description: V(present) creates the template (or updates its labels); V(absent) deletes it.
    type: str
    choices: [present, absent]
    default: present
"""

EXAMPLES = r"""
- name: Workers get their provisioning address and a bonded, VLAN-tagged uplink
  baremetal.capi.metal3_data_template:
    name: test1-workers
    namespace: metal3
    spec:
      metaData:
        objectNames:
          - {key: name, object: machine}
          - {key: local-hostname, object: machine}
        ipAddressesFromPool:
          - {key: provisioningIP, name: provisioning-pool}
        prefixesFromPool:
          - {key: provisioningCIDR, name: provisioning-pool}
      networkData:
        links:
          ethernets:
            - {type: phy, id: enp1s0, macAddress: {fromHostInterface: enp1s0}}
            - {type: phy, id: enp2s0, macAddress: {fromHostInterface: enp2s0}}
          bonds:
            - id: bond0
              bondMode: 802.3ad
              bondXmitHashPolicy: layer3+4
              bondLinks: [enp1s0, enp2s0]
              macAddress: {fromHostInterface: enp1s0}
              parameters:
                - {name: miimon, value: 100}
          vlans:
            - {id: vlan100, vlanID: 100, vlanLink: bond0, macAddress: {fromHostInterface: enp1s0}}
        networks:
          ipv4:
            - id: baremetalv4
              link: vlan100
              ipAddressFromIPPool: baremetalv4-pool
              routes:
                - {network: 0.0.0.0, prefix: 0, gateway: {fromIPPool: baremetalv4-pool}}
        services:
          dnsFromIPPool: baremetalv4-pool
"""

RETURN = r"""
object:
  description: The template after the task (as it would be, in check mode), or V(null) once deleted.
  returned: always
  type: dict
warnings_from_webhook:
  description: What CAPM3's webhook would warn about (a deprecated C(clusterName)).
  returned: always
  type: list
  elements: str
"""

from ansible_collections.baremetal.capi.plugins.module_utils.capi import refs  # noqa: E402
from ansible_collections.baremetal.capi.plugins.module_utils.metal3.data import DataManager  # noqa: E402
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
        manager = DataManager(module.store)
        before = refs.get_or_none(module.store, "Metal3DataTemplate", p["name"], ns)
        if p["state"] == "absent":
            changed = manager.delete_template(p["name"], ns, check=module.check_mode)
            module.exit(changed, before=before, after=None, object=None, warnings_from_webhook=[])
        obj = meta.new("Metal3DataTemplate", p["name"], ns, spec=p["spec"], labels=p["labels"] or None)
        changed, after, warnings = manager.apply_template(obj, check=module.check_mode)
        for warning in warnings:
            module.warn(warning)
        module.exit(changed, before=before, after=after, object=after, warnings_from_webhook=warnings)


if __name__ == "__main__":
    main()
