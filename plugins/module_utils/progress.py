# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""How a cluster's machines read to an operator: the final table and the one-line progress of a machine.

Used by the ``capi_machine_table`` filter, the ``cluster_machines`` action and the progress callback.
"""

from __future__ import annotations

from ansible_collections.baremetal.capi.plugins.module_utils.capi.description_objects import plain

COLUMNS = (
    ("machine", "MACHINE"),
    ("role", "ROLE"),
    ("host", "HOST/SYSTEM"),
    ("address", "ADDRESS"),
    ("state", "STATE"),
    ("providerID", "PROVIDER ID"),
    ("nodeReady", "NODE READY"),
    ("certificatesExpiry", "CERTS EXPIRE"),
)


NETWORK_NOT_READY = "NetworkReady=false"  # in the kubelet's Ready message while no CNI has configured the host


def _not_ready_why(row: dict) -> str:
    """A short reason for a registered Node that is not Ready: the kubelet's, "network not ready" for want of a CNI."""
    message = row.get("nodeNotReady") or ""
    if NETWORK_NOT_READY in message or "network not ready" in message:
        return "network not ready"
    return message.split(":", 1)[0] if message else ""


def _cell(row: dict, key: str) -> str:
    value = row.get(key)
    if key == "nodeReady":
        if value is False and _not_ready_why(row):
            return f"False ({_not_ready_why(row)})"
        return {True: "True", False: "False"}.get(value, "-")
    if key == "certificatesExpiry" and value:
        return str(value)[:10]  # the date is what an operator plans by
    return "-" if value in (None, "") else str(value)


def machine_table(rows: list[dict], title: str | None = None) -> list[str]:
    """The machines as aligned text lines (control plane first, then by name)."""
    rows = sorted(plain(rows or []), key=lambda r: (r.get("role") != "control-plane", r.get("machine") or ""))
    cells = [[h for _k, h in COLUMNS]] + [[_cell(r, k) for k, _h in COLUMNS] for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(COLUMNS))]
    lines = ["  ".join(c[i].ljust(widths[i]) for i in range(len(COLUMNS))).rstrip() for c in cells]
    ca = sorted({r["caExpiry"] for r in rows if r.get("caExpiry")})
    if ca:
        lines.append(f"cluster CA expires {', '.join(ca)}")
    return ([title] if title else []) + lines


def progress_line(row: dict) -> str:
    """One machine's progress: what a retry of cluster_machines changed for it."""
    parts = [row.get("machine") or "?", f"[{row.get('role') or '?'}]", _cell(row, "state")]
    if row.get("host"):
        parts.append(f"host={row['host']}")
    if row.get("address"):
        parts.append(f"addr={row['address']}")
    if row.get("nodeReady") is not None:
        why = "" if row["nodeReady"] else _not_ready_why(row)
        parts.append(f"node={'Ready' if row['nodeReady'] else 'NotReady'}" + (f" ({why})" if why else ""))
    if row.get("message"):
        parts.append(f"- {row['message']}")
    return " ".join(parts)
