#!/usr/bin/python
# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# The Apache License 2.0 is compatible with the GNU General Public License version 3 (GPLv3).

from __future__ import annotations

DOCUMENTATION = r"""
module: baremetalhost_info
short_description: Read Metal3 BareMetalHosts, their state and hardware details
version_added: 0.1.0
description:
  - Lists C(metal3.io/v1alpha1) BareMetalHosts by name, namespace and label selector, with a summary of each
    (provisioning state, power, errors, consumer) and, when asked, the hardware details (from
    C(status.hardware) or the host's HardwareData object).
author:
  - baremetal.capi contributors (!UNKNOWN)
extends_documentation_fragment:
  - baremetal.capi.store
  - baremetal.capi.namespace
  - baremetal.capi.attributes.info_module
options:
  name:
    description: One host's name. When not set, every host that matches.
    type: str
  namespace:
    description: The namespace. Defaults to O(store.namespace), then V(default); V(*) means all namespaces.
    type: str
  label_selector:
    description: A Kubernetes label selector (C(key=value,key2 in (a,b))) or a list of such terms.
    type: raw
  state:
    description: Only hosts in these C(status.provisioning.state) values.
    type: list
    elements: str
  hardware:
    description: Include each host's hardware details.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Hosts free for a cluster
  baremetal.capi.baremetalhost_info:
    namespace: metal3
    state: [available]
    label_selector: infrastructure.cluster.x-k8s.io/failure-domain=rack-1
  register: free

- name: One host and its NICs
  baremetal.capi.baremetalhost_info:
    name: node-0
    namespace: metal3
    hardware: true
  register: node0
"""

RETURN = r"""
hosts:
  description: The matching hosts, sorted by namespace and name.
  returned: always
  type: list
  elements: dict
  contains:
    name: {description: The host's name., type: str, returned: always}
    namespace: {description: Its namespace., type: str, returned: always}
    state: {description: C(status.provisioning.state)., type: str, returned: always}
    poweredOn: {description: C(status.poweredOn)., type: bool, returned: always}
    online: {description: C(spec.online)., type: bool, returned: always}
    consumerRef: {description: C(spec.consumerRef) (the machine that holds it)., type: dict, returned: always}
    errorType: {description: C(status.errorType)., type: str, returned: always}
    errorMessage: {description: C(status.errorMessage)., type: str, returned: always}
    ID: {description: The Ironic node UUID (C(status.provisioning.ID))., type: str, returned: always}
    hardware: {description: Hardware details (with O(hardware=true))., type: dict, returned: when asked}
    object: {description: The BareMetalHost., type: dict, returned: always}
"""

from ansible_collections.baremetal.capi.plugins.module_utils.hosts import base  # noqa: E402
from ansible_collections.baremetal.capi.plugins.module_utils.metal3 import host as bmh  # noqa: E402
from ansible_collections.baremetal.capi.plugins.module_utils.module import CapiModule, namespace_argument_spec  # noqa: E402


def main():
    module = CapiModule(
        argument_spec=dict(
            name=dict(type="str"),
            **namespace_argument_spec(),
            label_selector=dict(type="raw"),
            state=dict(type="list", elements="str"),
            hardware=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    p = module.params
    ns = p["namespace"] or module.namespace
    with module.errors():
        store = module.store
        if p["name"]:
            found = bmh.get(store, "BareMetalHost", p["name"], None if ns == "*" else ns)
            objs = [found] if found else []
        else:
            objs = store.list("BareMetalHost", None if ns == "*" else ns, p["label_selector"])
        out = []
        for obj in objs:
            info = base.summary(obj)
            if p["state"] is not None and info["state"] not in p["state"]:
                continue
            item = {
                "name": info["name"],
                "namespace": info["namespace"],
                "state": info["state"],
                "poweredOn": info["poweredOn"],
                "online": bool((obj.get("spec") or {}).get("online")),
                "consumerRef": (obj.get("spec") or {}).get("consumerRef"),
                "errorType": info["errorType"],
                "errorMessage": info["errorMessage"],
                "ID": info["ID"],
                "object": obj,
            }
            if p["hardware"]:
                item["hardware"] = base.hardware_of(store, obj)
            out.append(item)
        module.exit(False, hosts=out)


if __name__ == "__main__":
    main()
