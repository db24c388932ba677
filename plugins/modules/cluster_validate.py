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
  - The error names the object (and the description key it comes from) and the field. Nothing is written, in
    check mode or not; the result is the plan of what the playbook would create or update.
author:
  - baremetal.capi contributors (!UNKNOWN)
extends_documentation_fragment:
  - baremetal.capi.store
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
"""

EXAMPLES = r"""
- name: The description and everything it makes, before anything is written
  baremetal.capi.cluster_validate:
    description: "{{ capi_cluster }}"
    objects: "{{ capi_cluster | baremetal.capi.capi_objects('all') }}"
    store: "{{ capi_cluster.store | default({}) }}"
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
"""

from ansible_collections.baremetal.capi.plugins.module_utils.capi import validate  # noqa: E402
from ansible_collections.baremetal.capi.plugins.module_utils.module import CapiModule  # noqa: E402


def main():
    module = CapiModule(
        argument_spec=dict(
            description=dict(type="dict", required=True),
            objects=dict(type="list", elements="dict", required=True),
        ),
        supports_check_mode=True,
    )
    # the description carries BMC passwords (hosts) and maybe a store token: never in the invocation shown
    module.no_log_values.update(validate.secrets(module.params["description"]))
    with module.errors():
        plan = validate.validate(module.params["description"], module.params["objects"], module.store)
        module.exit(False, plan=plan)


if __name__ == "__main__":
    main()
