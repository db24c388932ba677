#!/usr/bin/python
# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# The Apache License 2.0 is compatible with the GNU General Public License version 3 (GPLv3).

from __future__ import annotations

DOCUMENTATION = r"""
module: object
short_description: Create, update or delete an object of any kind of the baremetal.capi model
version_added: 0.1.0
description:
  - Writes one object (a Cluster, Machine, BareMetalHost, Secret, HardwareData, ...) to the object store, shaped
    exactly like the upstream Kubernetes kind.
  - With O(state=present) a missing object is created; an existing one is patched with the given fields as a
    JSON merge patch (RFC 7386, what C(kubectl patch --type merge) does) - mappings merge key by key, a V(null)
    value removes a key, lists and scalars replace what was stored. Fields the task does not name are kept, so
    running the task again changes nothing and reports RV(ignore:changed=false).
  - With O(force=true) the given object replaces the stored one (everything but the status and the metadata the
    store owns).
  - Status is written through the status subresource after the rest of the object, for kinds that have one.
  - The write carries the resourceVersion that was read; when another writer got there first the module reads
    again and re-applies its patch. A C(metadata.resourceVersion) in O(definition) is a precondition instead - the
    task fails when the stored object has moved on.
  - Secret C(stringData) is stored base64-encoded in C(data). Secret values never appear in the result or the
    diff - they are replaced by V(VALUE_SPECIFIED_IN_NO_LOG_PARAMETER).
author:
  - baremetal.capi contributors (!UNKNOWN)
extends_documentation_fragment:
  - baremetal.capi.store
  - baremetal.capi.namespace
  - baremetal.capi.wait
  - baremetal.capi.attributes
options:
  definition:
    description:
      - The whole object (apiVersion, kind, metadata, spec, status, and for Secrets and ConfigMaps data).
      - The other options, when given, are merged over it.
      - Server-owned metadata (uid, generation, creationTimestamp, deletionTimestamp) is ignored, so an object read
        with M(baremetal.capi.object_info) can be written back.
    type: dict
    aliases: [resource_definition]
  api_version:
    description:
      - The apiVersion of the object, for example V(cluster.x-k8s.io/v1beta2).
      - Needed only where the kind alone is ambiguous (V(IPAddress) exists in V(ipam.metal3.io/v1alpha1) and
        V(ipam.cluster.x-k8s.io/v1beta2)); a qualified O(kind) such as V(IPAddress.ipam.metal3.io) works too.
    type: str
  kind:
    description:
      - The kind, for example V(Cluster), V(BareMetalHost), V(Secret).
    type: str
  name:
    description:
      - The object's name (C(metadata.name)).
    type: str
  namespace:
    description:
      - The object's namespace, for namespaced kinds. Defaults to O(store.namespace), then V(default).
    type: str
  labels:
    description:
      - Labels, merged over the stored ones. A V(null) value removes a label.
    type: dict
  annotations:
    description:
      - Annotations, merged over the stored ones. A V(null) value removes an annotation.
    type: dict
  spec:
    description:
      - The spec, merged over the stored one.
    type: dict
  status:
    description:
      - The status, merged over the stored one and written through the status subresource.
    type: dict
  state:
    description:
      - V(present) creates or patches the object; V(absent) deletes it.
      - Deleting an object that still has finalizers sets its deletionTimestamp; the object goes when its last
        finalizer is removed. Deleting an owner deletes its dependents (ownerReferences).
    type: str
    choices: [present, absent]
    default: present
  label_selector:
    description:
      - With O(state=absent) and no O(name), delete every object of O(kind) in O(namespace) whose labels match
        (what C(kubectl delete -l) does), each as O(state=absent) deletes one; with O(wait), until each is gone.
      - In any form M(baremetal.capi.object_info) accepts (a string, a list of strings, a LabelSelector mapping).
      - Not with O(name), O(definition) or O(state=present).
      - A selector that selects everything (V(""), V([]), V({})) is refused unless O(all=true) is given, as
        C(kubectl delete) asks for C(--all).
    type: raw
    version_added: 0.2.0
  all:
    description:
      - With O(state=absent), no O(name) and no O(label_selector) (or an empty one), delete every object of
        O(kind) in O(namespace) (of the store, for a cluster-scoped kind such as V(Namespace) - and with a Namespace
        every object in it). What C(kubectl delete --all) does.
      - Without it such a task fails and deletes nothing.
    type: bool
    default: false
    version_added: 0.2.0
  force:
    description:
      - With O(state=present), replace the stored object with the given one instead of merging.
    type: bool
    default: false
  wait:
    description:
      - With O(state=absent), wait until the object is gone (its finalizers removed).
    type: bool
    default: false
  wait_timeout:
    description:
      - How many seconds to wait with O(wait=true). On timeout the task fails naming the finalizers left.
    type: int
    default: 300
  wait_sleep:
    description:
      - Seconds between two reads while waiting.
    type: float
    default: 2
notes:
  - Objects are validated as the API server would (names, labels, annotations, finalizers, owner references)
    before anything is written.
  - A spec field the kind does not have is refused, naming it, for the Cluster API core kinds of
    C(cluster.x-k8s.io/v1beta2) and C(controlplane.cluster.x-k8s.io/v1beta2) (Cluster, Machine, MachineSet,
    MachineDeployment, MachineHealthCheck, KubeadmControlPlane), as upstream's schemas would.
"""

