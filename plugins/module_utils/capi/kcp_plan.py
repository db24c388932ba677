# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The plan of an upgrade or rollout, for check mode: what KCP and the MachineDeployments would replace, in order."""

from __future__ import annotations

from ansible_collections.baremetal.capi.plugins.module_utils.capi import control_plane, kcp_rollout
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta, names


def rollout_report(store, kcp: dict, deployments=(), now=None) -> dict:
    """What a rollout of ``kcp`` (the desired KubeadmControlPlane, stored or not) would do, in order.

    The control-plane Machines that would be replaced and in which order (one at a time, KCP's victim
    selection), why each is out of date, then the MachineDeployments whose version moves, which wait for the
    control plane (``deployment_version_hold`` once it is done).
    """
    control_plane.validate_control_plane(kcp)
    machines = [m for m in control_plane.control_plane_machines(store, kcp) if not meta.is_deleting(m)]
    outdated = control_plane.outdated_machines(store, kcp, machines, now or control_plane._now())
    plan = control_plane.rollout_plan(machines, outdated)
    target = kcp_rollout.normalize_version(kcp["spec"].get("version"))
    rows = [
        {
            "machine": meta.name(m),
            "version": (m.get("spec") or {}).get("version"),
            "up_to_date": meta.name(m) not in outdated,
            "reasons": outdated.get(meta.name(m), []),
        }
        for m in sorted(machines, key=meta.name)
    ]
    workers = []
    for md in deployments:
        want = kcp_rollout.normalize_version(
            ((md.get("spec") or {}).get("template") or {}).get("spec", {}).get("version")
        )
        sets = store.list(
            "MachineSet", meta.namespace(md), {"matchLabels": {names.DEPLOYMENT_NAME_LABEL: meta.name(md)}}
        )
        current = {
            kcp_rollout.normalize_version(
                (((s.get("spec") or {}).get("template") or {}).get("spec") or {}).get("version")
            )
            for s in sets
        }
        if current and current != {want}:
            moves = kcp_rollout.version_tuple(want) > kcp_rollout.version_tuple(
                kcp_rollout.oldest_version(machines) or want
            )
            workers.append(
                {
                    "machine_deployment": meta.name(md),
                    "from": sorted(current),
                    "to": want,
                    "after_control_plane": bool(plan) or moves,
                }
            )
    steps = []
    surge = kcp_rollout.max_surge(kcp)
    for name in plan:
        steps.append(
            f"control plane: a new {target} machine, then {name} removed"
            if surge
            else f"control plane: {name} removed, then a new {target} machine"
        )
    for w in workers:
        steps.append(f"workers: MachineDeployment {w['machine_deployment']} rolled to {w['to']}")
    return {
        "control_plane": meta.name(kcp),
        "version": kcp_rollout.oldest_version(machines),
        "target_version": target,
        "max_surge": surge,
        "machines": rows,
        "replace": plan,
        "machine_deployments": workers,
        "steps": steps,
    }
