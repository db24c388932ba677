"""store/mutate.py, the one read-modify-write-retry-on-Conflict helper, and objects.apply going through it."""

from __future__ import annotations

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils import objects
from ansible_collections.baremetal.capi.plugins.module_utils.errors import AlreadyExists, Conflict, Requeue
from ansible_collections.baremetal.capi.plugins.module_utils.model import kinds
from ansible_collections.baremetal.capi.plugins.module_utils.store import mutate as rmw


def losing(times: int, value="won"):
    """An attempt that meets a Conflict ``times`` times, then returns ``value``."""
    calls = []

    def attempt():
        calls.append(1)
        if len(calls) <= times:
            raise Conflict("stale")
        return value

    attempt.calls = calls
    return attempt


def test_on_conflict_retries_until_the_attempt_wins():
    attempt = losing(3)
    assert rmw.on_conflict(attempt, what="x") == "won"
    assert len(attempt.calls) == 4


def test_on_conflict_requeues_the_flow_after_its_attempts():
    attempt = losing(100)
    with pytest.raises(Requeue, match="Secret ns/a keeps changing") as info:
        rmw.on_conflict(attempt, what="Secret ns/a", attempts=5, after=3)
    assert len(attempt.calls) == 5 and info.value.after == 3


def test_on_conflict_raises_what_exhausted_gives_and_waits_between_attempts(monkeypatch):
    slept = []
    monkeypatch.setattr(rmw.time, "sleep", slept.append)
    attempt = losing(100)
    with pytest.raises(ValueError, match="gave up after stale"):
        rmw.on_conflict(
            attempt, what="x", attempts=3, backoff=0.01, exhausted=lambda c: ValueError(f"gave up after {c.message}")
        )
    assert len(attempt.calls) == 3
    assert len(slept) == 2 and all(0.01 <= s <= 0.02 for s in slept)  # jittered, none after the last attempt


def test_mutate_redoes_the_change_on_a_fresh_read_when_another_writer_won(store, ns):
    store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": ns}, "data": {}})
    seen = []

    def change(obj):
        seen.append(dict(obj["data"]))
        if len(seen) == 1:  # another writer slips in between this read and this write
            other = store.get("ConfigMap", "c", ns)
            other["data"]["theirs"] = "1"
            store.update(other)
        obj["data"]["ours"] = "1"
        return True

    stored = rmw.mutate(store, "ConfigMap", "c", ns, change)
    assert stored["data"] == {"theirs": "1", "ours": "1"}
    assert seen == [{}, {"theirs": "1"}]


def test_apply_patches_the_object_someone_else_created_meanwhile(store, ns):
    class Racing:
        """A store whose first create meets an object another writer has just created."""

        def __init__(self, inner):
            self.inner, self.raced = inner, False

        def __getattr__(self, name):
            return getattr(self.inner, name)

        def create(self, obj):
            if not self.raced:
                self.raced = True
                theirs = {**obj, "data": {"theirs": "1"}}
                self.inner.create(theirs)
                raise AlreadyExists("already exists")
            return self.inner.create(obj)

    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": ns}, "data": {"ours": "1"}}
    changed, before, after, method = objects.apply(Racing(store), cm, kinds.resolve("ConfigMap"))
    assert (changed, method) == (True, "update")
    assert before["data"] == {"theirs": "1"} and after["data"] == {"theirs": "1", "ours": "1"}


def test_apply_with_a_stale_resource_version_fails_at_once(store, ns):
    created = store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": ns}})
    store.update({**created, "data": {"x": "1"}})
    stale = {**created, "data": {"x": "2"}}
    with pytest.raises(Conflict) as info:
        objects.apply(store, stale, kinds.resolve("ConfigMap"))
    assert "kept changing" not in str(info.value)  # the caller's own stale version, not a lost race
    assert store.get("ConfigMap", "c", ns)["data"] == {"x": "1"}