EXAMPLES = r"""
- name: A Cluster
  baremetal.capi.object:
    kind: Cluster
    name: prod
    namespace: metal3
    labels:
      cluster.x-k8s.io/cluster-name: prod
    spec:
      controlPlaneRef:
        apiGroup: controlplane.cluster.x-k8s.io
        kind: KubeadmControlPlane
        name: prod-cp

- name: The BMC credentials of a host
  baremetal.capi.object:
    definition:
      apiVersion: v1
      kind: Secret
      metadata:
        name: node-0-bmc-secret
        namespace: metal3
      type: Opaque
      stringData:
        username: admin
        password: "{{ bmc_password }}"
  no_log: true

- name: Remove a label, keep everything else
  baremetal.capi.object:
    kind: BareMetalHost
    name: node-0
    namespace: metal3
    labels:
      hosts.example.com/rack: null

- name: Report a condition
  baremetal.capi.object:
    kind: Metal3Cluster
    name: prod
    namespace: metal3
    status:
      ready: true

- name: Delete a Cluster and wait for its finalizers
  baremetal.capi.object:
    kind: Cluster
    name: prod
    namespace: metal3
    state: absent
    wait: true
    wait_timeout: 600

- name: Delete the MachineDeployments of a cluster
  baremetal.capi.object:
    kind: MachineDeployment
    namespace: metal3
    label_selector: cluster.x-k8s.io/cluster-name=prod
    state: absent

- name: Every MachineHealthCheck of a namespace (an empty label_selector alone is refused)
  baremetal.capi.object:
    kind: MachineHealthCheck
    namespace: metal3
    state: absent
    all: true

- name: Everything in the kubernetes store of a management cluster
  baremetal.capi.object:
    store:
      kind: kubernetes
      kubeconfig: ~/.kube/mgmt.yaml
    kind: ConfigMap
    name: settings
    definition:
      data:
        mode: production
"""

RETURN = r"""
object:
  description:
    - The object as it is after the task (as it would be, in check mode), or V(null) once deleted.
    - Secret values are replaced by V(VALUE_SPECIFIED_IN_NO_LOG_PARAMETER).
  returned: always
  type: dict
  sample:
    apiVersion: cluster.x-k8s.io/v1beta2
    kind: Cluster
    metadata:
      name: prod
      namespace: metal3
      uid: 7b0f8f0e-4d1e-4d43-9a55-2a1d9f1d2c11
      resourceVersion: "42"
      generation: 1
      creationTimestamp: "2026-01-01T00:00:00Z"
    spec: {}
deleted:
  description: With O(label_selector), the names of the objects this task deleted (would delete, in check mode).
  returned: with O(label_selector)
  type: list
  elements: str
  sample: [prod-md-0]
method:
  description: What was (or in check mode would be) done - V(create), V(update), V(delete), or V(null) for nothing.
  returned: always
  type: str
  sample: update
"""

from ansible_collections.baremetal.capi.plugins.module_utils import objects  # noqa: E402 (imports follow the docs in a module)
from ansible_collections.baremetal.capi.plugins.module_utils.module import (  # noqa: E402 (imports follow the docs in a module)
    CapiModule,
    namespace_argument_spec,
    wait_argument_spec,
)


def _delete_selected(module) -> None:
    """state=absent with a label selector: every matching object of the kind in the namespace, one by one."""
    p = module.params
    kind = objects.selected_kind(p)
    namespace = (p["namespace"] or module.namespace) if kind.namespaced else None
    wait = dict(wait=p["wait"], timeout=p["wait_timeout"], sleep=p["wait_sleep"])
    before = objects.remove_selected(module.store, kind, namespace, p["label_selector"], module.check_mode, **wait)
    names = [o["metadata"]["name"] for o in before]
    module.exit(bool(before), before=before, after=[], deleted=names, object=None, method="delete" if before else None)


def main():
    module = CapiModule(
        argument_spec=dict(
            definition=dict(type="dict", aliases=["resource_definition"]),
            api_version=dict(type="str"),
            kind=dict(type="str"),
            name=dict(type="str"),
            **namespace_argument_spec(),
            labels=dict(type="dict"),
            annotations=dict(type="dict"),
            spec=dict(type="dict"),
            status=dict(type="dict"),
            state=dict(type="str", choices=["present", "absent"], default="present"),
            force=dict(type="bool", default=False),
            label_selector=dict(type="raw"),
            all=dict(type="bool", default=False),
            **wait_argument_spec(wait=False, timeout=300),
        ),
        supports_check_mode=True,
    )
    p = module.params
    if p["label_selector"] is not None or p["all"]:
        with module.errors():
            _delete_selected(module)
    # Before anything else: the raw stringData is echoed back in the invocation otherwise.
    given = p["definition"] or {}
    module.no_log_secrets(dict(given, kind=p["kind"] or given.get("kind")))
    with module.errors():
        obj, kind = objects.build(
            p["definition"],
            api_version=p["api_version"],
            kind=p["kind"],
            name=p["name"],
            namespace=p["namespace"],
            labels=p["labels"],
            annotations=p["annotations"],
            spec=p["spec"],
            status=p["status"],
            default_namespace=module.namespace,
        )
        module.no_log_secrets(obj)
        if p["state"] == "absent":
            md = obj["metadata"]
            changed, before, after = objects.remove(
                module.store,
                kind,
                md["name"],
                md.get("namespace"),
                check=module.check_mode,
                wait=p["wait"],
                timeout=p["wait_timeout"],
                sleep=p["wait_sleep"],
            )
            module.exit(changed, before=before, after=after, object=after, method="delete" if changed else None)
        from ansible_collections.baremetal.capi.plugins.module_utils.model import spec_fields
        from ansible_collections.baremetal.capi.plugins.module_utils.webhooks import admit

        spec_fields.check(obj, p["api_version"] or given.get("apiVersion"))
        changed, before, after, method = objects.apply(
            module.store, obj, kind, force=p["force"], check=module.check_mode, admit=admit
        )
        module.exit(changed, before=before, after=after, object=after, method=method)


if __name__ == "__main__":
    main()
