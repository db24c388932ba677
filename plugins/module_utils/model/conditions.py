"""v1beta2 conditions in ``status.conditions``.

lastTransitionTime moves only when the status changes; reason, message and
observedGeneration are refreshed on every set.
"""

from __future__ import annotations

import datetime

TRUE, FALSE, UNKNOWN = "True", "False", "Unknown"


def now_rfc3339(clock=None) -> str:
    t = clock() if clock else datetime.datetime.now(datetime.UTC)
    return t.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def get(obj: dict, ctype: str) -> dict | None:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == ctype:
            return cond
    return None


def is_true(obj: dict, ctype: str) -> bool:
    cond = get(obj, ctype)
    return bool(cond) and cond.get("status") == TRUE


def set_condition(obj, ctype, status, reason="", message="", clock=None) -> bool:
    """Set a condition on ``obj`` in place.  True if anything changed."""
    if isinstance(status, bool):
        status = TRUE if status else FALSE
    if status not in (TRUE, FALSE, UNKNOWN):
        raise ValueError(f"condition status must be True, False or Unknown, got {status!r}")
    conds = obj.setdefault("status", {}).setdefault("conditions", [])
    generation = (obj.get("metadata") or {}).get("generation")
    new = {"type": ctype, "status": status, "reason": reason or "", "message": message or ""}
    if generation is not None:
        new["observedGeneration"] = generation
    for i, cond in enumerate(conds):
        if cond.get("type") != ctype:
            continue
        if cond.get("status") == status:
            new["lastTransitionTime"] = cond.get("lastTransitionTime") or now_rfc3339(clock)
        else:
            new["lastTransitionTime"] = now_rfc3339(clock)
        if cond == new:
            return False
        conds[i] = new
        return True
    new["lastTransitionTime"] = now_rfc3339(clock)
    conds.append(new)
    return True


def delete(obj: dict, ctype: str) -> bool:
    conds = (obj.get("status") or {}).get("conditions")
    if not conds:
        return False
    kept = [c for c in conds if c.get("type") != ctype]
    if len(kept) == len(conds):
        return False
    obj["status"]["conditions"] = kept
    return True
