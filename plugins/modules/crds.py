#!/usr/bin/python
# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# The Apache License 2.0 is compatible with the GNU General Public License version 3 (GPLv3).

from __future__ import annotations

DOCUMENTATION = r"""
module: crds
short_description: Install the CustomResourceDefinitions the kubernetes store needs
version_added: 0.1.0
description:
  - Creates, in the management cluster of the kubernetes store, a CustomResourceDefinition for each custom kind of
    the collection's object model (Cluster API, CAPM3, IPAM, baremetal-operator, CAPMAAS kinds, and
    C(MaasRemediation)), with structural schemas, the status subresource and the upstream short names.
  - A kind the cluster already serves is left alone; the upstream controllers' CRDs (Cluster API, CAPM3, BMO) are
    never replaced. Such kinds are listed in RV(skipped) with the reason.
  - When such a CRD does not serve the version the collection stores (for example a CAPM3 whose CRDs serve
    C(infrastructure.cluster.x-k8s.io/v1beta1) only), the task fails before anything is written, naming every
    such CRD, the versions it serves, the version needed and what to do (upgrade that provider, or use another
    management cluster, since CRDs are cluster-wide). The same message comes from any module that uses the kind.
  - A CRD this module made earlier (label C(app.kubernetes.io/managed-by=baremetal.capi)) is updated when it differs.
  - With the sqlite store there is nothing to install; the module reports C(changed=false).
  - The same manifests are in the collection's C(crds/) folder for C(kubectl apply -f crds/).
author:
  - baremetal.capi contributors (!UNKNOWN)
extends_documentation_fragment:
  - baremetal.capi.store
  - baremetal.capi.wait
  - baremetal.capi.attributes.no_diff
options:
  kinds:
    description:
      - Only these kinds, for example V(BareMetalHost) or V(IPAddress.ipam.metal3.io). All custom kinds when not set.
    type: list
    elements: str
  wait:
    description:
      - Wait until every CRD created or updated is C(Established), so objects of its kind can be written next.
    type: bool
    default: true
  wait_timeout:
    description:
      - Seconds to wait with O(wait=true); on timeout the task fails naming the CRDs not yet C(Established).
    type: int
    default: 60
  wait_sleep:
    description:
      - Seconds between two reads of the CRDs' C(Established) condition.
    type: float
    default: 0.2
    aliases: [poll]
    version_added: 0.3.0
"""

EXAMPLES = r"""
- name: The collection's CRDs in the management cluster (AWX injects K8S_AUTH_* from its credential)
  baremetal.capi.crds:
    store:
      kind: kubernetes

- name: Only the IPAM kinds, with an explicit kubeconfig
  baremetal.capi.crds:
    store:
      kind: kubernetes
      kubeconfig: /etc/capi/management.kubeconfig
    kinds:
      - IPPool
      - IPClaim
      - IPAddress.ipam.metal3.io
"""

RETURN = r"""
created:
  description: The CRDs created (or that would be, in check mode).
  returned: always
  type: list
  elements: str
  sample: [baremetalhosts.metal3.io, ippools.ipam.metal3.io]
updated:
  description: CRDs of this collection that were brought back to the collection's definition.
  returned: always
  type: list
  elements: str
unchanged:
  description: CRDs of this collection already as defined.
  returned: always
  type: list
  elements: str
skipped:
  description: Kinds the cluster already serves with a CRD of its own, each with the reason.
  returned: always
  type: dict
  sample: {baremetalhosts.metal3.io: "already served by the cluster's own CRD"}
"""

from ansible_collections.baremetal.capi.plugins.module_utils.module import (  # noqa: E402 (imports follow the docs in a module)
    CapiModule,
    wait_argument_spec,
)
from ansible_collections.baremetal.capi.plugins.module_utils.store import crds  # noqa: E402 (imports follow the docs in a module)


def main():
    module = CapiModule(
        argument_spec=dict(
            kinds=dict(type="list", elements="str"),
            **wait_argument_spec(timeout=60, sleep=0.2),
        ),
        supports_check_mode=True,
    )
    p = module.params
    with module.errors():
        if module.store_options()["kind"] != "kubernetes":
            module.exit(False, created=[], updated=[], unchanged=[], skipped={}, msg="the sqlite store needs no CRDs")
        result = crds.apply_crds(
            module.store,
            kinds_to_apply=p["kinds"],
            wait=p["wait_timeout"] if p["wait"] else 0,
            poll=p["wait_sleep"],
            check_mode=module.check_mode,
        )
    module.exit(bool(result["created"] or result["updated"]), **result)


if __name__ == "__main__":
    main()
