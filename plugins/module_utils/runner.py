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

from ansible_collections.baremetal.capi.plugins.module_utils.errors import CapiError, Conflict, Requeue


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
