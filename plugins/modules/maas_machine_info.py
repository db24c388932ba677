#!/usr/bin/python
# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# The Apache License 2.0 is compatible with the GNU General Public License version 3 (GPLv3).

from __future__ import annotations

DOCUMENTATION = r"""
module: maas_machine_info
short_description: Read MaasMachines together with what MAAS says about their machines
version_added: 0.1.0
description:
  - Returns one MaasMachine (O(name)) or every MaasMachine of a cluster (O(cluster)), each with the live state of
    its MAAS machine (status, power state, addresses, zone, hostname), read concurrently.
  - Nothing is written, in MAAS or in the store.
author:
  - baremetal.capi contributors (!UNKNOWN)
extends_documentation_fragment:
  - baremetal.capi.store
  - baremetal.capi.namespace
  - baremetal.capi.maas
  - baremetal.capi.attributes.info_module
options:
  name:
    description: One MaasMachine.
    type: str
  cluster:
    description: Every MaasMachine of this Cluster.
    type: str
  workers:
    description: How many MAAS machines are read at the same time.
    type: int
    default: 8
"""

EXAMPLES = r"""
- name: The machines of c1 as MAAS sees them
  baremetal.capi.maas_machine_info:
    cluster: c1
  register: info

- name: Their states
  ansible.builtin.debug:
    msg: "{{ info.machines | map(attribute='maas.status_name') | list }}"
"""

RETURN = r"""
machines:
  description: One entry per MaasMachine.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: The MaasMachine.
      type: str
    object:
      description: The MaasMachine as stored.
      type: dict
    maas:
      description:
        - The MAAS machine (C(system_id), C(hostname), C(fqdn), C(status_name), C(power_state), C(ip_addresses),
          C(zone), C(pool), C(tag_names)), or V(null) when none is allocated or MAAS no longer has it.
      type: dict
    caExpiry:
      description: When the cluster CA (the C(<cluster>-ca) Secret) expires, RFC 3339; V(null) before it exists.
      type: str
    certificatesExpiry:
      description:
        - When the control-plane machine's kubeadm certificates expire, RFC 3339; V(null) for workers and until
          known. The C(machine.cluster.x-k8s.io/certificates-expiry) annotation of the Machine, else of its
          KubeadmConfig.
      type: str
    error:
      description: Why the MAAS machine could not be read.
      type: str
      returned: when it could not
"""

from ansible_collections.baremetal.capi.plugins.module_utils.maas import client as maas_client  # noqa: E402
from ansible_collections.baremetal.capi.plugins.module_utils.maas import info  # noqa: E402
from ansible_collections.baremetal.capi.plugins.module_utils.module import CapiModule, namespace_argument_spec  # noqa: E402


def main():
    module = CapiModule(
        argument_spec=dict(
            name=dict(type="str"),
            cluster=dict(type="str"),
            **namespace_argument_spec(),
            workers=dict(type="int", default=8),
        ),
        maas=True,
        mutually_exclusive=[("name", "cluster")],
        required_one_of=[("name", "cluster")],
        supports_check_mode=True,
    )
    p = module.params
    ns = p["namespace"] or module.namespace
    with module.errors():
        client = maas_client.connect(module.maas_options())
        machines = info.machines(module.store, client, ns, name=p["name"], cluster=p["cluster"], workers=p["workers"])
    module.exit(False, machines=machines)


if __name__ == "__main__":
    main()
