#!/usr/bin/python
# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# The Apache License 2.0 is compatible with the GNU General Public License version 3 (GPLv3).

from __future__ import annotations

DOCUMENTATION = r"""
module: cluster_machines
short_description: Converge all machines of a cluster, as the Cluster API controllers do together
version_added: 0.1.0
description:
  - Reconciles everything that makes a cluster's machines - the way the KubeadmControlPlane,
    MachineDeployment/MachineSet, kubeadm bootstrap, Machine and infrastructure (Metal3 or MAAS) controllers would
    together, since none of them runs.
  - The controllers - the Cluster's infrastructure is marked provisioned; the KubeadmControlPlane creates or deletes at
    most one Machine (the first control plane is initialised before any join, joins go one at a time once every
    control-plane Machine has a Node; scale-down picks the victim as KCP does); every MachineDeployment keeps a
    MachineSet for its template and scales it (a template change rolls to a new MachineSet); Machines whose
    remediation asked for it (C(OwnerRemediated=False)) are replaced; the kubeadm bootstrap data is rendered for
    Machines that lack it (C(kubeadm init) on the first control plane, C(kubeadm join) with a bootstrap token written
    into the workload cluster for the others); every infrastructure machine (Metal3Machine or MaasMachine) takes one
    reconcile step, concurrently; deleting Machines take one Cluster API delete step.
  - With O(wait), there are no rounds - the controllers above run as one item of a loop and every machine as its
    own item, each stepped again as soon as its own dependencies allow (a machine never waits for the slowest one),
    with short adaptive polls, until every Machine is Running with a Ready Node and nothing is left to create or
    delete, or until O(wait_timeout). A step's error is retried with backoff, as a controller requeues it, and
    fails the task only at the deadline; bad input fails at once. Without O(wait), one round is done and
    RV(converged) says whether more are needed.
  - The task runs on the controller inside the ansible-playbook process (the action plugin of the same name) -
    every client (store, openstacksdk, MAAS, workload API) is opened once for the whole task, and a line is
    printed for each machine whose state, host, address, Node readiness or message changes, as it happens (with
    C(-v), the time since the start and since that machine's previous change). On a host reached through another
    connection than C(local), the module runs there instead, the same loop without the streamed lines.
  - In check mode nothing is written; the result says which Machines would be created or deleted and what each
    machine's next step is.
author:
  - baremetal.capi contributors (!UNKNOWN)
extends_documentation_fragment:
  - baremetal.capi.store
  - baremetal.capi.namespace
  - baremetal.capi.wait
  - baremetal.capi.host_driver
  - baremetal.capi.maas
  - baremetal.capi.attributes.no_diff
options:
  cluster:
    description: The Cluster whose machines are converged.
    type: str
    required: true
  provider:
    description:
      - The infrastructure provider. By default the kind of the Cluster's C(spec.infrastructureRef) decides
        (C(Metal3Cluster) or C(MaasCluster)).
    type: str
    choices: [metal3, maas]
  host_driver:
    description: Metal3 only - V(ironic) moves hosts through Ironic; V(external) leaves that to something else.
    type: str
    choices: [ironic, external]
    default: ironic
  host_driver_options:
    description: Metal3 only - options of the host driver (C(cloud) or C(ironic_url), C(poll)).
    type: dict
    default: {}
  disable_swap:
    description: MAAS only - set C(swap_size=0) on allocated machines (needs that permission).
    type: bool
    default: true
  workload_kubeconfig:
    description: A kubeconfig for the workload cluster instead of the C(<cluster>-kubeconfig) Secret.
    type: str
  token_ttl:
    description:
      - Seconds a kubeadm bootstrap token lives; it is extended while machines wait for their Node, as CABPK does.
    type: int
    default: 14400
  user_data_template:
    description:
      - Your own user data instead of the rendered cloud-config, for every machine whose bootstrap data a round
        renders. The same C(string.Template) as
        O(baremetal.capi.kubeadm_bootstrap#module:user_data_template) takes (C($kubeadm_user_data), C($machine),
        C($cluster), C($namespace), C($role)).
      - Data already rendered is not rendered again (as CABPK, bootstrap data is written once per machine).
    type: str
  wait:
    description: Repeat rounds until converged or O(wait_timeout).
    type: bool
    default: true
  wait_timeout:
    description: Seconds for the whole task (with O(wait)).
    type: int
    default: 1800
  wait_sleep:
    description:
      - The longest wait between two steps of a machine while nothing moves. After a change a machine is stepped
        again after a quarter of a second, and the wait doubles while nothing moves, up to this.
    type: float
    default: 2
  stop_when:
    description:
      - V(converged) waits for the whole cluster. V(control_plane_deployed) stops as soon as the first
        control-plane machine is deployed (MAAS - its address is in the DNS record then), so that a kubeconfig
        for that address can be written before the rest converges. V(workers_deleted) stops once no worker
        Machine is left, whatever the state of the control plane. Cluster deletion uses it, since the workers go
        first and a control plane whose Nodes are not Ready, or whose API does not answer, must not hold that up.
    type: str
    choices: [converged, control_plane_deployed, workers_deleted]
    default: converged
  workers:
    description: How many machines are reconciled at the same time.
    type: int
    default: 8
  deregister_hosts:
    description:
      - BareMetalHosts (Metal3 clusters) deleted as soon as the Machine that consumed one is gone - deprovisioned,
        powered off and their Ironic node deleted, as the P(baremetal.capi.baremetalhost#module) module's
        V(absent) does - each on its own while the other machines are still deleted. Hosts of the list that no
        deleted Machine consumed are left alone.
      - The task converges only when each of them is gone too.
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: Converge the machines of cluster demo (control plane first, then workers)
  baremetal.capi.cluster_machines:
    cluster: demo
    namespace: demo
    host_driver_options:
      cloud: metal3

- name: One round only (every machine one step), to see what the next steps are
  baremetal.capi.cluster_machines:
    cluster: demo
    namespace: demo
    wait: false
  register: round
"""

