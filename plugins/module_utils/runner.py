"""Reconcile many objects at once: a bounded worker pool, one deadline, requeue-after.

A *step* is one reconcile of one object: ``step(item) -> Step``.  It is
called again for an item that is not done yet, after the delay the step asked
for (``Step.requeue_after`` or ``Requeue.after``), until the item is done,
fails, or the deadline passes.  With ``wait=False`` every item gets exactly
one step.  Results are per object; one object's failure never stops another.
"""

from __future__ import annotations

import heapq
import threading
import time
import traceback
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from ansible_collections.baremetal.capi.plugins.module_utils.errors import CapiError, Conflict, Invalid, Requeue


@dataclass
class Step:
    done: bool = False
    changed: bool = False
    message: str = ""
    requeue_after: float | None = None
    data: dict = field(default_factory=dict)


@dataclass
class Result:
    key: str
    done: bool = False
    failed: bool = False
    changed: bool = False
    message: str = ""
    steps: int = 0
    data: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {
            "name": self.key,
            "done": self.done,
            "failed": self.failed,
            "changed": self.changed,
            "message": self.message,
            "steps": self.steps,
            **self.data,
        }


def run(
    items: Iterable[Any],
    step: Callable[[Any], Step],
    *,
    key: Callable[[Any], str] = str,
    workers: int = 8,
    wait: bool = True,
    timeout: float | None = None,
    poll: float = 2.0,
    conflict_retry: float = 0.05,
    progress: Callable[[str, str], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> list[Result]:
    """Reconcile ``items`` with ``step``; return one Result per item, in input order."""
    items = list(items)
    results = [Result(key(item)) for item in items]
    if not items:
        return results
    deadline = clock() + timeout if timeout else None
    ready: list[tuple[float, int]] = [(clock(), i) for i in range(len(items))]
    heapq.heapify(ready)
    lock = threading.Lock()

    def one(i: int) -> tuple[int, float | None]:
        res = results[i]
        res.steps += 1
        try:
            out = step(items[i]) or Step()
        except Requeue as exc:
            out = Step(done=False, message=exc.message, requeue_after=exc.after)
        except Conflict as exc:
            # Someone else moved the object: read it again and redo the step.
            out = Step(done=False, message=f"retrying after a conflict: {exc}", requeue_after=conflict_retry)
        except CapiError as exc:
            res.failed, res.message = True, str(exc)
            return i, None
        except Exception as exc:  # a bug or an unexpected client error: report it for this object only
            res.failed = True
            res.message = f"{type(exc).__name__}: {exc}"
            res.data["traceback"] = traceback.format_exc(limit=8)
            return i, None
        with lock:
            res.changed = res.changed or out.changed
            res.data.update(out.data)
            if out.message and out.message != res.message and progress:
                progress(res.key, out.message)
            res.message = out.message or res.message
            res.done = out.done
        if out.done or not wait:
            return i, None
        return i, out.requeue_after if out.requeue_after is not None else poll

    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(items)))) as pool:
        running = set()
        while ready or running:
            now = clock()
            while ready and ready[0][0] <= now and len(running) < workers:
                _due, i = heapq.heappop(ready)
                running.add(pool.submit(one, i))
            if deadline is not None and now >= deadline and not running:
                break
            if running:
                next_at = ready[0][0] if ready else None
                wait_for = None if next_at is None or len(running) >= workers else max(0.0, next_at - clock())
                finished, running = wait_futures(running, timeout=wait_for, return_when=FIRST_COMPLETED)
                for fut in finished:
                    i, again = fut.result()
                    if again is not None:
                        at = clock() + again
                        if deadline is None or at < deadline:
                            heapq.heappush(ready, (at, i))
                        else:
                            results[i].message = f"timed out: {results[i].message}"
            elif ready:
                time.sleep(max(0.0, min(ready[0][0] - clock(), 0.5)))
    for res in results:
        if (
            not res.done
            and not res.failed
            and wait
            and deadline is not None
            and not res.message.startswith("timed out")
        ):
            res.message = f"timed out: {res.message}"
    return results


# --- the loop: items that advance on their own, without rounds ------------------------------------------


@dataclass
class _Item:
    key: str
    step: Callable[[], Step]
    result: Result
    interval: float
    due: float | None = None  # None: asleep (done, or running)
    running: bool = False
    kicked: bool = False  # kicked while running: step again as soon as it finishes
    errors: int = 0
    final: bool = False  # failed for good (bad input): never stepped again


