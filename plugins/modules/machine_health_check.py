#!/usr/bin/python
# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# The Apache License 2.0 is compatible with the GNU General Public License version 3 (GPLv3).

from __future__ import annotations

DOCUMENTATION = r"""
module: machine_health_check
short_description: Run a MachineHealthCheck once, as Cluster API's MachineHealthCheck controller does
version_added: 0.1.0
description:
  - Judges the targets of a MachineHealthCheck in the store (Machines in its namespace matching C(spec.selector) with
    the C(cluster.x-k8s.io/cluster-name) label of C(spec.clusterName)) by C(spec.checks) -
    C(nodeStartupTimeoutSeconds) (default 600, V(0) disables it) and C(unhealthyNodeConditions) /
    C(unhealthyMachineConditions) (each C({type, status, timeoutSeconds}), ORed) - and sets each target's
    C(HealthCheckSucceeded) condition (reasons C(UnhealthyNode), C(NodeStartupTimeout), C(NodeDeleted),
    C(HasRemediateAnnotation), C(UnhealthyMachine)).
  - When C(spec.remediation.triggerIf) does not hold (more unhealthy targets than C(unhealthyLessThanOrEqualTo), or a
    count outside C(unhealthyInRange)) nothing is remediated, the MachineHealthCheck gets C(RemediationAllowed=False)
    with reason C(TooManyUnhealthy), and RV(remediation_blocked) says why.
  - Otherwise, with C(spec.remediation.templateRef) (a Metal3RemediationTemplate or MaasRemediationTemplate) each
    unhealthy Machine gets its remediation, cloned from the template and named like the Machine, which
    M(baremetal.capi.metal3_remediation) / M(baremetal.capi.maas_remediation) then run; without one the Machine gets
    C(OwnerRemediated=False) (C(WaitingForRemediation)) and its owner acts on the next
    M(baremetal.capi.cluster_machines) run - a MachineSet deletes and replaces it within its MachineDeployment's
    C(spec.remediation.maxInFlight), a KubeadmControlPlane decides through its remediation guards.
  - The Nodes are read through the C(<cluster>-kubeconfig) Secret (or O(workload_kubeconfig)); a workload API that
    cannot be reached leaves its Machines unjudged.
author:
  - baremetal.capi contributors (!UNKNOWN)
extends_documentation_fragment:
  - baremetal.capi.store
  - baremetal.capi.namespace
  - baremetal.capi.attributes
options:
  name:
    description: The MachineHealthCheck.
    type: str
    required: true
  namespace:
    description: Its namespace. Defaults to O(store.namespace), then V(default).
    type: str
  workload_kubeconfig:
    description: A kubeconfig (path or text) for the workload cluster, instead of the C(<cluster>-kubeconfig) Secret.
    type: str
"""

EXAMPLES = r"""
- name: Run the workers' health check of cluster test1
  baremetal.capi.machine_health_check:
    name: test1-workers
    namespace: metal3
  register: health

- name: Say why nothing is remediated
  ansible.builtin.debug:
    msg: "{{ health.remediation_blocked }}"
  when: not health.remediation_allowed
"""

RETURN = r"""
cluster:
  description: The MachineHealthCheck's C(spec.clusterName).
  returned: always
  type: str
machines:
  description: Every Machine judged, as M(baremetal.capi.machine_health_info) returns them.
  returned: always
  type: list
  elements: dict
unhealthy:
  description: The entries of RV(machines) that need remediation; empty when RV(remediation_allowed) is false.
  returned: always
  type: list
  elements: dict
remediation_allowed:
  description: Whether C(spec.remediation.triggerIf) lets the unhealthy machines be remediated.
  returned: always
  type: bool
remediation_blocked:
  description: Why remediation is not allowed (the C(RemediationAllowed) condition's message).
  returned: when RV(remediation_allowed) is false
  type: str
remediation_template:
  description: The name of C(spec.remediation.templateRef).
  returned: when the MachineHealthCheck has one
  type: str
owner_remediated:
  description: The Machines left to their owner (C(OwnerRemediated=False)).
  returned: always
  type: list
  elements: str
externally_remediated:
  description: The Machines whose remediation was requested from the template.
  returned: always
  type: list
  elements: str
released:
  description: The Machines healthy again whose C(OwnerRemediated) condition was removed.
  returned: always
  type: list
  elements: str
errors:
  description: Machines whose remediation could not be requested (the template is missing).
  returned: when there are some
  type: list
  elements: str
status:
  description:
    - The MachineHealthCheck's status counters (C(expectedMachines), C(currentHealthy), C(remediationsAllowed),
      C(targets)).
  returned: always
  type: dict
"""

from ansible_collections.baremetal.capi.plugins.module_utils.module import CapiModule, namespace_argument_spec  # noqa: E402


def main():
    module = CapiModule(
        argument_spec=dict(
            name=dict(type="str", required=True),
            **namespace_argument_spec(),
            workload_kubeconfig=dict(type="str", no_log=True),
        ),
        supports_check_mode=True,
    )
    p = module.params
    ns = p["namespace"] or module.namespace
    with module.errors():
        from ansible_collections.baremetal.capi.plugins.module_utils.remediation import health_check

        mhc = module.store.get("MachineHealthCheck", p["name"], ns)
        out = health_check.reconcile(
            module.store, mhc, workload_kubeconfig=p["workload_kubeconfig"], check=module.check_mode
        )
        changed = out.pop("changed")
        module.exit(changed, before=mhc.get("status") or {}, after=out["status"], **out)


if __name__ == "__main__":
    main()