RETURN = r"""
converged:
  description: Every Machine is Running with a Ready Node and nothing is left to create or delete.
  returned: always
  type: bool
machines:
  description: One row per Machine of the cluster, at the end.
  returned: always
  type: list
  elements: dict
  contains:
    machine:
      description: The Machine's name.
      type: str
    role:
      description: V(control-plane) or V(worker).
      type: str
    host:
      description: The BareMetalHost (Metal3) or MAAS system id (MAAS).
      type: str
    address:
      description: The first InternalIP (else ExternalIP) of the Machine.
      type: str
    state:
      description: The Machine's phase (C(Pending), C(Provisioning), C(Provisioned), C(Running), C(Deleting)).
      type: str
    providerID:
      description: The Machine's providerID.
      type: str
    node:
      description: The workload cluster's Node.
      type: str
    nodeReady:
      description: Whether that Node is Ready.
      type: bool
    message:
      description: What the last step did for this machine, or why it waits.
      type: str
messages:
  description: What the control plane and each MachineDeployment did in their last step.
  returned: always
  type: list
  elements: str
rounds:
  description: How many times the cluster-level controllers ran (1 without O(wait)).
  returned: always
  type: int
steps:
  description: How many steps ran in all (the cluster-level ones and every machine's).
  returned: always
  type: int
hosts_deleted:
  description: The O(deregister_hosts) this task deleted.
  returned: with O(wait)
  type: list
  elements: str
"""

from ansible_collections.baremetal.capi.plugins.module_utils.capi import converge_task  # noqa: E402
from ansible_collections.baremetal.capi.plugins.module_utils.module import (  # noqa: E402
    CapiModule,
    cluster_machines_argument_spec,
)


def main():
    module = CapiModule(argument_spec=cluster_machines_argument_spec(), maas=True, supports_check_mode=True)
    ns = module.params["namespace"] or module.namespace
    with module.errors():
        report = converge_task.run(
            module.params, module.store, ns, maas_options=module.maas_options, check_mode=module.check_mode
        )
    result, failure = converge_task.outcome(module.params, ns, report, module.check_mode)
    changed = bool(report["changed"])
    if failure:
        module.fail(failure, changed=changed, **result)
    module.exit(changed, **result)


if __name__ == "__main__":
    main()
