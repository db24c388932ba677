#!/usr/bin/python
# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# The Apache License 2.0 is compatible with the GNU General Public License version 3 (GPLv3).

from __future__ import annotations

DOCUMENTATION = r"""
module: object_info
short_description: Read objects of any kind of the baremetal.capi model
version_added: 0.1.0
description:
  - Lists the objects of one kind in the object store, by namespace, name and label selector.
  - Secret values are replaced by V(VALUE_SPECIFIED_IN_NO_LOG_PARAMETER) unless O(reveal_secrets=true).
author:
  - baremetal.capi contributors (!UNKNOWN)
extends_documentation_fragment:
  - baremetal.capi.store
  - baremetal.capi.namespace
  - baremetal.capi.attributes.info_module
options:
  kind:
    description:
      - The kind, for example V(Machine), V(BareMetalHost), V(Secret), or a qualified one such as
        V(IPAddress.ipam.metal3.io).
    type: str
    required: true
  api_version:
    description:
      - The apiVersion, where the kind alone is ambiguous.
    type: str
  name:
    description:
      - Only the object of this name. No error when it does not exist - RV(objects) is empty.
    type: str
  namespace:
    description:
      - Only objects in this namespace.
      - When not set, all namespaces; with O(name), O(store.namespace) or V(default).
    type: str
  label_selector:
    description:
      - Only objects whose labels match, in any form Kubernetes accepts.
      - A string such as V(cluster.x-k8s.io/cluster-name=prod,!cluster.x-k8s.io/control-plane).
      - A list of such strings, all of which must match.
      - A LabelSelector mapping with C(matchLabels) and C(matchExpressions) (operators C(In), C(NotIn), C(Exists),
        C(DoesNotExist)).
    type: raw
  reveal_secrets:
    description:
      - Return Secret C(data) as stored (base64) instead of masked.
      - The values are then in the task result; set C(no_log) on the task to keep them out of logs.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: The machines of a cluster
  baremetal.capi.object_info:
    kind: Machine
    namespace: metal3
    label_selector: cluster.x-k8s.io/cluster-name=prod
  register: machines

- name: Available hosts in a rack
  baremetal.capi.object_info:
    kind: BareMetalHost
    namespace: metal3
    label_selector:
      matchLabels:
        hosts.example.com/rack: r1
      matchExpressions:
        - key: hosts.example.com/broken
          operator: DoesNotExist
  register: hosts

- name: The workload cluster's kubeconfig
  baremetal.capi.object_info:
    kind: Secret
    namespace: metal3
    name: prod-kubeconfig
    reveal_secrets: true
  register: kubeconfig
  no_log: true
"""

RETURN = r"""
objects:
  description:
    - The matching objects, sorted by namespace and name.
    - Secret values are replaced by V(VALUE_SPECIFIED_IN_NO_LOG_PARAMETER) unless O(reveal_secrets=true).
  returned: always
  type: list
  elements: dict
  sample:
    - apiVersion: cluster.x-k8s.io/v1beta2
      kind: Machine
      metadata:
        name: prod-cp-0
        namespace: metal3
        labels:
          cluster.x-k8s.io/cluster-name: prod
      spec:
        clusterName: prod
"""

from ansible_collections.baremetal.capi.plugins.module_utils.errors import NotFound  # noqa: E402 (imports follow the docs in a module)
from ansible_collections.baremetal.capi.plugins.module_utils.model import kinds  # noqa: E402 (imports follow the docs in a module)
from ansible_collections.baremetal.capi.plugins.module_utils.module import CapiModule, mask, namespace_argument_spec  # noqa: E402 (imports follow the docs in a module)


def main():
    module = CapiModule(
        argument_spec=dict(
            kind=dict(type="str", required=True),
            api_version=dict(type="str"),
            name=dict(type="str"),
            **namespace_argument_spec(),
            label_selector=dict(type="raw"),
            reveal_secrets=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    p = module.params
    with module.errors():
        kind = kinds.resolve(p["kind"], p["api_version"])
        if p["name"]:
            namespace = (p["namespace"] or module.namespace) if kind.namespaced else None
            try:
                found = [module.store.get(kind.key, p["name"], namespace)]
            except NotFound:
                found = []
            if p["label_selector"] and found:
                found = module.store.list(kind.key, namespace, p["label_selector"])
                found = [o for o in found if o["metadata"]["name"] == p["name"]]
        else:
            found = module.store.list(kind.key, p["namespace"], p["label_selector"])
        module.close_store()
        if p["reveal_secrets"]:
            # The caller asked for the values: registering them as no_log would mask them again.
            module.exit_json(changed=False, objects=found)
        module.exit(False, objects=mask(found))


if __name__ == "__main__":
    main()
