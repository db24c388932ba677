# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Failure domains: ``Cluster.status.failureDomains`` and where KCP puts or takes a control-plane Machine.

Cluster API core copies the infrastructure cluster's ``status.failureDomains`` to the Cluster once the
infrastructure is provisioned (internal/controllers/cluster, reconcileInfrastructure; the contract's
FailureDomains accessor): the v1beta2 list ``[{name, controlPlane, attributes}]`` where a missing
``controlPlane`` means false, or the v1beta1 map ``{name: {controlPlane, attributes}}``, always stored as the
list sorted by name; an infrastructure cluster without the field leaves the Cluster with none.

KubeadmControlPlane uses only the domains with ``controlPlane: true``:

- scale up (NextFailureDomainForScaleUp / util/failuredomains PickFewest): the domain with the fewest
  up-to-date, not deleting Machines, then the fewest Machines overall;
- scale down (MachineInFailureDomainWithMostMachines / PickMost): an eligible Machine outside every known
  domain goes first (the oldest such); otherwise the domain with the most eligible Machines, then the most
  Machines overall, and the oldest eligible Machine there.

Upstream breaks the remaining ties by Go map order (unspecified); here they go by domain name, so that a
plan shown in check mode is the one that runs.  Pure functions over dicts.
"""

from __future__ import annotations

from ansible_collections.baremetal.capi.plugins.module_utils.model import meta


def from_infra_cluster(infra: dict | None) -> list[dict] | None:
    """The infra cluster's ``status.failureDomains`` as the v1beta2 list, sorted by name; None when absent."""
    raw = ((infra or {}).get("status") or {}).get("failureDomains")
    if raw is None:
        return None
    if isinstance(raw, dict):  # v1beta1 contract: a map, controlPlane a plain bool
        items = [{"name": k, **(v or {})} for k, v in raw.items()]
    else:
        items = [dict(fd) for fd in raw if isinstance(fd, dict) and fd.get("name")]
    out = []
    for fd in items:
        entry = {"name": str(fd["name"]), "controlPlane": bool(fd.get("controlPlane", False))}
        if fd.get("attributes"):
            entry["attributes"] = dict(fd["attributes"])
        out.append(entry)
    return sorted(out, key=lambda fd: fd["name"])


def mirror(cluster: dict, infra: dict | None) -> bool:
    """Copy the infra cluster's failure domains to ``cluster.status.failureDomains`` (pure; True if changed).

    As upstream: only while the infra cluster is not being deleted; nothing there means none here.
    """
    if infra is None or meta.is_deleting(infra):
        return False
    status = cluster.setdefault("status", {})
    domains = from_infra_cluster(infra) or []
    if (status.get("failureDomains") or []) == domains:
        return False
    if domains:
        status["failureDomains"] = domains
    else:
        status.pop("failureDomains", None)
    return True


def control_plane_domains(cluster: dict | None) -> list[str]:
    """Names of the Cluster's failure domains eligible for control-plane Machines (KCP FailureDomains())."""
    raw = ((cluster or {}).get("status") or {}).get("failureDomains") or []
    if isinstance(raw, dict):  # tolerate a v1beta1-shaped Cluster
        raw = [{"name": k, **(v or {})} for k, v in raw.items()]
    return sorted({fd["name"] for fd in raw if isinstance(fd, dict) and fd.get("name") and fd.get("controlPlane")})


def _domain(machine: dict) -> str | None:
    return (machine.get("spec") or {}).get("failureDomain") or None


def _counts(domains: list[str], everything: list[dict], priority: list[dict]) -> list[tuple[str, int, int]]:
    """(domain, machines of ``priority`` in it, machines of ``everything`` in it); unknown domains ignored."""
    count_all = {d: 0 for d in domains}
    count_priority = {d: 0 for d in domains}
    for m in everything:
        if _domain(m) in count_all:
            count_all[_domain(m)] += 1
    for m in priority:
        if _domain(m) in count_priority:
            count_priority[_domain(m)] += 1
    return [(d, count_priority[d], count_all[d]) for d in domains]


def pick_fewest(domains: list[str], all_machines: list[dict], up_to_date: list[dict]) -> str | None:
    """PickFewest: fewest up-to-date Machines, then fewest Machines, then by name."""
    counts = _counts(sorted(domains), all_machines, up_to_date)
    if not counts:
        return None
    return min(counts, key=lambda c: (c[1], c[2], c[0]))[0]


def pick_most(domains: list[str], all_machines: list[dict], eligible: list[dict]) -> str | None:
    """PickMost: most eligible Machines, then most Machines, then by name; None when no domain has one."""
    counts = _counts(sorted(domains), all_machines, eligible)
    if not counts:
        return None
    best = min(counts, key=lambda c: (-c[1], -c[2], c[0]))
    return best[0] if best[1] > 0 else None


def _age(machine: dict) -> tuple:
    return (machine["metadata"].get("creationTimestamp", ""), meta.name(machine))


def next_for_scale_up(cluster: dict | None, machines: list[dict], up_to_date: list[dict] | None = None) -> str | None:
    """The domain for a new control-plane Machine, or None when the Cluster has no control-plane domain.

    ``machines``: the control plane's Machines; ``up_to_date``: those not needing a rollout (all of them
    when not given).  Deleting Machines count overall but never as up to date, as upstream.
    """
    domains = control_plane_domains(cluster)
    if not domains:
        return None
    current = [m for m in (machines if up_to_date is None else up_to_date) if not meta.is_deleting(m)]
    return pick_fewest(domains, machines, current)


def domain_for_scale_down(cluster: dict | None, machines: list[dict], eligible: list[dict]) -> str | None:
    """FailureDomainWithMostMachines: the domain (None = no domain) to take a Machine from."""
    domains = control_plane_domains(cluster)
    outside = [m for m in eligible if _domain(m) not in domains]
    if outside:
        return _domain(min(outside, key=_age))
    return pick_most(domains, machines, eligible)


def machine_for_scale_down(cluster: dict | None, machines: list[dict], eligible: list[dict] | None = None) -> dict:
    """The oldest eligible Machine in the domain with the most Machines (MachineInFailureDomainWithMostMachines).

    With ``cluster`` None the domains are the ones the Machines are in.
    """
    eligible = machines if eligible is None else eligible
    if not eligible:
        raise ValueError("no control plane Machine to pick for deletion")
    if cluster is None:
        known = sorted({d for d in (_domain(m) for m in machines) if d})
        cluster = {"status": {"failureDomains": [{"name": d, "controlPlane": True} for d in known]}}
    fd = domain_for_scale_down(cluster, machines, eligible)
    in_fd = [m for m in eligible if _domain(m) == fd]
    return min(in_fd or eligible, key=_age)
