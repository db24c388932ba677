#!/usr/bin/python
# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# The Apache License 2.0 is compatible with the GNU General Public License version 3 (GPLv3).

from __future__ import annotations

DOCUMENTATION = r"""
module: metal3_remediation
short_description: Remediate Metal3 machines by reboot as CAPM3's Metal3Remediation controller does
version_added: 0.1.0
description:
  - For each Machine of O(machines), creates its Metal3Remediation (named like the Machine, owned by it) when it has
    none - from the Metal3RemediationTemplate O(template) (the template webhook's defaults - type V(Reboot),
    timeoutSeconds V(600), retryLimit V(1)) or from O(strategy) - and only when the Machine is unhealthy (its Node
    NotReady, Unknown or gone, or the annotation C(cluster.x-k8s.io/remediate-machine)) unless O(force=true).
    The webhook rules hold - type V(Reboot) only, timeoutSeconds V(0) or at least V(100), retryLimit at least V(1).
  - Then runs the reboot strategy, phases C(Running), C(Waiting), C(Deleting machine), C(Failed). C(Running) - the
    finalizer C(metal3remediation.infrastructure.cluster.x-k8s.io), the power-off request
    C(reboot.metal3.io/metal3-remediation-<uid>={"mode":"hard","force":false}) on the BareMetalHost (carried out by
    the host driver), and once the host is off the Node fenced (see O(fencing)). C(Waiting) - the request removed
    (power on), the Node restored once it is back, then either the Node is Ready again (the remediation is done) or
    after C(timeoutSeconds) since C(status.lastRemediated) a retry (C(status.retryCount) + 1, back to C(Running)),
    up to C(retryLimit) retries. At the limit the host is annotated C(capm3.metal3.io/unhealthy=capm3/UnhealthyNode)
    (host choice skips it), the Machine gets C(OwnerRemediated=False) reason C(WaitingForRemediation) (its
    MachineSet or control plane replaces it), and the phase is C(Deleting machine). A host with
    C(spec.online=false) ends in C(Failed).
  - Every step is recorded in the store before it acts; a run interrupted anywhere continues from the recorded phase
    and never power cycles the host twice for the same retry.
  - Differences from CAPM3 - the timeout also runs while the host has not come back on; O(fencing=auto) looks at the
    workload cluster's API server version (CAPM3 looks at the management cluster's, whose version does not decide
    whether the workload cluster honours the taint); the remediation is done once the Node is Ready, and then
    deleted as MachineHealthCheck deletes it for a healthy Machine (so a later failure starts afresh); no pods are
    drained (none are scheduled by this collection).
  - O(state=absent) deletes the remediations - the power-off request is taken back and the Node restored first.
  - In check mode nothing is written; each machine reports the next thing that would be done.
author:
  - baremetal.capi contributors (!UNKNOWN)
extends_documentation_fragment:
  - baremetal.capi.store
  - baremetal.capi.namespace
  - baremetal.capi.wait
  - baremetal.capi.host_driver
  - baremetal.capi.attributes.no_diff
options:
  machines:
    description: The Machines to remediate (the remediations are named like them). A single name is accepted.
    type: list
    elements: str
    required: true
  state:
    description: V(present) remediates; V(absent) deletes the remediations.
    type: str
    choices: [present, absent]
    default: present
  template:
    description: A Metal3RemediationTemplate to create the remediation from (its C(spec.template.spec)).
    type: str
  strategy:
    description: C(spec.strategy) when there is no O(template); without either, type V(Reboot) and the defaults.
    type: dict
    suboptions:
      type:
        description: The strategy; only V(Reboot) exists.
        type: str
        default: Reboot
      retryLimit:
        description: Retries after the first attempt (at least 1; default 1).
        type: int
      timeoutSeconds:
        description: Seconds to wait for the Node after each power cycle (V(0) or at least 100; default 600).
        type: int
  force:
    description: Create the remediation even when the Machine looks healthy.
    type: bool
    default: false
  fencing:
    description:
      - V(taint) - the out-of-service taint C(node.kubernetes.io/out-of-service=nodeshutdown:NoExecute) while the
        host is off, removed when it is back.
      - V(delete) - the Node's labels and annotations are backed up into the remediation's annotations
        C(remediation.metal3.io/node-labels-backup) and C(remediation.metal3.io/node-annotations-backup), the Node is
        deleted, and when it registers again they are restored, keys the new Node has winning.
      - V(auto) - V(taint) when the workload API server is 1.28 or newer, else V(delete).
    type: str
    choices: [auto, taint, delete]
    default: auto
  host_driver:
    description:
      - V(ironic) - the collection powers the host through Ironic as baremetal-operator would.
      - V(external) - something else moves the host (a baremetal-operator); only C(status.poweredOn) is read.
    type: str
    choices: [ironic, external]
    default: ironic
  host_driver_options:
    description: Options of the host driver (for V(ironic) C(cloud) or C(ironic_url), and C(poll)).
    type: dict
    default: {}
  workload_kubeconfig:
    description: A kubeconfig (path or text) for the workload cluster, instead of the C(<cluster>-kubeconfig) Secret.
    type: str
  wait:
    description:
      - Reconcile until each remediation is done (Node Ready again) or terminal (C(Deleting machine), C(Failed)).
      - V(false) runs one step per machine.
    type: bool
    default: true
  wait_timeout:
    description: Seconds for the whole task; on timeout it fails with each machine's phase and why it waits.
    type: int
    default: 1800
  wait_sleep:
    description: Seconds between two reconciles of a remediation that waits.
    type: float
    default: 2
  workers:
    description: How many machines are reconciled at the same time.
    type: int
    default: 8
"""

