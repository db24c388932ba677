from __future__ import annotations

import datetime

from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions


def clock_at(*times):
    it = iter(times)
    return lambda: datetime.datetime.fromisoformat(next(it)).replace(tzinfo=datetime.UTC)


def test_last_transition_time_moves_only_on_status_change():
    obj = {"metadata": {"generation": 3}}
    assert conditions.set_condition(obj, "Ready", True, "Provisioned", clock=clock_at("2026-01-01T00:00:00"))
    cond = conditions.get(obj, "Ready")
    assert cond == {
        "type": "Ready",
        "status": "True",
        "reason": "Provisioned",
        "message": "",
        "observedGeneration": 3,
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    assert not conditions.set_condition(obj, "Ready", "True", "Provisioned", clock=clock_at("2026-01-02T00:00:00"))
    assert conditions.set_condition(obj, "Ready", "True", "Other", "msg", clock=clock_at("2026-01-03T00:00:00"))
    assert conditions.get(obj, "Ready")["lastTransitionTime"] == "2026-01-01T00:00:00Z"
    assert conditions.set_condition(obj, "Ready", False, "Broken", clock=clock_at("2026-01-04T00:00:00"))
    assert conditions.get(obj, "Ready")["lastTransitionTime"] == "2026-01-04T00:00:00Z"
    assert not conditions.is_true(obj, "Ready")
    assert conditions.delete(obj, "Ready") and conditions.get(obj, "Ready") is None
