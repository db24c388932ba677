#!/usr/bin/python
# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# The Apache License 2.0 is compatible with the GNU General Public License version 3 (GPLv3).

from __future__ import annotations

DOCUMENTATION = r"""
module: machine_health_info
short_description: Which Machines need remediation, by Cluster API's MachineHealthCheck rule
version_added: 0.1.0
description:
  - Judges the Machines of a namespace (of O(cluster), matching O(selector)) as a MachineHealthCheck does, and
    changes nothing. A Machine is unhealthy when it has the annotation C(cluster.x-k8s.io/remediate-machine)
    (reason C(HasRemediateAnnotation)), when its Node was deleted (C(NodeDeleted)), when it has no Node
    O(node_startup_timeout) seconds after the latest of its creation, the Cluster's C(InfrastructureReady) and
    C(ControlPlaneInitialized) and its own C(InfrastructureReady) (C(NodeStartupTimeout)), or when a condition of
    O(unhealthy_node_conditions) has held longer than its timeout (C(UnhealthyNode)).
  - Machines with C(cluster.x-k8s.io/skip-remediation), paused ones (annotation C(cluster.x-k8s.io/paused) or a
    paused Cluster), Machines being deleted and workers of a Cluster whose control plane is not initialized are
    skipped. So are the Machines of a workload cluster whose API cannot be reached (unless annotated).
  - The Nodes are read from the workload cluster through the C(<cluster>-kubeconfig) Secret (or
    O(workload_kubeconfig)), each cluster's once.
author:
  - baremetal.capi contributors (!UNKNOWN)
extends_documentation_fragment:
  - baremetal.capi.store
  - baremetal.capi.namespace
  - baremetal.capi.attributes.INFO_MODULE
options:
  health_check:
    description:
      - A MachineHealthCheck in the store whose C(spec) gives the rule - C(clusterName), C(selector),
        C(checks.nodeStartupTimeoutSeconds), C(checks.unhealthyNodeConditions) and
        C(checks.unhealthyMachineConditions) (v1beta1 fields accepted) - in place of the options below, and whose
        C(remediation.triggerIf) (C(unhealthyLessThanOrEqualTo), C(unhealthyInRange)) decides RV(remediation_allowed).
    type: str
  cluster:
    description: Only the Machines of this Cluster.
    type: str
  selector:
    description: A label selector the Machines must match (string, or C(matchLabels)/C(matchExpressions)).
    type: raw
  unhealthy_timeout:
    description: Seconds a Node may be C(Ready=False) or C(Ready=Unknown) before its Machine is unhealthy.
    type: int
    default: 300
  unhealthy_node_conditions:
    description:
      - Instead of the Ready rule above, C(checks.unhealthyNodeConditions) - each C({type, status, timeoutSeconds}),
        ORed.
    type: list
    elements: dict
  node_startup_timeout:
    description: C(checks.nodeStartupTimeoutSeconds); V(0) disables the check.
    type: int
    default: 600
  workload_kubeconfig:
    description: A kubeconfig (path or text) for the workload cluster, instead of the C(<cluster>-kubeconfig) Secret.
    type: str
"""

EXAMPLES = r"""
- name: What needs remediation in cluster test1
  baremetal.capi.machine_health_info:
    cluster: test1
    namespace: metal3
    unhealthy_timeout: 300
  register: health

- name: Remediate it
  baremetal.capi.metal3_remediation:
    machines: "{{ health.unhealthy | map(attribute='machine') | list }}"
    namespace: metal3
  when: health.unhealthy | length > 0
"""

RETURN = r"""
machines:
  description: Every Machine judged.
  returned: always
  type: list
  elements: dict
  contains:
    machine:
      description: The Machine.
      type: str
    cluster:
      description: Its Cluster.
      type: str
    node:
      description: Its Node (from C(status.nodeRef)).
      type: str
    healthy:
      description: Whether the rule finds it healthy.
      type: bool
    skipped:
      description: Why it was not judged (V(skip-remediation), V(paused), V(deleting), V(unreachable), ...), or null.
      type: str
    reason:
      description: V(HasRemediateAnnotation), V(NodeDeleted), V(NodeStartupTimeout) or V(UnhealthyNode).
      type: str
    message:
      description: Details.
      type: str
unhealthy:
  description:
    - The entries of RV(machines) that need remediation; empty when RV(remediation_allowed) is false.
  returned: always
  type: list
  elements: dict
remediation_allowed:
  description: Whether the MachineHealthCheck's C(remediation.triggerIf) lets the unhealthy machines be remediated.
  returned: always
  type: bool
remediation_blocked:
  description: Why remediation is not allowed (too many unhealthy machines).
  returned: when RV(remediation_allowed) is false
  type: str
remediation_template:
  description: The MachineHealthCheck's C(remediation.templateRef) name (a Metal3RemediationTemplate).
  returned: when O(health_check) names one with a templateRef
  type: str
"""

from ansible_collections.baremetal.capi.plugins.module_utils.module import CapiModule, namespace_argument_spec  # noqa: E402


def main():
    module = CapiModule(
        argument_spec=dict(
            health_check=dict(type="str"),
            cluster=dict(type="str"),
            **namespace_argument_spec(),
            selector=dict(type="raw"),
            unhealthy_timeout=dict(type="int", default=300),
            unhealthy_node_conditions=dict(type="list", elements="dict"),
            node_startup_timeout=dict(type="int", default=600),
            workload_kubeconfig=dict(type="str", no_log=True),
        ),
        supports_check_mode=True,
    )
    p = module.params
    ns = p["namespace"] or module.namespace
    with module.errors():
        from ansible_collections.baremetal.capi.plugins.module_utils.remediation import health

        kwargs = dict(
            cluster=p["cluster"],
            selector=p["selector"],
            unhealthy_conditions=p["unhealthy_node_conditions"],
            unhealthy_timeout=p["unhealthy_timeout"],
            node_startup_timeout=p["node_startup_timeout"],
        )
        mhc = None
        if p["health_check"]:
            mhc = module.store.get("MachineHealthCheck", p["health_check"], ns)
            kwargs.update(health.from_health_check(mhc))
        machines = health.check(module.store, ns, workload_kubeconfig=p["workload_kubeconfig"], **kwargs)
        unhealthy = [m for m in machines if not m["healthy"]]
        result = dict(machines=machines, unhealthy=unhealthy, remediation_allowed=True)
        if mhc is not None:
            targets = [m for m in machines if m["skipped"] not in ("skip-remediation", "paused")]
            allowed, why = health.remediation_allowed(mhc, targets)
            if not allowed:
                result.update(unhealthy=[], remediation_allowed=False, remediation_blocked=why)
            template = (((mhc.get("spec") or {}).get("remediation") or {}).get("templateRef") or {}).get("name")
            if not template:
                template = ((mhc.get("spec") or {}).get("remediationTemplate") or {}).get("name")
            if template:
                result["remediation_template"] = template
        module.exit(changed=False, **result)


if __name__ == "__main__":
    main()
