#!/usr/bin/python
# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# The Apache License 2.0 is compatible with the GNU General Public License version 3 (GPLv3).

from __future__ import annotations

DOCUMENTATION = r"""
module: cluster_validate
short_description: Admit every object of a cluster description before anything is written
version_added: 0.1.0
description:
  - The first task of C(provision_cluster.yml) and C(scale_cluster.yml). It checks the cluster description
    (docs/cluster-description.md) and every object it produces through the collection's webhooks together, so a
    bad input fails the run before the first write.
  - The description's own rules come first - types and known keys, DNS-1123 names, unique pool names, odd
    control-plane replicas, CIDRs, kubelet argument types, MAAS constraint names and types, the endpoint.
  - Then every object the description filter maps (O(objects)) and the IPPools, Metal3DataTemplate,
    Metal3Cluster and BareMetalHosts the roles write from the description are admitted as the API server's
    webhooks would admit them, each against the object already stored under its name (immutable fields).
  - Then the rules that span objects - IPPools that overlap, a prefix out of range for the IP version, a start,
    end or gateway outside the subnet, networkData and metaData pools that exist, data templates that exist, BMC
    credentials that are given or stored.
  - Then what Ironic, kubeadm and the store would refuse later - image checksums of the wrong length for their
    type and URL schemes Ironic does not fetch, boot MACs that are not a NIC's or that another host (of the
    description or stored, any namespace) has, BMC addresses used twice, Kubernetes versions out of the supported
    range or skipping a minor from the stored control plane, IP pool ranges overlapping any stored pool or an
    allocated address, an endpoint inside a pool, a data template without metaData.
  - The error names the object (and the description key it comes from) and the field. Nothing is written, in
    check mode or not; the result is the plan of what the playbook would create or update.
  - With O(plan_machines=true) (the playbooks set it in check mode) the result also has RV(machines) - for every
    Machine the run would create, the BareMetalHost or MAAS machine it would get (or why none fits), the metaData
    and networkData CAPM3 would render and the addresses it would take; the replicas of the control plane and of
    each MachineDeployment before and after; the Machines a scale-down would delete - and RV(lines), that plan
    as text. It reads the store and, for MAAS, lists the machines; it writes nothing.
author:
  - baremetal.capi contributors (!UNKNOWN)
extends_documentation_fragment:
  - baremetal.capi.store
  - baremetal.capi.maas
  - baremetal.capi.attributes.INFO_MODULE
options:
  description:
    description:
      - The cluster description (the C(capi_cluster) variable).
    type: dict
    required: true
  objects:
    description:
      - The objects the description filter maps, C(capi_cluster | baremetal.capi.capi_objects('all')).
    type: list
    elements: dict
    required: true
  addons_base_dir:
    description:
      - Where the add-ons' relative manifest paths are taken from, as the C(addons) role takes them (its
        C(capi_addons_dir), else the inventory directory, else the playbook directory).
      - Default the current directory.
    type: path
    version_added: 0.2.0
  plan_machines:
    description:
      - Also plan the machines (RV(machines), RV(lines)). For a MAAS cluster the machines are listed through the
        MAAS connection options; without O(maas_url) the plan gives the constraints only.
    type: bool
    default: false
    version_added: 0.2.0
"""

EXAMPLES = r"""
- name: The description and everything it makes, before anything is written
  baremetal.capi.cluster_validate:
    description: "{{ capi_cluster }}"
    objects: "{{ capi_cluster | baremetal.capi.capi_objects('all') }}"
    store: "{{ capi_cluster.store | default({}) }}"

- name: The plan of the machines too (what provision_cluster.yml prints at the end in check mode)
  baremetal.capi.cluster_validate:
    description: "{{ capi_cluster }}"
    objects: "{{ capi_cluster | baremetal.capi.capi_objects('all') }}"
    plan_machines: "{{ ansible_check_mode }}"
  register: capi_plan
"""

RETURN = r"""
plan:
  description: Every object the description makes, with what writing it would do.
  returned: success
  type: list
  elements: dict
  contains:
    kind:
      description: The object's kind.
      type: str
      sample: IPPool
    namespace:
      description: Its namespace (null for a Namespace).
      type: str
      sample: default
    name:
      description: Its name.
      type: str
      sample: c1-prov
    action:
      description: V(create), V(update) or V(unchanged) (against the stored object).
      type: str
      sample: create
machines:
  description: The machines part of the plan (with O(plan_machines)).
  returned: when O(plan_machines=true)
  type: dict
  contains:
    exists:
      description: Whether the Cluster is stored already.
      type: bool
    groups:
      description: The KubeadmControlPlane and each MachineDeployment - C(replicas_before) (null when new),
        C(replicas), C(machines) now, how many to C(create) and C(delete).
      type: list
      elements: dict
    create:
      description: Each Machine the run would create - C(group), C(role), C(failure_domain), C(host) (null when
        none fits), C(why), and for Metal3 C(addresses), C(metaData), C(networkData).
      type: list
      elements: dict
    delete:
      description: The Machines a scale-down would delete (C(group), C(role), C(machine)).
      type: list
      elements: dict
lines:
  description: The machines plan as text, one line per group, machine, address and rendered data.
  returned: when O(plan_machines=true)
  type: list
  elements: str
  sample:
    - "plan of demo/c1 (metal3, new cluster): 5 machine(s) to create, 0 to delete - nothing written (check mode)"
"""

from ansible_collections.baremetal.capi.plugins.module_utils.capi import plan as machines_plan  # noqa: E402
from ansible_collections.baremetal.capi.plugins.module_utils.capi import validate  # noqa: E402
from ansible_collections.baremetal.capi.plugins.module_utils.module import CapiModule  # noqa: E402


def main():
    module = CapiModule(
        argument_spec=dict(
            description=dict(type="dict", required=True),
            objects=dict(type="list", elements="dict", required=True),
            plan_machines=dict(type="bool", default=False),
            addons_base_dir=dict(type="path"),
        ),
        maas=True,
        supports_check_mode=True,
    )
    # the description carries BMC passwords (hosts) and maybe a store token: never in the invocation shown
    module.no_log_values.update(validate.secrets(module.params["description"]))
    with module.errors():
        desc, objects = module.params["description"], module.params["objects"]
        plan = validate.validate(desc, objects, module.store, module.params["addons_base_dir"])
        if not module.params["plan_machines"]:
            module.exit(False, plan=plan)
        listed = None
        if desc["provider"] == "maas" and module.params.get("maas_url"):
            from ansible_collections.baremetal.capi.plugins.module_utils.maas import client as maas_client

            listed = maas_client.connect(module.maas_options()).list_machines()
        machines = machines_plan.machines(desc, objects, module.store, listed)
        module.exit(False, plan=plan, machines=machines, lines=machines.pop("lines"))


if __name__ == "__main__":
    main()
