#!/usr/bin/python
# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# The Apache License 2.0 is compatible with the GNU General Public License version 3 (GPLv3).

from __future__ import annotations

DOCUMENTATION = r"""
module: maas_machine
short_description: Allocate, deploy and release the MAAS machines of MaasMachines, as CAPMAAS does
version_added: 0.1.0
description:
  - Reconciles C(infrastructure.cluster.x-k8s.io/v1beta1) MaasMachines - one (O(name)) or every one of a cluster
    (O(cluster)), concurrently, with one deadline - the way the CAPMAAS MaasMachine controller does, and plays the
    Cluster API Machine controller for their Machines.
  - O(state=present) waits for the Machine's bootstrap data, allocates a MAAS machine (C(cpu_count) = C(minCPU),
    C(mem) = C(minMemory), C(zone) = the failure domain, C(pool) = C(resourcePool), every one of C(tags), and
    C(system_id) when C(spec.systemID) is set before allocation), records the providerID
    C(maas:///<zone>/<system_id>) at once, sets C(swap_size=0) (see O(disable_swap)), deploys with the bootstrap
    data base64-encoded as C(user_data), C(osystem)/C(distro_series) split from C(image) (C(custom) when it has no
    C(/)) and C(ephemeral_deploy) from C(deployInMemory).
  - With C(spec.lxd.enabled) (CAPMAAS's LXD VM path) the machine is a VM composed on an LXD VM host first - named
    from the C(maas.spectrocloud.com/vm-name) annotation or C(vm-<name>-<uid[:5]>), on the host in the failure
    domain and C(resourcePool) with the most free memory that has C(minCPU) cores, C(minMemory) MiB and
    max(C(minDiskSize), C(lxd.vmConfig.diskSize), default 60) GB free - then allocated by its system_id once MAAS
    has commissioned it and deployed to disk; O(state=absent) releases and deletes it, which decomposes the VM.
  - C(spec.staticIP) (C({ip, cidr}), spectro-master's field) gives the boot interface that static address before
    deploying (its links unlinked, one STATIC link on the subnet); a bad address is refused before allocation.
  - C(spec.deployInMemory=true) deploys ephemerally (MAAS C(ephemeral_deploy)); the OS runs from memory, the disks
    are not touched, and a reboot brings back only what MAAS serves again.
  - A deployment that ends in C(Failed deployment) is released and forgotten, and that machine is kept out of this
    MaasMachine's allocations for 10 minutes (the next run takes another one, not the same one again). A machine
    that goes C(Broken) is forgotten but not released - MAAS released it when it was marked broken, and releasing
    it again would put it back in the pool unfixed; it stays C(Broken) until an admin marks it fixed. Either way the
    machine's task fails, and the next run allocates another.
  - A Deployed machine is powered on only when MAAS says its power state is C(off); C(error) and C(unknown) are not
    C(off) (IPMI power on power-cycles a host that may be running). M(baremetal.capi.maas_remediation) follows the
    same rule.
  - Control-plane machines wait until the API endpoint's DNS record holds their address; the DNS reconcile of
    M(baremetal.capi.maas_dns) runs for their cluster on every round, so they never wait on a step nobody runs.
  - Then the workload Node whose name matches the MAAS hostname (lower-case, the short name, or a C(<hostname>.)
    prefix) gets C(spec.providerID), and the Machine gets its providerID, addresses (InternalIP and ExternalIP),
    nodeRef and phase.
  - O(state=absent) deletes the Machine and the MaasMachine; a control-plane machine first leaves the DNS record,
    then the MAAS machine is released, then the Node is deleted.
  - In check mode nothing is written or allocated; the result says which machine would be allocated (MAAS's
    C(dry_run)) and what the DNS record would become. Each machine's dry run is asked on its own, so two machines
    of one task may name the same candidate.
  - MAAS calls are retried on 503 (and reads on 500/502/504 and dropped connections) with a backoff; an allocation
    that MAAS may have done before an error is found again by its C(agent_name) on the next step.
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
    description: One MaasMachine.
    type: str
  cluster:
    description: Every MaasMachine of this Cluster (label C(cluster.x-k8s.io/cluster-name)).
    type: str
  state:
    description: V(present) deploys, V(absent) releases and deletes.
    type: str
    choices: [present, absent]
    default: present
  disable_swap:
    description:
      - Set C(swap_size=0) on the machine before deploying, as CAPMAAS does.
      - Turn it off when the MAAS user may not edit machines (CAPMAAS issue 85).
    type: bool
    default: true
  preferred_subnets:
    description:
      - CIDRs; control-plane addresses in them are preferred for the DNS record.
      - When not given, the C(maas-preferred-subnet) ConfigMap (key C(preferredSubnets)) of the namespace.
    type: list
    elements: str
  workload_kubeconfig:
    description:
      - Kubeconfig (text or a path) of the workload cluster, instead of the C(<cluster>-kubeconfig) Secret.
    type: str
  wait:
    description: Reconcile until every machine is Running (or gone), fails, or O(wait_timeout) passes.
    type: bool
    default: true
  wait_timeout:
    description: Seconds to wait.
    type: int
    default: 1800
  wait_sleep:
    description: Seconds between polls of a machine that is not done yet.
    type: float
    default: 2
  workers:
    description: How many machines are reconciled at the same time.
    type: int
    default: 8
notes:
  - TLS certificates of the MAAS region are verified unless O(maas_validate_certs=false).
seealso:
  - module: baremetal.capi.maas_cluster
  - module: baremetal.capi.maas_dns
  - module: baremetal.capi.maas_machine_info
"""