EXAMPLES = r"""
- name: Remediate the unhealthy machines of a health check
  baremetal.capi.metal3_remediation:
    machines: "{{ health.unhealthy | map(attribute='machine') | list }}"
    namespace: metal3
    template: workers-remediation
    host_driver_options:
      cloud: metal3

- name: One step of one machine's remediation, fencing by deleting the Node
  baremetal.capi.metal3_remediation:
    machines: test1-workers-7xk2p
    strategy:
      type: Reboot
      retryLimit: 2
      timeoutSeconds: 300
    fencing: delete
    wait: false
"""

RETURN = r"""
remediations:
  description: One entry per Machine.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: The Machine (and remediation) name.
      type: str
    done:
      description: Done - the Node is Ready again, a terminal phase, nothing to remediate, or deleted.
      type: bool
    failed:
      description: The step raised an error; see C(message).
      type: bool
    changed:
      description: Something was written for this machine.
      type: bool
    message:
      description: The last thing done, or what the remediation waits for.
      type: str
    phase:
      description: C(status.phase).
      type: str
    retryCount:
      description: C(status.retryCount).
      type: int
    lastRemediated:
      description: C(status.lastRemediated).
      type: str
    outcome:
      description: V(remediated), V(Deleting machine), V(Failed), or V(healthy) when nothing was created.
      type: str
    host:
      description: The BareMetalHost.
      type: str
    poweredOn:
      description: The host's C(status.poweredOn).
      type: bool
"""

from ansible_collections.baremetal.capi.plugins.module_utils.module import (  # noqa: E402
    CapiModule,
    host_driver_argument_spec,
    remediation_argument_spec,
    remediation_arguments,
)


def main():
    from ansible_collections.baremetal.capi.plugins.module_utils.remediation import run

    module = CapiModule(
        argument_spec=remediation_argument_spec(template=dict(type="str"), **host_driver_argument_spec()),
        mutually_exclusive=[("template", "strategy")],
        supports_check_mode=True,
    )
    p = module.params
    with module.errors():
        from ansible_collections.baremetal.capi.plugins.module_utils.hosts.drivers import get_driver
        from ansible_collections.baremetal.capi.plugins.module_utils.remediation.targets import Metal3Target

        driver = get_driver(p["host_driver"], p["host_driver_options"])
        try:
            target = Metal3Target(module.store, driver)
            args = remediation_arguments(p, module.namespace, module.check_mode)
            results = run.remediate_machines(module.store, target, template=p["template"], **args)
        finally:
            driver.close()
    module.exit_results(results, "remediations", "remediation", p["wait"])


if __name__ == "__main__":
    main()
