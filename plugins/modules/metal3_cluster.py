#!/usr/bin/python
# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# The Apache License 2.0 is compatible with the GNU General Public License version 3 (GPLv3).

from __future__ import annotations

DOCUMENTATION = r"""
module: metal3_cluster
short_description: Create, reconcile and delete a Metal3Cluster as CAPM3 does
version_added: 0.1.0
description:
  - Does what CAPM3's Metal3Cluster webhook and controller do, and what Cluster API core does for the Cluster with
    respect to its infrastructure.
  - The webhook - C(spec.controlPlaneEndpoint.host) is required, the port defaults to V(6443),
    C(spec.cloudProviderEnabled) to V(false). Bad input fails before anything is written.
  - The controller - the finalizer C(metal3cluster.infrastructure.cluster.x-k8s.io), C(spec.failureDomains) copied
    to status, C(status.initialization.provisioned) and the conditions C(Ready) and C(BaremetalInfrastructureReady)
    once the endpoint is valid, C(Paused) while the Cluster is paused.
  - Cluster API core - the Cluster whose C(spec.infrastructureRef) names the Metal3Cluster gets
    C(spec.controlPlaneEndpoint) (when it has none) and C(status.initialization.infrastructureProvisioned); the
    Metal3Cluster gets the C(cluster.x-k8s.io/cluster-name) label and an owner reference to the Cluster.
  - O(state=absent) deletes the Metal3Cluster; it stays (finalizer) until no Metal3Machine or Machine of the cluster
    is left, as CAPM3 waits for the descendants.
author:
  - baremetal.capi contributors (!UNKNOWN)
extends_documentation_fragment:
  - baremetal.capi.store
  - baremetal.capi.namespace
  - baremetal.capi.wait
  - baremetal.capi.attributes
options:
  name:
    description: The Metal3Cluster's name (usually the Cluster's).
    type: str
    required: true
  namespace:
    description: Its namespace. Defaults to O(store.namespace), then V(default).
    type: str
  control_plane_endpoint:
    description:
      - C(spec.controlPlaneEndpoint). Required to create the Metal3Cluster; when omitted an existing one is only
        reconciled.
    type: dict
    suboptions:
      host:
        description: The API server's address (an IP or DNS name).
        type: str
        required: true
      port:
        description: Its port.
        type: int
        default: 6443
  cloud_provider_enabled:
    description: C(spec.cloudProviderEnabled) - a cloud provider sets the Nodes' providerID instead of CAPM3.
    type: bool
  failure_domains:
    description: C(spec.failureDomains), each C({name, controlPlane, attributes}).
    type: list
    elements: dict
  labels:
    description: Labels to add to the Metal3Cluster.
    type: dict
  annotations:
    description: Annotations to add (for example C(metal3.io/metal3-label-sync-prefixes)).
    type: dict
  state:
    description: V(present) creates or updates and reconciles it; V(absent) deletes it.
    type: str
    choices: [present, absent]
    default: present
  wait:
    description:
      - With O(state=present), wait until the Cluster's infrastructure is provisioned (a Cluster must name this
        Metal3Cluster). With O(state=absent), wait until the Metal3Cluster is gone.
    type: bool
    default: true
  wait_timeout:
    description: Seconds to wait; on timeout the task fails with the last state and why it is stuck.
    type: int
    default: 600
  wait_sleep:
    description: Seconds between two reconciles while waiting.
    type: float
    default: 2
"""

EXAMPLES = r"""
- name: The Metal3Cluster of cluster test1
  baremetal.capi.metal3_cluster:
    name: test1
    namespace: metal3
    control_plane_endpoint:
      host: 192.168.111.249

- name: Remove it once the machines are gone
  baremetal.capi.metal3_cluster:
    name: test1
    namespace: metal3
    state: absent
    wait_timeout: 3600
"""

RETURN = r"""
metal3cluster:
  description: The Metal3Cluster after the task (absent when it is gone).
  returned: when it exists
  type: dict
cluster:
  description: The name of the Cluster that owns it.
  returned: when known
  type: str
endpoint:
  description: The control plane endpoint, C(host) and C(port).
  returned: with O(state=present)
  type: dict
  sample: {host: 192.168.111.249, port: 6443}
message:
  description: What the last reconcile did, or why it waits.
  returned: always
  type: str
machines_left:
  description: With O(state=absent), the machines of the cluster the deletion still waits for.
  returned: when some are left
  type: list
  elements: str
"""

from ansible_collections.baremetal.capi.plugins.module_utils.metal3 import cluster as m3cluster  # noqa: E402
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta  # noqa: E402
from ansible_collections.baremetal.capi.plugins.module_utils.module import (  # noqa: E402
    CapiModule,
    namespace_argument_spec,
    wait_argument_spec,
)


def _definition(p, ns) -> dict | None:
    if p["state"] != "present" or not p["control_plane_endpoint"]:
        return None
    spec = {"controlPlaneEndpoint": dict(p["control_plane_endpoint"])}
    if p["cloud_provider_enabled"] is not None:
        spec["cloudProviderEnabled"] = p["cloud_provider_enabled"]
    if p["failure_domains"] is not None:
        spec["failureDomains"] = p["failure_domains"]
    return meta.new("Metal3Cluster", p["name"], ns, spec=spec, labels=p["labels"], annotations=p["annotations"])


def main():
    module = CapiModule(
        argument_spec=dict(
            name=dict(type="str", required=True),
            **namespace_argument_spec(),
            control_plane_endpoint=dict(
                type="dict",
                options=dict(host=dict(type="str", required=True), port=dict(type="int", default=6443)),
            ),
            cloud_provider_enabled=dict(type="bool"),
            failure_domains=dict(type="list", elements="dict"),
            labels=dict(type="dict"),
            annotations=dict(type="dict"),
            state=dict(type="str", choices=["present", "absent"], default="present"),
            **wait_argument_spec(timeout=600),
        ),
        supports_check_mode=True,
    )
    p = module.params
    ns = p["namespace"] or module.namespace
    with module.errors():
        out = m3cluster.run_task(
            module.store,
            p["name"],
            ns,
            definition=_definition(p, ns),
            state=p["state"],
            check=module.check_mode,
            wait=p["wait"],
            timeout=p["wait_timeout"],
            poll=p["wait_sleep"],
        )
    res, before, after = out["result"], out["before"], out["after"]
    if res is None:
        module.exit(changed=True, before=None, after=after, message="would be created")
    result = {"message": res.message, **{k: v for k, v in res.data.items() if k in ("cluster", "endpoint")}}
    if res.data.get("machines_left"):
        result["machines_left"] = res.data["machines_left"]
    if res.failed:
        module.fail(res.message, **result)
    if p["wait"] and not res.done and not module.check_mode:
        module.fail(f"Metal3Cluster {ns}/{p['name']}: {res.message}", error="Timeout")
    if after is not None:
        result["metal3cluster"] = after
    module.exit(changed=out["changed"], before=before, after=after, **result)


if __name__ == "__main__":
    main()