EXAMPLES = r"""
- name: Deploy every machine of cluster c1
  baremetal.capi.maas_machine:
    cluster: c1
    namespace: capi
    maas_url: http://maas.example.com:5240/MAAS/
    maas_api_key: "{{ maas_api_key }}"

- name: Which machine would the first control plane get?
  baremetal.capi.maas_machine:
    name: c1-cp-0
  check_mode: true
  register: plan

- name: Remove a control-plane machine (it leaves the DNS record before it is released)
  baremetal.capi.maas_machine:
    name: c1-cp-2
    state: absent
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
    namespace:
      description: Its namespace.
      type: str
    changed:
      description: Whether this machine changed.
      type: bool
    failed:
      description: Whether it failed (or did not finish in time).
      type: bool
    message:
      description: Where it is, or why it failed.
      type: str
      sample: node-03 Deployed; Node node-03; Machine Running
    providerID:
      description: C(maas:///<zone>/<system_id>).
      type: str
    systemID:
      description: The MAAS system ID.
      type: str
    hostname:
      description: The MAAS hostname.
      type: str
    machineState:
      description: The MAAS status name.
      type: str
      sample: Deployed
    would_allocate:
      description: In check mode, the machine MAAS would allocate (C(system_id), C(hostname)).
      type: dict
      returned: check mode, for a machine not allocated yet
    object:
      description: The MaasMachine as stored afterwards.
      type: dict
dns:
  description: The API record of the cluster after the run (in check mode, what it would become).
  returned: when the machines' cluster has a DNS name
  type: dict
  contains:
    fqdn:
      description: The record's name.
      type: str
    before:
      description: Its addresses before.
      type: list
      elements: str
    after:
      description: Its addresses after.
      type: list
      elements: str
"""

from ansible_collections.baremetal.capi.plugins.module_utils.maas import batch  # noqa: E402
from ansible_collections.baremetal.capi.plugins.module_utils.maas import client as maas_client  # noqa: E402
from ansible_collections.baremetal.capi.plugins.module_utils.maas import machine as maas_machine  # noqa: E402
from ansible_collections.baremetal.capi.plugins.module_utils.module import (  # noqa: E402
    CapiModule,
    namespace_argument_spec,
    wait_argument_spec,
)


def main():
    module = CapiModule(
        argument_spec=dict(
            name=dict(type="str"),
            cluster=dict(type="str"),
            **namespace_argument_spec(),
            state=dict(type="str", choices=["present", "absent"], default="present"),
            disable_swap=dict(type="bool", default=True),
            preferred_subnets=dict(type="list", elements="str"),
            workload_kubeconfig=dict(type="str", no_log=True),
            **wait_argument_spec(),
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
        mgr = maas_machine.MachineManager(
            module.store,
            client,
            workload_kubeconfig=p["workload_kubeconfig"],
            disable_swap=p["disable_swap"],
            subnets=p["preferred_subnets"],
        )
        out = batch.reconcile_many(
            mgr,
            ns,
            name=p["name"],
            cluster=p["cluster"],
            delete=p["state"] == "absent",
            check=module.check_mode,
            wait=p["wait"],
            timeout=p["wait_timeout"],
            poll=p["wait_sleep"],
            workers=p["workers"],
        )
    failures = [f"MaasMachine {m['namespace']}/{m['name']}: {m['message']}" for m in out["machines"] if m["failed"]]
    if failures:
        module.fail("; ".join(failures), machines=out["machines"], dns=out["dns"], changed=out["changed"])
    module.exit(out["changed"], before=out["before"], after=out["after"], machines=out["machines"], dns=out["dns"])


if __name__ == "__main__":
    main()
