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
  - Reconciles, in rounds, everything that makes a cluster's machines - the way the KubeadmControlPlane,
    MachineDeployment/MachineSet, kubeadm bootstrap, Machine and infrastructure (Metal3 or MAAS) controllers would
    together, since none of them runs.
  - Each round - the Cluster's infrastructure is marked provisioned; the KubeadmControlPlane creates or deletes at
    most one Machine (the first control plane is initialised before any join, joins go one at a time once every
    control-plane Machine has a Node; scale-down picks the victim as KCP does); every MachineDeployment keeps a
    MachineSet for its template and scales it (a template change rolls to a new MachineSet); Machines whose
    remediation asked for it (C(OwnerRemediated=False)) are replaced; the kubeadm bootstrap data is rendered for
    Machines that lack it (C(kubeadm init) on the first control plane, C(kubeadm join) with a bootstrap token written
    into the workload cluster for the others); every infrastructure machine (Metal3Machine or MaasMachine) takes one
    reconcile step, concurrently; deleting Machines take one Cluster API delete step.
  - With O(wait), rounds repeat until every Machine is Running with a Ready Node and nothing is left to create or
    delete, or until O(wait_timeout). Without it, one round is done and RV(converged) says whether more are needed -
    a role can loop on it with C(until) and show progress between attempts.
  - In check mode nothing is written; the result says which Machines would be created or deleted and what each
    machine's next step is.
author:
  - baremetal.capi contributors (!UNKNOWN)
extends_documentation_fragment:
  - baremetal.capi.store
  - baremetal.capi.maas
  - baremetal.capi.attributes
options:
  cluster:
    description: The Cluster whose machines are converged.
    type: str
    required: true
  namespace:
    description: The namespace. Defaults to O(store.namespace), then V(default).
    type: str
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
    description: Seconds between two rounds.
    type: float
    default: 2
  workers:
    description: How many machines are reconciled at the same time in a round.
    type: int
    default: 8
"""

EXAMPLES = r"""
- name: Converge the machines of cluster demo (control plane first, then workers)
  baremetal.capi.cluster_machines:
    cluster: demo
    namespace: demo
    host_driver_options:
      cloud: metal3

- name: One round at a time, with progress between rounds
  baremetal.capi.cluster_machines:
    cluster: demo
    namespace: demo
    wait: false
  register: round
  until: round.converged
  retries: 600
  delay: 3
"""

RETURN = r"""
converged:
  description: Every Machine is Running with a Ready Node and nothing is left to create or delete.
  returned: always
  type: bool
machines:
  description: One row per Machine of the cluster, after the last round.
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
      description: What the last round did for this machine, or why it waits.
      type: str
messages:
  description: What the control plane and each MachineDeployment did in the last round.
  returned: always
  type: list
  elements: str
rounds:
  description: How many rounds ran.
  returned: always
  type: int
"""

from ansible_collections.baremetal.capi.plugins.module_utils.module import CapiModule  # noqa: E402

_INFRA = {"metal3": "Metal3Machine", "maas": "MaasMachine"}
_CLUSTER_KIND = {"Metal3Cluster": "metal3", "MaasCluster": "maas"}


def _manager(module, provider, store):
    p = module.params
    if provider == "metal3":
        from ansible_collections.baremetal.capi.plugins.module_utils.hosts.base import get_driver
        from ansible_collections.baremetal.capi.plugins.module_utils.metal3.machine import MachineManager

        driver = get_driver(p["host_driver"], p["host_driver_options"])
        return MachineManager(store, driver, workload_kubeconfig=p["workload_kubeconfig"]), driver.close
    from ansible_collections.baremetal.capi.plugins.module_utils.maas import client as maas_client
    from ansible_collections.baremetal.capi.plugins.module_utils.maas.machine import MachineManager

    client = maas_client.connect(module.maas_options())
    mgr = MachineManager(store, client, workload_kubeconfig=p["workload_kubeconfig"], disable_swap=p["disable_swap"])
    return mgr, (lambda: None)


def main():
    module = CapiModule(
        argument_spec=dict(
            cluster=dict(type="str", required=True),
            namespace=dict(type="str"),
            provider=dict(type="str", choices=["metal3", "maas"]),
            host_driver=dict(type="str", choices=["ironic", "external"], default="ironic"),
            host_driver_options=dict(type="dict", default={}),
            disable_swap=dict(type="bool", default=True),
            workload_kubeconfig=dict(type="str", no_log=True),
            token_ttl=dict(type="int", default=14400, no_log=False),
            user_data_template=dict(type="str"),
            wait=dict(type="bool", default=True),
            wait_timeout=dict(type="int", default=1800),
            wait_sleep=dict(type="float", default=2),
            workers=dict(type="int", default=8),
        ),
        maas=True,
        supports_check_mode=True,
    )
    p = module.params
    ns = p["namespace"] or module.namespace
    with module.errors():
        from ansible_collections.baremetal.capi.plugins.module_utils.bootstrap import kubeadm
        from ansible_collections.baremetal.capi.plugins.module_utils.capi.converge import Converger

        store = module.store
        cluster = store.get("Cluster", p["cluster"], ns)
        infra_kind = ((cluster.get("spec") or {}).get("infrastructureRef") or {}).get("kind")
        provider = p["provider"] or _CLUSTER_KIND.get(infra_kind)
        if provider is None:
            module.fail(
                f"Cluster {ns}/{p['cluster']}: spec.infrastructureRef: neither Metal3Cluster nor MaasCluster; "
                "set provider"
            )
        mgr, close = _manager(module, provider, store)
        try:
            conv = Converger(
                store,
                mgr,
                p["cluster"],
                ns,
                infra_kind=_INFRA[provider],
                workers=p["workers"],
                token_ttl=p["token_ttl"],
                kubeconfig=p["workload_kubeconfig"],
                user_data_template=kubeadm.user_data_template(p["user_data_template"]),
            )
            if p["wait"] and not module.check_mode:
                report = conv.converge(timeout=p["wait_timeout"], poll=p["wait_sleep"])
            else:
                report = conv.round(check=module.check_mode)
                report["rounds"] = 1
                report["timed_out"] = False
        finally:
            close()
    result = dict(
        converged=report["done"], machines=report["machines"], messages=report["messages"], rounds=report["rounds"]
    )
    failed = [r for r in report["machines"] if r.get("failed")]
    if failed:
        module.fail(
            "; ".join(f"Machine {ns}/{r['machine']}: {r['message']}" for r in failed),
            changed=report["changed"],
            **result,
        )
    if p["wait"] and not module.check_mode and not report["done"]:
        waiting = [
            f"{r['machine']} ({r['state']}): {r['message']}"
            for r in report["machines"]
            if not (r["state"] == "Running" and r["nodeReady"])
        ]
        module.fail(
            f"cluster {ns}/{p['cluster']} not converged after {p['wait_timeout']}s: "
            + "; ".join(waiting + report["messages"]),
            changed=report["changed"],
            **result,
        )
    module.exit(report["changed"], **result)


if __name__ == "__main__":
    main()
