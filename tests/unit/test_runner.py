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


# --- runner.Loop: no rounds -----------------------------------------------------------------------------


class _FakeClock:
    def __init__(self):
        self.t = 0.0

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.t += seconds


def test_loop_a_fast_item_finishes_while_a_slow_one_still_waits():
    order = []
    calls = {"slow": 0, "fast": 0}

    def make(key, needed):
        def step():
            calls[key] += 1
            if calls[key] >= needed:
                order.append(key)
                return runner.Step(done=True, message="done")
            return runner.Step(message=f"step {calls[key]}", requeue_after=0.01 if key == "fast" else 0.2)

        return step

    clock = _FakeClock()  # time moves only when the loop sleeps: the order cannot depend on the machine's load
    loop = runner.Loop(workers=2, poll_min=0.01, poll_max=0.3, clock=clock.now, sleep=clock.sleep)
    loop.add("slow", make("slow", 3))
    loop.add("fast", make("fast", 5))
    results = loop.run()
    # no barrier: the fast item took its 5 steps and finished before the slow one's 3
    assert order == ["fast", "slow"]
    assert results["fast"].done and results["slow"].done and results["fast"].steps == 5


def test_loop_items_added_and_kicked_from_on_step():
    ready = {"go": False}
    seen = []

    def waiter():
        return runner.Step(done=ready["go"], message="go" if ready["go"] else "waiting", requeue_after=30)

    def maker():
        ready["go"] = True
        return runner.Step(done=True, changed=True, message="made")

    clock = _FakeClock()
    loop = runner.Loop(workers=2, poll_min=0.01, poll_max=30, timeout=20, clock=clock.now, sleep=clock.sleep)

    def on_step(key, res, step):
        seen.append((key, res.message))
        if key == "maker":
            loop.kick("waiter")  # without the kick the waiter would sleep its 30 s, past the deadline
        if key == "waiter" and res.message == "waiting" and "maker" not in loop.items:
            loop.add("maker", maker)
        return bool(step and step.changed)

    loop.add("waiter", waiter)
    results = loop.run(on_step)
    assert results["waiter"].done and results["maker"].done
    assert not loop.timed_out
    assert seen[-1] == ("waiter", "go")


def test_loop_backs_off_while_nothing_moves_and_polls_fast_after_a_move():
    times = []
    clock = {"t": 0.0}

    def now():
        return clock["t"]

    def step():
        times.append(clock["t"])
        return runner.Step(done=len(times) >= 6, message="same")

    def sleep(seconds):  # an injected clock: the loop sleeps between steps, nothing really waits
        clock["t"] += seconds

    loop = runner.Loop(workers=1, poll_min=0.25, poll_max=2.0, clock=now, sleep=sleep)
    moved = {5}  # the 5th step moves something
    loop.add("x", step)
    loop.run(lambda key, res, out: len(times) in moved)
    gaps = [round(b - a, 2) for a, b in zip(times, times[1:], strict=False)]
    # doubling from 0.25 while nothing moves, capped at 2; back to 0.25 after the move
    assert gaps == [0.5, 1.0, 2.0, 2.0, 0.25]


def test_loop_bad_input_fails_at_once_other_errors_are_retried():
    calls = {"bad": 0, "flaky": 0}

    def bad():
        calls["bad"] += 1
        raise Invalid("no good", obj="Thing bad", field="spec.x")

    def flaky():
        calls["flaky"] += 1
        if calls["flaky"] < 3:
            raise RuntimeError("busy")
        return runner.Step(done=True, message="ok")

    loop = runner.Loop(workers=2, poll_min=0.001, poll_max=0.002)
    loop.add("bad", bad)
    loop.add("flaky", flaky)
    results = loop.run()
    assert calls["bad"] == 1 and results["bad"].failed and "spec.x" in results["bad"].message
    assert results["flaky"].done and not results["flaky"].failed and calls["flaky"] == 3


def test_loop_deadline_stops_it():
    clock = _FakeClock()
    loop = runner.Loop(workers=1, poll_min=0.01, poll_max=0.01, timeout=0.2, clock=clock.now, sleep=clock.sleep)
    loop.add("x", lambda: runner.Step(message="still provisioning"))
    results = loop.run()
    assert loop.timed_out and not results["x"].done and results["x"].message == "still provisioning"


def test_loop_abort_ends_it_after_the_steps_in_flight():
    """abort() (the ansible-playbook that waited for the result is gone) stops the loop: no step starts after it."""
    clock = _FakeClock()
    steps = []
    gone = []

    def step():
        steps.append(clock.now())
        if len(steps) == 3:
            gone.append(True)
        return runner.Step(message="still provisioning")

    loop = runner.Loop(workers=1, poll_min=0.01, poll_max=0.01, timeout=60, clock=clock.now, sleep=clock.sleep,
                       abort=lambda: bool(gone))  # fmt: skip
    loop.add("x", step)
    results = loop.run()
    assert len(steps) == 3 and not loop.timed_out and not results["x"].done
