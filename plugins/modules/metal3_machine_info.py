#!/usr/bin/python
# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# The Apache License 2.0 is compatible with the GNU General Public License version 3 (GPLv3).

from __future__ import annotations

DOCUMENTATION = r"""
module: metal3_machine_info
short_description: Read Metal3Machines with their hosts, providerIDs and Machine phases
version_added: 0.1.0
description:
  - Lists one Metal3Machine (O(name)), those of a cluster (O(cluster)), or every one in the namespace, each with
    the BareMetalHost it is associated with and that host's state, its providerID, readiness and conditions, and
    the phase and nodeRef of its Machine.
  - Use M(baremetal.capi.metal3_machine) in check mode to see which host a machine would get.
author:
  - baremetal.capi contributors (!UNKNOWN)
extends_documentation_fragment:
  - baremetal.capi.store
  - baremetal.capi.namespace
  - baremetal.capi.attributes.INFO_MODULE
options:
  name:
    description: One Metal3Machine. Mutually exclusive with O(cluster).
    type: str
  cluster:
    description: The Metal3Machines of this Cluster.
    type: str
"""

EXAMPLES = r"""
- name: The machines of cluster test1
  baremetal.capi.metal3_machine_info:
    cluster: test1
    namespace: metal3
  register: info

- name: Hosts in use
  ansible.builtin.debug:
    msg: "{{ info.machines | map(attribute='host') | list }}"
"""

RETURN = r"""
machines:
  description: One entry per Metal3Machine, sorted by name.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: The Metal3Machine's name.
      type: str
    namespace:
      description: Its namespace.
      type: str
    host:
      description: The associated BareMetalHost, or V(null).
      type: str
    host_state:
      description: The host's provisioning state.
      type: str
    host_error:
      description: The host's C(errorType) and C(errorMessage) when it reports one.
      type: str
    providerID:
      description: C(metal3://<namespace>/<host>/<machine>) once set.
      type: str
    provisioned:
      description: C(status.initialization.provisioned).
      type: bool
    addresses:
      description: C(status.addresses).
      type: list
      elements: dict
    conditions:
      description: C(status.conditions).
      type: list
      elements: dict
    machine:
      description: The owner Machine's name.
      type: str
    machine_phase:
      description: The Machine's phase.
      type: str
    node:
      description: The Machine's C(status.nodeRef.name).
      type: str
    caExpiry:
      description: When the cluster CA (the C(<cluster>-ca) Secret) expires, RFC 3339; V(null) before it exists.
      type: str
    certificatesExpiry:
      description:
        - When the control-plane machine's kubeadm certificates expire, RFC 3339; V(null) for workers and until
          known. The C(machine.cluster.x-k8s.io/certificates-expiry) annotation of the Machine, else of its
          KubeadmConfig.
      type: str
    metal3machine:
      description: The whole object.
      type: dict
"""

from ansible_collections.baremetal.capi.plugins.module_utils.module import CapiModule, namespace_argument_spec  # noqa: E402


def describe(store, m3m: dict) -> dict:
    from ansible_collections.baremetal.capi.plugins.module_utils.bootstrap import certificates
    from ansible_collections.baremetal.capi.plugins.module_utils.capi import refs
    from ansible_collections.baremetal.capi.plugins.module_utils.hosts import base as hosts
    from ansible_collections.baremetal.capi.plugins.module_utils.metal3.host_ref import associated_host

    ns = m3m["metadata"]["namespace"]
    host = associated_host(store, m3m)
    owner = refs.owner_of_kind(m3m, "Machine")
    machine = refs.get_or_none(store, "Machine", owner["name"], ns) if owner else None
    status = m3m.get("status") or {}
    out = {
        "name": m3m["metadata"]["name"],
        "namespace": ns,
        "host": host["metadata"]["name"] if host else None,
        "host_state": hosts.state(host) if host else None,
        "host_error": None,
        "providerID": (m3m.get("spec") or {}).get("providerID"),
        "provisioned": bool((status.get("initialization") or {}).get("provisioned")),
        "addresses": status.get("addresses") or [],
        "conditions": status.get("conditions") or [],
        "machine": machine["metadata"]["name"] if machine else None,
        "machine_phase": ((machine or {}).get("status") or {}).get("phase"),
        "node": (((machine or {}).get("status") or {}).get("nodeRef") or {}).get("name"),
        **(certificates.report(store, machine) if machine else {"caExpiry": None, "certificatesExpiry": None}),
        "metal3machine": m3m,
    }
    if host is not None and hosts.failed(host):
        hs = host.get("status") or {}
        out["host_error"] = f"{hs.get('errorType', '')}: {hs.get('errorMessage', '')}"
    return out


def main():
    module = CapiModule(
        argument_spec=dict(name=dict(type="str"), cluster=dict(type="str"), **namespace_argument_spec()),
        mutually_exclusive=[("name", "cluster")],
        supports_check_mode=True,
    )
    p = module.params
    ns = p["namespace"] or module.namespace
    with module.errors():
        from ansible_collections.baremetal.capi.plugins.module_utils.capi import refs
        from ansible_collections.baremetal.capi.plugins.module_utils.metal3.machine import MachineManager

        store = module.store
        if p["name"]:
            found = [refs.get_or_none(store, "Metal3Machine", p["name"], ns)]
        elif p["cluster"]:
            keys = MachineManager(store, None).keys_for_cluster(p["cluster"], ns)
            found = [refs.get_or_none(store, "Metal3Machine", name, kns) for kns, name in keys]
        else:
            found = store.list("Metal3Machine", ns)
        machines = [describe(store, m) for m in found if m is not None]
        module.exit(changed=False, machines=machines)


if __name__ == "__main__":
    main()
