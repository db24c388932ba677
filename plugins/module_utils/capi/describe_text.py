# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A cluster's tree (capi/describe.py) as text, as ``clusterctl describe cluster`` prints it.

cluster-api ``internal/util/tree/tree.go`` ``PrintObjectTree``: the v1beta2 header, the tree prefixes
(``├─``, ``└─``, ``│``), messages wrapped at 100 columns on the lines below, SINCE as kubectl's ages. No colours:
the lines go into Ansible results and AWX job output.
"""

from __future__ import annotations

import datetime
import re

HEADER = ("NAME", "REPLICAS", "AVAILABLE", "READY", "UP TO DATE", "STATUS", "REASON", "SINCE", "MESSAGE")
MESSAGE_WIDTH = 100  # upstream formatParagraph(c.Message, 100)
FIRST, LAST, PIPE, INDENT = "├─", "└─", "│ ", "  "


def human_duration(seconds: float) -> str:
    """k8s.io/apimachinery duration.HumanDuration, as clusterctl's SINCE column."""
    if seconds < -1:
        return "<invalid>"
    s = max(int(seconds), 0)
    m, h, d = s // 60, s // 3600, s // 86400
    if s < 120:
        return f"{s}s"
    if m < 10:
        return f"{m}m{s % 60}s" if s % 60 else f"{m}m"
    if h < 3:
        return f"{m}m"
    if h < 8:
        return f"{h}h{m % 60}m" if m % 60 else f"{h}h"
    if h < 48:
        return f"{h}h"
    if h < 24 * 8:
        return f"{d}d{h % 24}h" if h % 24 else f"{d}d"
    if h < 24 * 365 * 2:
        return f"{d}d"
    y = d // 365
    if h < 24 * 365 * 8:
        return f"{y}y{d % 365}d" if d % 365 else f"{y}y"
    return f"{y}y"


def _since(timestamp: str, now: datetime.datetime) -> str:
    if not timestamp:
        return ""
    try:
        then = datetime.datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.UTC)
    except ValueError:
        return ""
    return human_duration((now - then).total_seconds())


def format_paragraph(text: str, width: int = MESSAGE_WIDTH) -> list[str]:
    """Upstream formatParagraph: words wrapped before ``width``; line breaks and "* " list indents kept."""
    out = []
    for line in (text or "").split("\n"):
        lead = line[: len(line) - len(line.lstrip(" "))]
        indent = lead + ("  " if line.strip().startswith("* ") else "")
        current = lead
        for word in re.split(r"\s+", line.strip()):
            if len(current) + len(word) < width:
                current += (" " if current.strip() else "") + word
                continue
            out.append(current)
            current = indent + word
        out.append(current)
    return out


def row_name(n: dict) -> str:
    """upstream getRowName: ``meta name - Kind/name``, ``Kind/name``, or a virtual line's name."""
    if n.get("virtual") and not n.get("kind"):
        return f"{n['metaName']} - {n['name']}" if n.get("metaName") else n["name"]
    name = f"{n['kind']}/{n['name']}"
    if n.get("metaName"):
        name = f"{n['metaName']} - {name}"
    return f"!! DELETED !! {name}" if n.get("deleting") else name


def _cells(n: dict, now: datetime.datetime) -> list[str]:
    cond = n.get("condition") or {}
    status = f"{cond['type']}={cond['status']}" if cond else ""
    counters = [n.get(k) or "" for k in ("replicas", "available", "ready", "upToDate")]
    return counters + [status, cond.get("reason") or "", _since(cond.get("lastTransitionTime") or "", now)]


def _child_prefix(prefix: str, last: bool) -> str:
    """upstream getChildPrefix: carry the parent's pipes on, then this child's own branch."""
    base = prefix.replace(FIRST, PIPE).replace(LAST, INDENT)
    return base + (LAST if last else FIRST)


def _rows(n: dict, prefix: str, now: datetime.datetime, out: list[list[str]]) -> None:
    message = format_paragraph((n.get("condition") or {}).get("message") or "")
    out.append([prefix + row_name(n)] + _cells(n, now) + [message[0]])
    more = prefix.replace(FIRST, PIPE).replace(LAST, INDENT) + (PIPE if n["children"] else INDENT)
    for line in message[1:]:
        out.append([more.rstrip()] + [""] * 7 + [line])
    for i, child in enumerate(n["children"]):
        _rows(child, _child_prefix(prefix, i == len(n["children"]) - 1), now, out)


def render(tree: dict, now: datetime.datetime | None = None) -> list[str]:
    """The tree as text lines under the upstream header, columns aligned, no trailing blanks."""
    now = now or datetime.datetime.now(datetime.UTC)
    rows = [list(HEADER)]
    _rows(tree, "", now, rows)
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEADER) - 1)]
    return ["  ".join([r[i].ljust(widths[i]) for i in range(len(widths))] + [r[-1]]).rstrip() for r in rows]


def failing(tree: dict) -> list[dict]:
    """The failing lines of a tree, depth first: ``{"object", "condition"}`` with the condition's words."""
    out = []
    if tree.get("failing"):
        out.append({"object": row_name(tree), "condition": tree.get("condition")})
    for child in tree["children"]:
        out.extend(failing(child))
    return out
