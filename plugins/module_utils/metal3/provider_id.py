# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The providerID of a Metal3Machine and its workload Node (cluster-api-provider-metal3
baremetal/metal3machine_manager.go SetNodeProviderID, SetProviderIDFromCloudProviderNode).

``metal3://<namespace>/<bmh>/<m3m>``.  The Node is the one labelled
``metal3.io/uuid=<BareMetalHost uid>`` (the kubelet's ``node-labels`` in the
templates), or, without such a label and without a bootstrap configRef, the
one whose ``kubernetes.io/hostname`` is one of the machine's Hostname
addresses.  With ``cloudProviderEnabled`` a cloud provider sets it and the
machine only copies it.  Two Nodes claiming one host is an error.
"""

from __future__ import annotations

from ansible_collections.baremetal.capi.plugins.module_utils.errors import CapiError, Requeue
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta, names

HOSTNAME_LABEL = "kubernetes.io/hostname"


def provider_id(namespace: str, bmh_name: str, m3m_name: str) -> str:
    return f"{names.METAL3_PROVIDER_ID_PREFIX}{namespace}/{bmh_name}/{m3m_name}"


def duplicate_guard(nodes: list[dict], namespace: str, bmh_name: str, wanted: str, where: str) -> None:
    """More than one Node for this host, or one providerID on two Nodes, is an error."""
    prefix = f"{names.METAL3_PROVIDER_ID_PREFIX}{namespace}/{bmh_name}/"
    for_host = [n for n in nodes if ((n.get("spec") or {}).get("providerID") or "").startswith(prefix)]
    if len(for_host) > 1:
        raise CapiError(
            f"more than one Node has a providerID of host {namespace}/{bmh_name}: "
            + ", ".join(meta.name(n) for n in for_host),
            obj=where,
        )
    same = [n for n in nodes if (n.get("spec") or {}).get("providerID") == wanted]
    if len(same) > 1:
        raise CapiError(f"providerID {wanted} is on more than one Node", obj=where)


def set_node_provider_id(client, m3m: dict, bmh: dict, m3c: dict | None, machine: dict, addresses: list) -> dict:
    """Find the machine's Node, set its providerID when empty; return the Node.  Requeue while there is none.

    ``client`` is a capi.workload client for the Cluster's workload API.
    """
    ns, where = meta.namespace(m3m), meta.ref(m3m)
    wanted = provider_id(ns, meta.name(bmh), meta.name(m3m))
    all_nodes = client.list_nodes()
    duplicate_guard(all_nodes, ns, meta.name(bmh), wanted, where)
    if ((m3c or {}).get("spec") or {}).get("cloudProviderEnabled"):
        found = [n for n in all_nodes if (n.get("spec") or {}).get("providerID") == wanted]
        if not found:
            raise Requeue(f"waiting for the cloud provider to set providerID {wanted} on a Node", after=30, obj=where)
        return found[0]
    uid = bmh["metadata"].get("uid")
    labelled = [n for n in all_nodes if meta.labels(n).get(names.METAL3_UUID_NODE_LABEL) == uid]
    config_ref = ((machine.get("spec") or {}).get("bootstrap") or {}).get("configRef")
    if len(labelled) > 1:
        raise CapiError(
            f"more than one Node labelled {names.METAL3_UUID_NODE_LABEL}={uid}: "
            + ", ".join(meta.name(n) for n in labelled),
            obj=where,
        )
    if labelled:
        node = labelled[0]
    elif config_ref:
        raise Requeue(f"waiting for a Node labelled {names.METAL3_UUID_NODE_LABEL}={uid}", after=30, obj=where)
    else:
        # SetNodeProviderIDByHostname
        hostnames = {a["address"] for a in addresses if a.get("type") == "Hostname"}
        by_name = [n for n in all_nodes if meta.labels(n).get(HOSTNAME_LABEL) in hostnames] if hostnames else []
        if len(by_name) != 1:
            why = "no" if not by_name else f"{len(by_name)}"
            raise Requeue(
                f"waiting for a Node labelled {names.METAL3_UUID_NODE_LABEL}={uid} "
                f"or {HOSTNAME_LABEL} in {sorted(hostnames) or '(no hostname known)'} ({why} found)",
                after=30,
                obj=where,
            )
        node = by_name[0]
    current = (node.get("spec") or {}).get("providerID") or ""
    if current == wanted:
        return node
    if current:
        raise CapiError(f"node {meta.name(node)} using unsupported providerID format {current!r}", obj=where)
    return client.set_provider_id(meta.name(node), wanted)
