#!/usr/bin/python
# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# The Apache License 2.0 is compatible with the GNU General Public License version 3 (GPLv3).

from __future__ import annotations

DOCUMENTATION = r"""
module: metal3_machine
short_description: Provision and delete Metal3Machines on BareMetalHosts as CAPM3 and Cluster API do
version_added: 0.1.0
description:
  - Reconciles one Metal3Machine (O(name)) or every Metal3Machine of a cluster (O(cluster)) at once, concurrently,
    the way CAPM3's Metal3Machine controller and Cluster API's Machine controller would, until each machine is
    Running or the deadline passes.
  - B(Associate) - chooses a BareMetalHost as CAPM3's chooseHost does (C(spec.hostSelector) with C(matchLabels) and
    C(matchExpressions), operators lower-cased; the machine's failure domain preferred, falling back to any; node
    reuse labels C(cp-<name>)/C(md-<name>); deleting, errored, paused and unhealthy hosts skipped; only C(ready) or
    C(available) hosts; a uniformly random pick) and claims it by writing C(spec.consumerRef) at the
    resourceVersion it was read at. Two playbooks racing never claim the same host; the loser chooses again.
  - B(Provision) - user data from the Machine's bootstrap data secret (which wins over C(spec.userData)); with a
    C(spec.dataTemplate), the Metal3DataClaim, Metal3Data and the C(<machine>-metadata)/C(<machine>-networkdata)
    Secrets (see M(baremetal.capi.metal3_data)); then the host spec (image url/checksum/checksumType/format,
    customDeploy, userData, metaData, networkData, automatedCleaningMode, online). A host that already has an
    image is never touched. The host is then moved by the host driver (O(host_driver)) until C(provisioned).
  - B(Node) - the providerID C(metal3://<namespace>/<host>/<machine>) is set on the workload cluster's Node found by
    the label C(metal3.io/uuid=<host uid>), or else by C(kubernetes.io/hostname); the workload API is reached
    through the C(<cluster>-kubeconfig) Secret (or O(workload_kubeconfig)). Then what Cluster API core does - the
    providerID copied to the Machine, C(status.nodeRef), addresses, phase, the
    C(node.cluster.x-k8s.io/uninitialized) taint removed, the Cluster's infrastructure marked provisioned.
  - B(Pause) - a paused Cluster pauses its hosts (C(baremetalhost.metal3.io/paused=metal3.io/capm3)) and its
    machines; unpausing removes only that pause.
  - O(state=absent) deletes the Machine and the Metal3Machine - data and addresses released, the host
    deprovisioned and released (node-reuse labelled when the template asks), then the Node, the finalizers last.
  - In check mode nothing is written; each machine reports the host it would get (two machines of one task are
    never promised the same host).
author:
  - baremetal.capi contributors (!UNKNOWN)
extends_documentation_fragment:
  - baremetal.capi.store
  - baremetal.capi.namespace
  - baremetal.capi.wait
  - baremetal.capi.host_driver
  - baremetal.capi.attributes.no_diff
options:
  name:
    description: One Metal3Machine. Mutually exclusive with O(names) and O(cluster).
    type: str
  names:
    description: Several Metal3Machines, reconciled concurrently.
    type: list
    elements: str
  cluster:
    description:
      - Every Metal3Machine of this Cluster (named by its Machines, or labelled with C(cluster.x-k8s.io/cluster-name)).
    type: str
  state:
    description: V(present) provisions; V(absent) deletes.
    type: str
    choices: [present, absent]
    default: present
  host_driver:
    description:
      - V(ironic) - the collection moves the hosts through Ironic as baremetal-operator would.
      - V(external) - something else moves them (a baremetal-operator, or M(baremetal.capi.baremetalhost) run as its
        own step); this module only writes the host spec and waits on the host status.
    type: str
    choices: [ironic, external]
    default: ironic
  workload_kubeconfig:
    description:
      - A kubeconfig (path or text) for the workload cluster's API, instead of the C(<cluster>-kubeconfig) Secret.
    type: str
  wait:
    description: Reconcile until every machine is Running (or gone, with O(state=absent)).
    type: bool
    default: true
  wait_for:
    description:
      - V(running) - a machine is done once its Machine is Running (its Node has the providerID).
      - V(provisioned) - once its host is provisioned; the Node step is still tried and its state reported.
    type: str
    choices: [running, provisioned]
    default: running
  wait_timeout:
    description: Seconds for the whole task; on timeout it fails with each machine's last state and why it waits.
    type: int
    default: 1800
  wait_sleep:
    description: Seconds between two reconciles of a machine that waits.
    type: float
    default: 2
  no_host_retry:
    description: Seconds before a machine that found no available host looks again.
    type: float
    default: 30
  workers:
    description: How many machines are reconciled at the same time.
    type: int
    default: 8
"""