class Loop:
    """Step many items on a bounded pool, each as soon as its own delay allows, until all are done.

    Unlike ``run``, items can be added, woken (``kick``) and removed while the loop runs, by the
    ``on_step(item_key, result, step)`` callback, which is called on the loop's own thread after every step
    and returns whether the item *moved* (its observable state changed).  ``abort()``, asked before each
    scheduling pass, ends the loop as ``stop()`` does (the steps already running finish first).  Waits adapt:
    after a move the item is stepped again after ``poll_min``, then the interval doubles while nothing moves, up
    to ``poll_max``; a delay the step asks for (``requeue_after``) shortens that, never lengthens it.  An item is never
    stepped twice at once.  Bad input (``Invalid``) fails an item for good; any other error is requeued
    with backoff, as a controller requeues, and stays the item's result until a step succeeds.
    """

    def __init__(
        self,
        *,
        workers: int = 8,
        timeout: float | None = None,
        poll_min: float = 0.25,
        poll_max: float = 2.0,
        conflict_retry: float = 0.05,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        abort: Callable[[], bool] | None = None,
    ):
        self.workers = max(1, workers)
        self.abort = abort
        self.clock = clock
        self.sleep = sleep
        self.deadline = clock() + timeout if timeout else None
        self.poll_min = min(poll_min, poll_max)
        self.poll_max = poll_max
        self.conflict_retry = conflict_retry
        self.items: dict[str, _Item] = {}
        self.steps = 0
        self._stopped = False

    # -- called before run() or from on_step ----------------------------------------------------------
    def add(self, key: str, step: Callable[[], Step]) -> None:
        if key not in self.items:
            self.items[key] = _Item(key, step, Result(key), self.poll_min, due=self.clock())

    def kick(self, key: str) -> None:
        item = self.items.get(key)
        if item is None or item.final:
            return
        if item.running:
            item.kicked = True
        else:
            item.interval = self.poll_min
            item.due = self.clock()

    def remove(self, key: str) -> None:
        self.items.pop(key, None)

    def stop(self) -> None:
        self._stopped = True

    @property
    def timed_out(self) -> bool:
        return self.deadline is not None and self.clock() >= self.deadline

    # -- the loop ---------------------------------------------------------------------------------------
    def _one(self, item: _Item) -> tuple[_Item, Step | None, float | None, float]:
        t0 = self.clock()
        res = item.result
        res.steps += 1
        try:
            out = item.step() or Step()
        except Requeue as exc:
            out = Step(done=False, message=exc.message, requeue_after=exc.after)
        except Conflict as exc:
            out = Step(done=False, message=f"retrying after a conflict: {exc}", requeue_after=self.conflict_retry)
        except Invalid as exc:
            res.failed, res.done, res.message = True, False, str(exc)
            item.final = True
            return item, None, None, self.clock() - t0
        except Exception as exc:  # requeued with backoff; the task fails with it only at the deadline
            item.errors += 1
            res.failed, res.done = True, False
            res.message = str(exc) if isinstance(exc, CapiError) else f"{type(exc).__name__}: {exc}"
            if not isinstance(exc, CapiError):
                res.data["traceback"] = traceback.format_exc(limit=8)
            return item, None, min(self.poll_max * 2 ** min(item.errors, 6), 60.0), self.clock() - t0
        item.errors = 0
        res.failed = False
        res.data.pop("traceback", None)
        res.changed = res.changed or out.changed
        res.data.update(out.data)
        res.message = out.message or res.message
        res.done = out.done
        return item, out, out.requeue_after, self.clock() - t0

    def run(self, on_step: Callable[[str, Result, Step | None], bool] | None = None) -> dict[str, Result]:
        """Step until every item is done (or failed for good), ``stop()`` is called, or the deadline."""
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            running: dict = {}
            while True:
                if self.abort is not None and not self._stopped and self.abort():
                    self._stopped = True  # no new step; the ones running finish, then the loop ends
                now = self.clock()
                due = sorted(
                    (i for i in self.items.values() if i.due is not None and not i.running), key=lambda i: i.due
                )
                if not self._stopped and not self.timed_out:
                    for item in due:
                        if item.due > now or len(running) >= self.workers:
                            break
                        item.running, item.due = True, None
                        running[pool.submit(self._one, item)] = item
                if not running:
                    pending = [i for i in self.items.values() if i.due is not None]
                    if self._stopped or self.timed_out or not pending:
                        break
                    self.sleep(max(0.0, min(min(i.due for i in pending) - self.clock(), 0.5)))
                    continue
                next_due = min((i.due for i in self.items.values() if i.due is not None), default=None)
                wait_for = None
                if next_due is not None and len(running) < self.workers:
                    wait_for = max(0.0, next_due - self.clock())
                if self.deadline is not None:
                    left = max(0.0, self.deadline - self.clock())
                    wait_for = left if wait_for is None else min(wait_for, left)
                finished, _pending = wait_futures(list(running), timeout=wait_for, return_when=FIRST_COMPLETED)
                for fut in finished:
                    running.pop(fut)
                    item, out, asked, took = fut.result()
                    self.steps += 1
                    item.running = False
                    item.result.data["step_seconds"] = round(took, 3)
                    moved = bool(on_step(item.key, item.result, out)) if on_step else False
                    if item.key not in self.items:
                        continue
                    if item.kicked or moved:
                        item.interval = self.poll_min
                    else:
                        item.interval = min(item.interval * 2, self.poll_max)
                    if item.final:
                        item.due = None
                    elif item.kicked:
                        item.kicked, item.due = False, self.clock()
                    elif item.result.done:
                        item.due = None
                    elif out is None:  # an error: the backoff it asked
                        item.due = self.clock() + asked
                    else:
                        item.due = self.clock() + (item.interval if asked is None else min(asked, item.interval))
        return {k: i.result for k, i in self.items.items()}
