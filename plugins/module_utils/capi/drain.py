# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Node drain and the wait for volumes to detach, before a Machine's infrastructure goes (cluster-api
internal/controllers/machine/machine_controller.go reconcileDelete: drainNode, then the wait for volumes to detach).

Drain: the Node is cordoned, then every Pod on it is evicted through the Eviction API (so that
PodDisruptionBudgets hold) except DaemonSet Pods, mirror Pods and Pods labelled ``cluster.x-k8s.io/drain=skip``;
Pods labelled ``cluster.x-k8s.io/drain=wait-completed`` are not evicted but waited for until they complete. On an
unreachable Node (Ready Unknown) evictions use a 1 s grace period and Pods deleted more than 1 s ago no longer
count. It is skipped with the ``machine.cluster.x-k8s.io/exclude-node-draining`` annotation and given up after
``spec.deletion.nodeDrainTimeoutSeconds`` (0 or unset: no limit) since ``status.deletion.nodeDrainStartTime``.

Volumes: the wait lasts while VolumeAttachments name the Node; skipped with
``machine.cluster.x-k8s.io/exclude-wait-for-node-volume-detach``, given up after
``spec.deletion.nodeVolumeDetachTimeoutSeconds`` since ``status.deletion.waitForNodeVolumeDetachStartTime``.
Machine drain rules (MachineDrainRule objects) are not applied.
"""

from __future__ import annotations

import datetime

from ansible_collections.baremetal.capi.plugins.module_utils.capi import workload as wl
from ansible_collections.baremetal.capi.plugins.module_utils.errors import CapiError
from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions, meta, names

_STAMP = "%Y-%m-%dT%H:%M:%SZ"
_DONE_PHASES = ("Succeeded", "Failed")
_UNREACHABLE_GRACE = 1  # seconds: eviction grace, and how long a deleted Pod counts, on an unreachable Node


def _now(clock=None) -> datetime.datetime:
    return (clock() if clock else datetime.datetime.now(datetime.UTC)).astimezone(datetime.UTC)


def _age(stamp: str, now: datetime.datetime) -> float:
    then = datetime.datetime.strptime(stamp, _STAMP).replace(tzinfo=datetime.UTC)
    return (now - then).total_seconds()


def _timed_out(start: str, timeout, now: datetime.datetime) -> bool:
    return bool(timeout) and _age(start, now) > int(timeout)


def _skipped(pod: dict) -> bool:
    md = pod.get("metadata") or {}
    if names.MIRROR_POD_ANNOTATION in (md.get("annotations") or {}):
        return True
    if any(o.get("controller") and o.get("kind") == "DaemonSet" for o in md.get("ownerReferences") or []):
        return True
    return (md.get("labels") or {}).get(names.DRAIN_LABEL) == names.DRAIN_SKIP


def drain_node(client, node: dict, clock=None) -> str:
    """One pass of the drain: cordon, evict what may be evicted.  "" when nothing is left, else what is left."""
    name = meta.name(node)
    if not (node.get("spec") or {}).get("unschedulable"):
        client.patch_node(name, {"spec": {"unschedulable": True}})
    unreachable = wl.node_ready(node) == "Unknown"
    now = _now(clock)
    evicted, terminating, completing, blocked = [], [], [], []
    for pod in client.pods_on_node(name):
        md = pod["metadata"]
        key = f"{md.get('namespace')}/{md['name']}"
        if _skipped(pod):
            continue
        phase = (pod.get("status") or {}).get("phase")
        if (md.get("labels") or {}).get(names.DRAIN_LABEL) == names.DRAIN_WAIT_COMPLETED:
            if phase not in _DONE_PHASES:
                completing.append(key)
            continue
        if md.get("deletionTimestamp"):
            if not (unreachable and _age(md["deletionTimestamp"], now) > _UNREACHABLE_GRACE):
                terminating.append(key)
            continue
        try:
            if client.evict_pod(md.get("namespace"), md["name"], _UNREACHABLE_GRACE if unreachable else None):
                evicted.append(key)
        except CapiError as exc:  # a PodDisruptionBudget that allows no disruption now (429), or worse
            blocked.append(f"{key} ({exc})")
    parts = []
    for label, pods in (
        ("evicted", evicted),
        ("still terminating", terminating),
        ("waiting to complete", completing),
        ("eviction blocked", blocked),
    ):
        if pods:
            more = f" and {len(pods) - 5} more" if len(pods) > 5 else ""
            parts.append(f"{label}: {', '.join(sorted(pods)[:5])}{more}")
    return "; ".join(parts)


def step(client, machine: dict, after: dict, clock=None) -> tuple[str, str] | None:
    """Drain the Machine's Node and wait for its volumes; start times go into ``after``'s status.deletion.

    None once both are done (or skipped, or timed out, or the Node is gone); else (condition reason, message).
    """
    node_name = ((machine.get("status") or {}).get("nodeRef") or {}).get("name")
    node = client.get_node(node_name) if node_name else None
    if node is None:
        return None
    ann = meta.annotations(machine)
    timeouts = (machine.get("spec") or {}).get("deletion") or {}
    started = after.setdefault("status", {}).setdefault("deletion", {})
    now = _now(clock)
    stamp = conditions.now_rfc3339(clock)
    if names.EXCLUDE_NODE_DRAINING_ANNOTATION not in ann:
        start = started.setdefault("nodeDrainStartTime", stamp)
        if not _timed_out(start, timeouts.get("nodeDrainTimeoutSeconds"), now):
            left = drain_node(client, node, clock)
            if left:
                return names.DELETING_DRAINING_NODE_REASON, f"draining Node {node_name} (started at {start}): {left}"
    if names.EXCLUDE_WAIT_FOR_NODE_VOLUME_DETACH_ANNOTATION not in ann:
        start = started.setdefault("waitForNodeVolumeDetachStartTime", stamp)
        if not _timed_out(start, timeouts.get("nodeVolumeDetachTimeoutSeconds"), now):
            attached = client.volume_attachments(node_name)
            if attached:
                return (
                    names.DELETING_WAITING_FOR_VOLUME_DETACH_REASON,
                    f"waiting for the volumes of Node {node_name} to detach: {', '.join(attached[:5])}",
                )
    return None
