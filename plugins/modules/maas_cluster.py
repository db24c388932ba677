#!/usr/bin/python
# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# The Apache License 2.0 is compatible with the GNU General Public License version 3 (GPLv3).

from __future__ import annotations

DOCUMENTATION = r"""
module: maas_cluster
short_description: The API endpoint of a MAAS cluster (a MAAS DNS record), as CAPMAAS's MaasCluster controller
version_added: 0.1.0
description:
  - Reconciles an C(infrastructure.cluster.x-k8s.io/v1beta1) MaasCluster the way CAPMAAS v0.9 does, and plays the
    Cluster API Cluster controller for its infrastructure.
  - The failure domains (MAAS zones) are copied to C(status.failureDomains) as a list of
    entries with C(name) and C(controlPlane=true).
  - The API endpoint's DNS name is the Cluster's C(spec.controlPlaneEndpoint.host) when set, else
    C(<cluster>-<6 random characters>.<dnsDomain>), kept in C(status.network.dnsName). The MAAS DNS resource of
    that name is created with C(address_ttl=10) and no addresses; its addresses are kept equal to the first
    address of each running control-plane machine (see M(baremetal.capi.maas_dns)).
  - With C(spec.apiServerInterfaceName) (CAPMAAS spectrocloud-public, for control planes with more than one NIC)
    each running control plane publishes instead the first address on its MAAS interface of that name (read from
    C(nodes/{system_id}/interfaces/)), and C(status.network.publishedInterfaceName) records the name. A control
    plane without C(spec.systemID), without that interface or without an address on it fails the task with
    upstream's message naming the MaasMachine (C(interface "eno2" not found for machine "<system_id>")).
  - C(spec.controlPlaneEndpoint) becomes that name with the Cluster's C(clusterNetwork.apiServerPort), else 6443;
    the MaasCluster is ready and the Cluster's infrastructure provisioned.
  - C(APIServerAvailable) becomes true once the workload cluster's Nodes can be listed (through the
    C(<cluster>-kubeconfig) Secret); C(Ready) sums up C(LoadBalancerReady) and C(APIServerAvailable).
  - O(state=absent) deletes the Cluster as Cluster API does - every MaasMachine and Machine of it first
    (concurrently - DNS detach, release, Node), then the MaasCluster and, unlike CAPMAAS, the DNS resource it
    created, then the Cluster.
author:
  - baremetal.capi contributors (!UNKNOWN)
extends_documentation_fragment:
  - baremetal.capi.store
  - baremetal.capi.namespace
  - baremetal.capi.wait
  - baremetal.capi.maas
  - baremetal.capi.attributes
options:
  name:
    description: The MaasCluster.
    type: str
    required: true
  state:
    description: V(present) or V(absent).
    type: str
    choices: [present, absent]
    default: present
  wait:
    description:
      - With O(state=present), step until the MaasCluster is ready (the DNS record exists and the endpoint is
        set), or until the API server is available with O(wait_for_api_server).
      - With O(state=absent), until everything is gone.
    type: bool
    default: true
  wait_for_api_server:
    description: Also wait until the workload cluster's API server answers.
    type: bool
    default: false
  wait_timeout:
    description: Seconds to wait.
    type: int
    default: 1800
  wait_sleep:
    description: Seconds between polls.
    type: float
    default: 2
  workers:
    description: With O(state=absent), how many machines are deleted at the same time.
    type: int
    default: 8
  preferred_subnets:
    description: CIDRs whose control-plane addresses are preferred for the DNS record.
    type: list
    elements: str
  workload_kubeconfig:
    description: Kubeconfig (text or a path) of the workload cluster, instead of the C(<cluster>-kubeconfig) Secret.
    type: str
seealso:
  - module: baremetal.capi.maas_machine
  - module: baremetal.capi.maas_dns
"""

EXAMPLES = r"""
- name: The API endpoint of cluster c1
  baremetal.capi.maas_cluster:
    name: c1
    namespace: capi
  register: c1

- name: Show the endpoint
  ansible.builtin.debug:
    msg: "{{ c1.object.spec.controlPlaneEndpoint }}"

- name: Delete the cluster, its machines and its DNS record
  baremetal.capi.maas_cluster:
    name: c1
    namespace: capi
    state: absent
"""

RETURN = r"""
object:
  description: The MaasCluster afterwards (in check mode, as it would be).
  returned: always
  type: dict
dns_name:
  description: The API endpoint's DNS name.
  returned: with O(state=present)
  type: str
  sample: c1-3f9a2c.maas
dns:
  description: The DNS record before and after (C(fqdn), C(before), C(after), C(created), C(changed)).
  returned: with O(state=present)
  type: dict
api_server_available:
  description: Whether the workload cluster's API server answered.
  returned: with O(state=present)
  type: bool
message:
  description: Where the cluster is.
  returned: always
  type: str
machines:
  description: With O(state=absent), one entry per deleted machine (C(name), C(done), C(failed), C(message)).
  returned: with O(state=absent)
  type: list
  elements: dict
"""

from ansible_collections.baremetal.capi.plugins.module_utils.maas import client as maas_client  # noqa: E402
from ansible_collections.baremetal.capi.plugins.module_utils.maas import cluster_task  # noqa: E402
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
            state=dict(type="str", choices=["present", "absent"], default="present"),
            **wait_argument_spec(),
            wait_for_api_server=dict(type="bool", default=False),
            workers=dict(type="int", default=8),
            preferred_subnets=dict(type="list", elements="str"),
            workload_kubeconfig=dict(type="str", no_log=True),
        ),
        maas=True,
        supports_check_mode=True,
    )
    p = module.params
    ns = p["namespace"] or module.namespace
    with module.errors():
        out = cluster_task.run(
            module.store,
            maas_client.connect(module.maas_options()),
            p["name"],
            ns,
            state=p["state"],
            workload_kubeconfig=p["workload_kubeconfig"],
            subnets=p["preferred_subnets"],
            check=module.check_mode,
            wait=p["wait"],
            timeout=p["wait_timeout"] if p["wait"] else None,
            poll=p["wait_sleep"],
            workers=p["workers"],
            wait_for_api_server=p["wait_for_api_server"],
        )
    res = out["result"]
    stuck = res.failed or (p["wait"] and not module.check_mode and not res.done)
    if p["state"] == "absent":
        if stuck:
            module.fail(f"MaasCluster {ns}/{p['name']}: {res.message}", machines=out["machines"])
        module.exit(
            res.changed, before=out["before"], after=None, object=None, message=res.message, machines=out["machines"]
        )
    result = dict(
        object=out["after"],
        dns_name=res.data.get("dnsName"),
        dns=res.data.get("dns"),
        api_server_available=res.data.get("apiServerAvailable"),
        message=res.message,
    )
    if stuck:
        module.fail(f"MaasCluster {ns}/{p['name']}: {res.message}", changed=res.changed, **result)
    module.exit(res.changed, before=out["before"], after=out["after"], **result)


if __name__ == "__main__":
    main()
