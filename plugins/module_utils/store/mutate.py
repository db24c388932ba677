"""Optimistic concurrency in one place: read, change, write; on Conflict read again and redo.

Every flow that updates an object it read goes through :func:`mutate` (or :func:`on_conflict` when the
"read, decide, write" is not one object's change), so the number of attempts, what happens when they run
out and whether status is kept out of a spec write are decided once.
"""

from __future__ import annotations

import copy
import random
import time

from ansible_collections.baremetal.capi.plugins.module_utils.errors import Conflict, NotFound, Requeue
from ansible_collections.baremetal.capi.plugins.module_utils.model import kinds

ATTEMPTS = 20


def on_conflict(
    attempt,
    *,
    what: str,
    attempts: int = ATTEMPTS,
    after: float = 1,
    obj: str | None = None,
    backoff: float = 0.0,
    exhausted=None,
):
    """``attempt()`` until it does not raise Conflict; after ``attempts`` losses the caller is requeued.

    A flow that keeps losing the race is not failed: another writer is busy with the object, and the next
    reconcile sees what it wrote. A caller that is no flow (one ``object`` task) says what to raise instead:
    ``exhausted(last_conflict)``. ``backoff``: seconds (jittered up to twice) between two attempts, as
    client-go's retry.RetryOnConflict waits.
    """
    for _round in range(attempts):
        try:
            return attempt()
        except Conflict as exc:
            last = exc
            if backoff and _round + 1 < attempts:
                time.sleep(backoff * (1 + random.random()))
    if exhausted is not None:
        raise exhausted(last)
    raise Requeue(f"{what} keeps changing; retrying", after=after, obj=obj)


def mutate(store, kind: str, name: str, ns: str | None, change, *, status: bool = False, missing_ok: bool = False):
    """Re-read ``kind ns/name``, ``change(copy) -> bool``, write it (``status``: the status subresource).

    Returns the stored object: the written one, or the current one when ``change`` says there is nothing to
    do. A spec write drops ``status`` where it is a subresource (others own it). ``missing_ok``: an object
    that is gone returns None.
    """

    def attempt():
        try:
            current = store.get(kind, name, ns)
        except NotFound:
            if missing_ok:
                return None
            raise
        new = copy.deepcopy(current)
        if not change(new):
            return current
        if status:
            return store.update_status(new)
        if kinds.resolve(kind).status_subresource:
            new.pop("status", None)  # others own it; a kind without the subresource keeps it in the spec write
        return store.update(new)

    return on_conflict(attempt, what=f"{kind} {ns}/{name}" if ns else f"{kind} {name}")