EXAMPLES = r"""
- name: Provision every machine of cluster test1, hosts moved through Ironic
  baremetal.capi.metal3_machine:
    cluster: test1
    namespace: metal3
    host_driver_options:
      cloud: metal3
  register: machines

- name: Which host would each machine get?
  baremetal.capi.metal3_machine:
    cluster: test1
    namespace: metal3
  check_mode: true

- name: Delete one machine
  baremetal.capi.metal3_machine:
    name: test1-workers-7xk2p
    namespace: metal3
    state: absent
"""

RETURN = r"""
machines:
  description: One entry per Metal3Machine.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: C(<namespace>/<name>).
      type: str
    done:
      description: The machine reached its goal (Running, or gone).
      type: bool
    failed:
      description: The machine failed (for example its host reports an error); see C(message).
      type: bool
    changed:
      description: Something was written for this machine.
      type: bool
    message:
      description: The last thing done, or why the machine waits (C(No available host found), the host's state).
      type: str
    host:
      description: The BareMetalHost (in check mode, the one it would get).
      type: str
    host_state:
      description: The host's provisioning state.
      type: str
    providerID:
      description: The machine's providerID once set.
      type: str
    machinePhase:
      description: The Machine's phase once provisioned.
      type: str
    hostStatus:
      description: The host's state, power and error (C(errorType), C(errorMessage)) while it is being provisioned.
      type: dict
"""

from ansible_collections.baremetal.capi.plugins.module_utils.module import (  # noqa: E402
    CapiModule,
    host_driver_argument_spec,
    namespace_argument_spec,
    wait_argument_spec,
)


def main():
    module = CapiModule(
        argument_spec=dict(
            name=dict(type="str"),
            names=dict(type="list", elements="str"),
            cluster=dict(type="str"),
            **namespace_argument_spec(),
            state=dict(type="str", choices=["present", "absent"], default="present"),
            **host_driver_argument_spec(),
            workload_kubeconfig=dict(type="str", no_log=True),
            **wait_argument_spec(),
            wait_for=dict(type="str", choices=["running", "provisioned"], default="running"),
            no_host_retry=dict(type="float", default=30),
            workers=dict(type="int", default=8),
        ),
        mutually_exclusive=[("name", "names", "cluster")],
        required_one_of=[("name", "names", "cluster")],
        supports_check_mode=True,
    )
    p = module.params
    ns = p["namespace"] or module.namespace
    with module.errors():
        from ansible_collections.baremetal.capi.plugins.module_utils.hosts.drivers import get_driver
        from ansible_collections.baremetal.capi.plugins.module_utils.metal3.machine import MachineManager

        store = module.store
        driver = get_driver(p["host_driver"], p["host_driver_options"])
        try:
            mgr = MachineManager(
                store,
                driver,
                workload_kubeconfig=p["workload_kubeconfig"],
                no_host_requeue=p["no_host_retry"],
                wait_for=p["wait_for"],
            )
            if p["name"] or p["names"]:
                keys = [(ns, n) for n in ([p["name"]] if p["name"] else p["names"])]
            else:
                keys = mgr.keys_for_cluster(p["cluster"], ns)
                if p["state"] == "present":
                    keys = [k for k in keys if _exists(store, k)]
            results = mgr.run(
                keys,
                delete=p["state"] == "absent",
                check=module.check_mode,
                wait=p["wait"],
                timeout=p["wait_timeout"],
                poll=p["wait_sleep"],
                workers=p["workers"],
            )
        finally:
            driver.close()
        module.exit_results(results, "machines", "machine", p["wait"])


def _exists(store, key) -> bool:
    from ansible_collections.baremetal.capi.plugins.module_utils.capi import refs

    return refs.get_or_none(store, "Metal3Machine", key[1], key[0]) is not None


if __name__ == "__main__":
    main()
