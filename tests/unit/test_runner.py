from __future__ import annotations

import threading
import time

from ansible_collections.baremetal.capi.plugins.module_utils import runner
from ansible_collections.baremetal.capi.plugins.module_utils.errors import Conflict, Invalid, Requeue


def test_steps_until_done_with_requeue_and_per_object_results():
    calls = {}

    def step(item):
        calls[item] = calls.get(item, 0) + 1
        if item == "bad":
            raise Invalid("no good", obj="Thing bad", field="spec.x")
        if item == "slow" and calls[item] < 3:
            raise Requeue("waiting", after=0.01)
        if item == "conflicted" and calls[item] == 1:
            raise Conflict("moved")
        return runner.Step(done=True, changed=item != "same", message="done")

    results = {r.key: r for r in runner.run(["ok", "slow", "bad", "same", "conflicted"], step, poll=0.01)}
    assert results["ok"].done and results["ok"].changed
    assert results["slow"].done and results["slow"].steps == 3
    assert results["bad"].failed and "Thing bad: spec.x: no good" in results["bad"].message
    assert results["same"].done and not results["same"].changed
    assert results["conflicted"].done and results["conflicted"].steps == 2


def test_no_wait_means_one_step_each():
    seen = []
    res = runner.run([1, 2, 3], lambda i: seen.append(i) or runner.Step(done=False, message="not yet"), wait=False)
    assert sorted(seen) == [1, 2, 3]
    assert all(r.steps == 1 and not r.done for r in res)


def test_deadline_stops_waiting_and_says_timed_out():
    res = runner.run(
        ["x"], lambda i: runner.Step(done=False, message="still provisioning", requeue_after=0.02), timeout=0.2
    )
    assert not res[0].done and not res[0].failed
    assert res[0].message == "timed out: still provisioning"


def test_pool_is_bounded_and_concurrent():
    active = 0
    peak = 0
    lock = threading.Lock()

    def step(_):
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
        time.sleep(0.05)
        with lock:
            active -= 1
        return runner.Step(done=True)

    runner.run(range(20), step, workers=4)
    assert peak == 4


def test_unexpected_exception_fails_only_that_object():
    def step(i):
        if i == 2:
            raise KeyError("boom")
        return runner.Step(done=True)

    res = runner.run([1, 2, 3], step)
    assert [r.failed for r in res] == [False, True, False]
    assert "KeyError" in res[1].message


def test_progress_reports_changes_of_message():
    msgs = []
    state = {"n": 0}

    def step(_):
        state["n"] += 1
        return runner.Step(done=state["n"] >= 3, message=f"phase {min(state['n'], 2)}", requeue_after=0)

    runner.run(["m"], step, progress=lambda k, m: msgs.append((k, m)))
    assert msgs == [("m", "phase 1"), ("m", "phase 2")]
