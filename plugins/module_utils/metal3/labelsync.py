# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Label sync: prefixed BareMetalHost labels onto the workload Node, one way (cluster-api-provider-metal3
controllers/metal3labelsync_controller.go Reconcile).

The prefixes come from the Metal3Cluster annotation ``metal3.io/metal3-label-sync-prefixes``
("a.example.com, b.example.com": comma-split, trimmed, empty entries ignored, each a DNS-1123
subdomain).  Only labels ``<prefix>/<name>`` with a listed prefix take part: on the Node, a prefixed
label absent from the host or with another value is removed, and every prefixed host label is set.
Unprefixed labels and labels of other prefixes are never touched.  Nothing flows from Node to host.

The path is the host's consumerRef -> Metal3Machine -> its Machine -> status.nodeRef, and the
Machine's Cluster -> its Metal3Cluster.  ``desired`` is pure; ``sync_host`` is one reconcile.
"""

from __future__ import annotations

from ansible_collections.baremetal.capi.plugins.module_utils.capi import refs
from ansible_collections.baremetal.capi.plugins.module_utils.capi import workload as wl
from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid, NotFound, Requeue
from ansible_collections.baremetal.capi.plugins.module_utils.hosts import base as hosts
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta, names
from ansible_collections.baremetal.capi.plugins.module_utils.runner import Step

# CAPM3 requeues every 60 s whatever happened
REQUEUE = 60.0


def prefixes(m3c: dict) -> set[str]:
    """The sync prefixes of a Metal3Cluster; Invalid names the bad entry."""
    raw = meta.annotations(m3c).get(names.LABEL_SYNC_PREFIXES_ANNOTATION) or ""
    out = set()
    for entry in raw.split(","):
        entry = entry.strip()
        if not entry:
            continue
        if len(entry) > 253 or not meta.DNS1123_SUBDOMAIN.match(entry):
            raise Invalid(
                f"prefix {entry!r} is not a DNS-1123 subdomain",
                obj=meta.ref(m3c),
                field=f"metadata.annotations[{names.LABEL_SYNC_PREFIXES_ANNOTATION}]",
            )
        out.add(entry)
    return out


def _prefixed(labels: dict, wanted: set[str]) -> dict:
    out = {}
    for key, value in (labels or {}).items():
        prefix, sep, _name = key.partition("/")
        if sep and prefix in wanted:
            out[key] = value
    return out


def desired(host_labels: dict, node_labels: dict, wanted: set[str]) -> dict:
    """The merge patch of Node labels (None deletes) that makes the Node's prefixed labels the host's."""
    on_host, on_node = _prefixed(host_labels, wanted), _prefixed(node_labels, wanted)
    patch = {k: None for k, v in on_node.items() if on_host.get(k) != v and k not in on_host}
    patch.update({k: v for k, v in on_host.items() if on_node.get(k) != v})
    return patch


def _chain(store, host: dict):
    """(machine, m3c) for a consumed host, or a reason why not."""
    ns = meta.namespace(host)
    ref = (host.get("spec") or {}).get("consumerRef") or {}
    if ref.get("kind") != "Metal3Machine":
        return None, None, "the host has no Metal3Machine consumer"
    m3m = refs.get_or_none(store, "Metal3Machine", ref.get("name"), ref.get("namespace") or ns)
    if m3m is None:
        return None, None, f"Metal3Machine {ref.get('name')} not found"
    owner = refs.owner_of_kind(m3m, "Machine")
    machine = refs.get_or_none(store, "Machine", owner["name"], ns) if owner else None
    if machine is None:
        return None, None, f"{meta.ref(m3m)} has no Machine"
    if not ((machine.get("status") or {}).get("nodeRef") or {}).get("name"):
        return None, None, f"{meta.ref(machine)} has no nodeRef yet"
    cluster = refs.get_or_none(store, "Cluster", machine["spec"]["clusterName"], ns)
    m3c = refs.get_ref(store, (cluster or {}).get("spec", {}).get("infrastructureRef"), ns) if cluster else None
    if m3c is None:
        return None, None, f"no Metal3Cluster for Cluster {machine['spec']['clusterName']}"
    return machine, m3c, ""


def sync_host(store, host, *, workload=None, workload_kubeconfig=None, check: bool = False) -> Step:
    """One label sync of one BareMetalHost (a dict or (namespace, name))."""
    ns, name = hosts.key(host)
    host = store.get(hosts.KIND, name, ns)
    machine, m3c, why = _chain(store, host)
    if machine is None:
        return Step(done=True, message=f"nothing to sync: {why}", data={"host": name, "node": None})
    wanted = prefixes(m3c)
    node_name = machine["status"]["nodeRef"]["name"]
    base = {"host": name, "node": node_name, "prefixes": sorted(wanted)}
    if not wanted:
        return Step(done=True, message="no label sync prefixes on the Metal3Cluster", data=base)
    if workload is None:
        try:
            workload = wl.client_for(store, machine["spec"]["clusterName"], ns, workload_kubeconfig)
        except NotFound:
            raise Requeue(
                f"waiting for the {wl.kubeconfig_secret_name(machine['spec']['clusterName'])} Secret"
            ) from None
    node = workload.get_node(node_name)
    if node is None:
        return Step(done=False, message=f"Node {node_name} not found", requeue_after=REQUEUE, data=base)
    patch = desired(meta.labels(host), meta.labels(node), wanted)
    data = {
        **base,
        "set": {k: v for k, v in patch.items() if v is not None},
        "removed": sorted(k for k, v in patch.items() if v is None),
    }
    if patch and not check:
        # with the version read: a label someone else changed meanwhile is not overwritten blindly
        workload.patch_node(
            node_name, {"metadata": {"labels": patch}}, resource_version=node["metadata"]["resourceVersion"]
        )
    msg = f"Node {node_name}: {len(data['set'])} set, {len(data['removed'])} removed" if patch else "in sync"
    return Step(done=True, changed=bool(patch), message=("would " + msg) if check and patch else msg, data=data)


def cluster_hosts(store, ns: str, cluster: str | None = None, name: str | None = None) -> list[dict]:
    """The hosts to sync: one by name, or every consumed host of a cluster (or of the namespace)."""
    if name:
        return [store.get(hosts.KIND, name, ns)]
    sel = f"{names.CLUSTER_NAME_LABEL}={cluster}" if cluster else None
    return [h for h in store.list(hosts.KIND, ns, sel) if (h.get("spec") or {}).get("consumerRef")]
