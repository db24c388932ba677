#!/usr/bin/python
# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# The Apache License 2.0 is compatible with the GNU General Public License version 3 (GPLv3).

from __future__ import annotations

DOCUMENTATION = r"""
module: maas_dns
short_description: Keep a MAAS cluster's API DNS record equal to its running control-plane addresses
version_added: 0.1.0
description:
  - CAPMAAS's C(reconcileDNSAttachments). The MAAS DNS resource named by the MaasCluster's
    C(status.network.dnsName) is made to hold the first address of each running control-plane MaasMachine
    (powered on and C(Deploying) or C(Deployed), not being deleted), sorted and de-duplicated.
  - With the MaasCluster's C(spec.apiServerInterfaceName) (for example C(eno2)), a running control plane's address
    is the first on its MAAS interface of that name instead (CAPMAAS C(selectMachineIPForDNS)), and the
    MaasCluster's C(status.network.publishedInterfaceName) is set to it; a machine without that interface or
    without an address on it fails the task, naming the MaasMachine and its system ID.
  - With preferred subnets, addresses in them are used when there are any.
  - The record is B(never emptied while control-plane machines that are not being deleted exist) - CAPMAAS main
    wrote the empty set when the control planes were briefly off and cut the workers off the API (PCP-6608).
  - A missing record is created with C(address_ttl=10).
  - M(baremetal.capi.maas_machine) runs the same reconcile on every round for control-plane machines; this module
    runs it on its own, for instance after a power event.
author:
  - baremetal.capi contributors (!UNKNOWN)
extends_documentation_fragment:
  - baremetal.capi.store
  - baremetal.capi.namespace
  - baremetal.capi.maas
  - baremetal.capi.attributes
options:
  cluster:
    description: The Cluster (its C(infrastructureRef) names the MaasCluster).
    type: str
    required: true
  preferred_subnets:
    description:
      - CIDRs. When not given, the C(maas-preferred-subnet) ConfigMap (key C(preferredSubnets), comma-separated)
        of the namespace, as spectro-master reads it.
    type: list
    elements: str
"""

EXAMPLES = r"""
- name: Re-attach the control planes of c1 to its API record
  baremetal.capi.maas_dns:
    cluster: c1
    namespace: capi
  register: record

- name: What would change?
  baremetal.capi.maas_dns:
    cluster: c1
  check_mode: true
  diff: true
"""

RETURN = r"""
fqdn:
  description: The record's name.
  returned: always
  type: str
  sample: c1-3f9a2c.maas
previous_ip_addresses:
  description: The record's addresses before.
  returned: always
  type: list
  elements: str
  sample: [10.0.0.11, 10.0.0.12]
ip_addresses:
  description: Its addresses afterwards (in check mode, what they would be).
  returned: always
  type: list
  elements: str
  sample: [10.0.0.11, 10.0.0.12, 10.0.0.13]
created:
  description: Whether the record was (would be) created.
  returned: always
  type: bool
message:
  description: Why the record was kept as it was, when no control-plane machine is running.
  returned: always
  type: str
published_interface:
  description: The MAAS interface whose addresses were published (C(spec.apiServerInterfaceName)); empty for the
    first address of each machine.
  returned: always
  type: str
  sample: eno2
"""

from ansible_collections.baremetal.capi.plugins.module_utils.maas import client as maas_client  # noqa: E402
from ansible_collections.baremetal.capi.plugins.module_utils.maas import dns  # noqa: E402
from ansible_collections.baremetal.capi.plugins.module_utils.module import CapiModule, namespace_argument_spec  # noqa: E402


def main():
    module = CapiModule(
        argument_spec=dict(
            cluster=dict(type="str", required=True),
            **namespace_argument_spec(),
            preferred_subnets=dict(type="list", elements="str"),
        ),
        maas=True,
        supports_check_mode=True,
    )
    p = module.params
    ns = p["namespace"] or module.namespace
    with module.errors():
        client = maas_client.connect(module.maas_options())
        out = dns.reconcile_dns(
            module.store, client, p["cluster"], ns, subnets=p["preferred_subnets"], check=module.check_mode
        )
    module.exit(
        out["changed"],
        before={"fqdn": out["fqdn"], "ip_addresses": out["before"]},
        after={"fqdn": out["fqdn"], "ip_addresses": out["after"]},
        fqdn=out["fqdn"],
        previous_ip_addresses=out["before"],
        ip_addresses=out["after"],
        created=out["created"],
        message=out["message"],
        published_interface=out["published_interface"],
    )


if __name__ == "__main__":
    main()
