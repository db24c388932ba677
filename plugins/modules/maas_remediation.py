#!/usr/bin/python
# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# The Apache License 2.0 is compatible with the GNU General Public License version 3 (GPLv3).

from __future__ import annotations

DOCUMENTATION = r"""
module: maas_remediation
short_description: Remediate MAAS machines by reboot, the way CAPM3 remediates Metal3 machines
version_added: 0.1.0
description:
  - CAPMAAS has no remediation; this module gives MAAS machines CAPM3's reboot strategy, as the kind
    C(MaasRemediation) of the group C(remediation.capi.baremetal.io/v1alpha1) with the shape of a Metal3Remediation
    (C(spec.strategy.{type,retryLimit,timeoutSeconds}), C(status.{phase,retryCount,lastRemediated})).
  - For each Machine of O(machines) whose infrastructure is a MaasMachine, creates its MaasRemediation (named like
    the Machine, owned by it) from O(strategy) when it has none, and only when the Machine is unhealthy (its Node
    NotReady, Unknown or gone, or the annotation C(cluster.x-k8s.io/remediate-machine)) unless O(force=true). The
    Metal3Remediation webhook rules hold - type V(Reboot) only, timeoutSeconds V(0) or at least V(100), retryLimit at
    least V(1); defaults retryLimit V(1), timeoutSeconds V(600).
  - The same phases as M(baremetal.capi.metal3_remediation) - C(Running) (finalizer
    C(maasremediation.remediation.capi.baremetal.io), the power-off request
    C(reboot.metal3.io/maas-remediation-<uid>) on the MaasMachine carried out with MAAS C(power_off) (stop_mode
    V(hard)), the Node fenced once MAAS reports the machine off), C(Waiting) (the request removed and MAAS
    C(power_on), the Node restored, then done once it is Ready - and the MaasRemediation deleted, as
    MachineHealthCheck does for a healthy Machine - or a retry after C(timeoutSeconds)), and at the
    retry limit C(Deleting machine) - the MAAS machine gets the tag O(unhealthy_tag), which allocation excludes
    with C(not_tags), and the Machine C(OwnerRemediated=False) reason C(WaitingForRemediation). A MAAS machine that
    is no longer deployed ends in C(Failed).
  - Every step is recorded in the store before it acts; a run interrupted anywhere continues from the recorded phase
    and never power cycles the machine twice for the same retry.
  - O(state=absent) deletes the remediations - the power-off request is taken back and the Node restored first.
  - In check mode nothing is written and MAAS is only read; each machine reports the next thing that would be done.
author:
  - baremetal.capi contributors (!UNKNOWN)
extends_documentation_fragment:
  - baremetal.capi.store
  - baremetal.capi.namespace
  - baremetal.capi.wait
  - baremetal.capi.maas
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
  strategy:
    description: C(spec.strategy); without it, type V(Reboot) and the defaults.
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
      - V(taint), V(delete) or V(auto), as in M(baremetal.capi.metal3_remediation) - the out-of-service taint, or the
        Node's labels and annotations backed up, the Node deleted and restored when it registers again; V(auto)
        takes the taint when the workload API server is 1.28 or newer.
    type: str
    choices: [auto, taint, delete]
    default: auto
  unhealthy_tag:
    description: The MAAS tag a machine gets when remediation gives up on it (created when missing).
    type: str
    default: capi-unhealthy
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
- name: Remediate the unhealthy MAAS machines found by the health check
  baremetal.capi.maas_remediation:
    machines: "{{ health.unhealthy | map(attribute='machine') | list }}"
    namespace: maas
    maas_url: http://maas.example.com:5240/MAAS/
    strategy:
      retryLimit: 2
      timeoutSeconds: 300
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
    machine:
      description: The MAAS machine's hostname.
      type: str
    system_id:
      description: The MAAS system ID.
      type: str
    power_state:
      description: MAAS's power state of the machine.
      type: str
"""

from ansible_collections.baremetal.capi.plugins.module_utils.module import (  # noqa: E402
    CapiModule,
    remediation_argument_spec,
    remediation_arguments,
)


def main():
    from ansible_collections.baremetal.capi.plugins.module_utils.remediation import run

    module = CapiModule(
        argument_spec=remediation_argument_spec(unhealthy_tag=dict(type="str", default="capi-unhealthy")),
        maas=True,
        supports_check_mode=True,
    )
    p = module.params
    with module.errors():
        from ansible_collections.baremetal.capi.plugins.module_utils.maas.client import connect
        from ansible_collections.baremetal.capi.plugins.module_utils.remediation.targets import MaasTarget

        target = MaasTarget(module.store, connect(module.maas_options()), p["unhealthy_tag"])
        args = remediation_arguments(p, module.namespace, module.check_mode)
        results = run.remediate_machines(module.store, target, **args)
    module.exit_results(results, "remediations", "remediation", p["wait"])


if __name__ == "__main__":
    main()
