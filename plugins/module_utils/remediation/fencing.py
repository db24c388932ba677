# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Node fencing while a host is powered off, and undoing it when the Node is back (cluster-api-provider-metal3
baremetal/metal3remediation_manager.go AddOutOfServiceTaint / RemoveOutOfServiceTaint).

Two ways, as CAPM3:

``taint``   the out-of-service taint ``node.kubernetes.io/out-of-service=nodeshutdown:NoExecute``
            (Kubernetes' non-graceful node shutdown): the Node object stays, stateful pods and
            volumes move away; removed once the host is powered on again.
``delete``  the Node's labels and annotations are backed up as JSON into annotations of the
            remediation object, the Node is deleted, and when the kubelet registers it again the
            backups are restored with the keys the new Node already has winning.

``auto`` takes the taint when the API server is 1.28 or newer.  CAPM3 asks the *management*
cluster's version (main.go, once at start-up); the taint acts in the *workload* cluster, so this
collection asks the workload API server, whose version is the one that matters.

``client`` is a capi.workload.WorkloadClient (or anything with its Node methods).
"""

from __future__ import annotations

import json
import re

from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.model import names
from ansible_collections.baremetal.capi.plugins.module_utils.remediation import common

_VERSION = re.compile(r"^v?(\d+)\.(\d+)")


def parse_version(text: str) -> tuple[int, int] | None:
    m = _VERSION.match(text or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def mode(fencing: str, client) -> str:
    """``taint`` or ``delete`` for an option value ``auto|taint|delete``."""
    if fencing not in common.FENCING:
        raise Invalid(f"fencing must be one of {', '.join(common.FENCING)}, got {fencing!r}", field="fencing")
    if fencing != "auto":
        return fencing
    version = parse_version(client.server_version())
    return "taint" if version is not None and version >= common.OUT_OF_SERVICE_MIN_VERSION else "delete"


def _is_oos(taint: dict) -> bool:
    t = common.OUT_OF_SERVICE_TAINT
    return taint.get("key") == t["key"] and taint.get("effect") == t["effect"]


def has_taint(node: dict) -> bool:
    return any(_is_oos(t) for t in (node.get("spec") or {}).get("taints") or [])


def add_taint(client, node: dict) -> bool:
    """Add the out-of-service taint (a merge patch replaces the list: sent with the version read)."""
    if has_taint(node):
        return False
    taints = list((node.get("spec") or {}).get("taints") or []) + [dict(common.OUT_OF_SERVICE_TAINT)]
    client.patch_node(node["metadata"]["name"], {"spec": {"taints": taints}}, node["metadata"]["resourceVersion"])
    return True


def remove_taint(client, node: dict) -> bool:
    if not has_taint(node):
        return False
    kept = [t for t in node["spec"]["taints"] if not _is_oos(t)]
    client.patch_node(node["metadata"]["name"], {"spec": {"taints": kept or None}}, node["metadata"]["resourceVersion"])
    return True


def backups(node: dict) -> dict:
    """The two backup annotations for a Node: its labels and annotations as JSON."""
    md = node.get("metadata") or {}
    return {
        names.NODE_LABELS_BACKUP: json.dumps(md.get("labels") or {}, sort_keys=True),
        names.NODE_ANNOTATIONS_BACKUP: json.dumps(md.get("annotations") or {}, sort_keys=True),
    }


def restore_patch(node: dict, rem_annotations: dict) -> dict | None:
    """The merge patch that puts backed-up labels/annotations back; keys the Node has win.  None if none."""
    md = node.get("metadata") or {}
    patch = {}
    for field, key in (("labels", names.NODE_LABELS_BACKUP), ("annotations", names.NODE_ANNOTATIONS_BACKUP)):
        raw = rem_annotations.get(key)
        if not raw:
            continue
        try:
            saved = json.loads(raw)
        except ValueError:
            continue  # CAPM3 logs and skips a backup it cannot read
        have = md.get(field) or {}
        missing = {k: v for k, v in (saved or {}).items() if k not in have}
        if missing:
            patch.setdefault("metadata", {})[field] = missing
    return patch or None


def pods_terminating(client, node_name: str) -> list[str]:
    """Pods on the Node being deleted, and VolumeAttachments to it: what the taint must clear first."""
    if not hasattr(client, "pods_on_node"):
        return []
    out = [
        f"Pod {pod['metadata'].get('namespace')}/{pod['metadata']['name']}"
        for pod in client.pods_on_node(node_name)
        if pod["metadata"].get("deletionTimestamp")
    ]
    return out + [f"VolumeAttachment {name}" for name in client.volume_attachments(node_name)]
