# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What a MaasMachine asks MAAS for when it allocates (cluster-api-provider-maas pkg/maas/machine/machine.go
DeployMachine).

The simulator's side of the same constraints (what MAAS 3.5 accepts and how it filters) is the lab's.
"""

from __future__ import annotations


def allocate_constraints(mm: dict, machine: dict | None, not_tags=()) -> dict:
    """``op=allocate`` fields: cpu_count, mem, zone, pool, every tag, not_tags, system_id when pinned."""
    spec = mm.get("spec") or {}
    zone = spec.get("failureDomain") or ((machine or {}).get("spec") or {}).get("failureDomain")
    out = {
        "cpu_count": str(spec.get("minCPU") or 0),
        "mem": str(spec.get("minMemory") or 0),
        "zone": zone,
        "pool": spec.get("resourcePool"),
        # repeated fields: MAAS needs all of them (maas-client-go's WithTags kept only the last)
        "tags": list(spec.get("tags") or []),
        "not_tags": [t for t in not_tags if t],
    }
    if spec.get("systemID") and not spec.get("providerID"):
        out["system_id"] = spec["systemID"]
    return {k: v for k, v in out.items() if v not in (None, "", [])}
