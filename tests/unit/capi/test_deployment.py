"""MachineDeployment / MachineSet: rollouts, OnDelete, minReadySeconds, rollout.after, deletion order, paused,
status and owner remediation, on a real sqlite store with an injected clock.

``World`` plays what the rest of the collection does between two MachineDeployment steps: a Machine gets a
Ready Node ``boot`` steps after it was created, and a deleted Machine (held by a finalizer, as the Machine
controller's) goes away one step after its deletion started.
"""

from __future__ import annotations

import datetime

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.capi import deployment as md_controller
from ansible_collections.baremetal.capi.plugins.module_utils.capi import machineset
from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions, meta, names

NS = "md"
HOLD = "test.baremetal.capi/held"


class Clock:
    def __init__(self):
        self.t = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)

    def __call__(self):
        return self.t

    def advance(self, seconds: float):
        self.t += datetime.timedelta(seconds=seconds)


class World:
    def __init__(self, store, boot: int = 1):
        self.store = store
        self.clock = Clock()
        self.boot = boot
        self.age: dict[str, int] = {}
        self.dying: dict[str, int] = {}
        self.hold_deletes = False
        self.cluster = store.create(meta.new("Cluster", "c1", NS, spec={}))
        for tmpl in ("tmpl", "tmpl-v2", "tmpl-v3"):
            store.create(
                meta.new(
                    "Metal3MachineTemplate",
                    tmpl,
                    NS,
                    spec={"template": {"spec": {"image": {"url": f"http://i/{tmpl}.img"}}}},
                )
            )
        store.create(
            meta.new("KubeadmConfigTemplate", "workers", NS, spec={"template": {"spec": {"joinConfiguration": {}}}})
        )

    def deployment(self, replicas=3, surge=1, unavailable=0, kind="RollingUpdate", **extra):
        strategy = {"type": kind}
        if kind == "RollingUpdate":
            strategy["rollingUpdate"] = {"maxSurge": surge, "maxUnavailable": unavailable}
        spec = {
            "clusterName": "c1",
            "replicas": replicas,
            "rollout": {"strategy": strategy},
            "template": {
                "metadata": {"labels": {"pool": "a"}},
                "spec": {
                    "clusterName": "c1",
                    "version": "v1.34.1",
                    "bootstrap": {
                        "configRef": {
                            "apiGroup": "bootstrap.cluster.x-k8s.io",
                            "kind": "KubeadmConfigTemplate",
                            "name": "workers",
                        }
                    },
                    "infrastructureRef": {
                        "apiGroup": "infrastructure.cluster.x-k8s.io",
                        "kind": "Metal3MachineTemplate",
                        "name": "tmpl",
                    },
                },
            },
        }
        for key, value in extra.items():
            spec[key] = value
        return self.store.create(meta.new("MachineDeployment", "c1-md-0", NS, spec=spec))

    def md(self):
        return self.store.get("MachineDeployment", "c1-md-0", NS)

    def edit(self, fn):
        md = self.md()
        fn(md["spec"])
        return self.store.update(md)

    def machines(self):
        return self.store.list("Machine", NS)

    def live(self):
        return [m for m in self.machines() if not meta.is_deleting(m)]

    def available(self, min_ready=0):
        return [m for m in self.live() if machineset.is_available(m, min_ready, self.clock())]

    def step(self):
        step = md_controller.reconcile_deployment(self.store, self.md(), self.cluster, clock=self.clock)
        self.settle()
        return step

    def settle(self):
        """What the machine flow does meanwhile: Nodes come up, deleted Machines finish deleting."""
        for m in self.machines():
            name = meta.name(m)
            if meta.is_deleting(m):
                self.dying[name] = self.dying.get(name, 0) + 1
                if self.dying[name] > 1 and not self.hold_deletes:
                    m["metadata"]["finalizers"] = [f for f in m["metadata"].get("finalizers") or [] if f != HOLD]
                    self.store.update(m)
                continue
            if HOLD not in (m["metadata"].get("finalizers") or []):
                m["metadata"].setdefault("finalizers", []).append(HOLD)
                m = self.store.update(m)
            self.age[name] = self.age.get(name, 0) + 1
            if self.age[name] > self.boot and not (m.get("status") or {}).get("nodeRef"):
                m.setdefault("status", {})["nodeRef"] = {"name": name}
                conditions.set_condition(m, names.NODE_READY, True, names.NODE_READY_REASON, clock=self.clock)
                self.store.update_status(m)
        self.clock.advance(10)

    def converge(self, limit=40):
        for _ in range(limit):
            if self.step().done:
                return
        raise AssertionError("the MachineDeployment did not converge")

    def template_of(self, machine):
        infra = self.store.get("Metal3Machine", meta.name(machine), NS)
        return meta.annotations(infra)[names.CLONED_FROM_NAME_ANNOTATION]


@pytest.fixture
def world(store):
    return World(store)


def test_first_machine_set_starts_at_replicas_and_status_counts(world):
    world.deployment(replicas=3)
    first = world.step()
    assert len(first.data["created"]) == 3
    sets = world.store.list("MachineSet", NS)
    assert len(sets) == 1 and sets[0]["spec"]["replicas"] == 3
    ms_name = meta.name(sets[0])
    m = world.store.get("Machine", first.data["created"][0], NS)
    assert m["metadata"]["labels"] == {
        "pool": "a",
        names.SET_NAME_LABEL: ms_name,
        names.DEPLOYMENT_NAME_LABEL: "c1-md-0",
        names.CLUSTER_NAME_LABEL: "c1",
    }
    world.converge()
    status = world.md()["status"]
    assert {k: status[k] for k in ("replicas", "readyReplicas", "availableReplicas", "upToDateReplicas")} == {
        "replicas": 3,
        "readyReplicas": 3,
        "availableReplicas": 3,
        "upToDateReplicas": 3,
    }
    assert status["phase"] == "Running"
    ms = world.store.get("MachineSet", ms_name, NS)
    assert ms["status"]["availableReplicas"] == 3


@pytest.mark.parametrize(("surge", "unavailable"), [(0, 1), (1, 0), ("34%", "0%"), (0, "34%")])
def test_rolling_update_stays_within_surge_and_unavailable(world, surge, unavailable):
    world.deployment(replicas=3, surge=surge, unavailable=unavailable)
    world.converge()
    old = {meta.name(m) for m in world.machines()}
    s, u = md_controller.resolve_fenceposts(surge, unavailable, 3)
    world.edit(lambda spec: spec["template"]["spec"]["infrastructureRef"].update(name="tmpl-v2"))
    seen_surge = seen_unavailable = False
    for _ in range(60):
        done = world.step().done
        live, available = len(world.live()), len(world.available())
        assert 3 - u <= live <= 3 + s, f"{live} live machines outside [{3 - u}, {3 + s}]"
        assert available >= 3 - u, f"{available} available, fewer than {3 - u}"
        seen_surge |= live > 3
        seen_unavailable |= available < 3
        if done:
            break
    else:
        raise AssertionError("rollout did not finish")
    assert seen_surge == (s > 0) and seen_unavailable == (u > 0)
    machines = world.machines()
    assert len(machines) == 3 and not old & {meta.name(m) for m in machines}
    assert {world.template_of(m) for m in machines} == {"tmpl-v2"}
    assert len(world.store.list("MachineSet", NS)) == 1


def test_fenceposts_round_surge_up_and_unavailable_down():
    assert md_controller.resolve_fenceposts("25%", "25%", 3) == (1, 0)
    assert md_controller.resolve_fenceposts("50%", "50%", 5) == (3, 2)
    assert md_controller.resolve_fenceposts(0, "10%", 3) == (0, 1)  # both 0 after rounding: one may go
    assert md_controller.resolve_fenceposts(2, 0, 3) == (2, 0)


@pytest.mark.parametrize(
    ("rolling", "field"),
    [
        ({"maxSurge": 0, "maxUnavailable": 0}, "spec.rollout.strategy.rollingUpdate"),
        ({"maxSurge": "ten", "maxUnavailable": 0}, "spec.rollout.strategy.rollingUpdate.maxSurge"),
        ({"maxSurge": 1, "maxUnavailable": -1}, "spec.rollout.strategy.rollingUpdate.maxUnavailable"),
    ],
)
def test_bad_strategy_is_refused_naming_the_field(world, rolling, field):
    md = world.deployment()
    md["spec"]["rollout"]["strategy"]["rollingUpdate"] = rolling
    with pytest.raises(Invalid, match=field.replace(".", r"\.")):
        md_controller.validate_deployment(md)
    assert world.store.list("MachineSet", NS) == []


def test_in_place_fields_make_no_new_machine_set(world):
    world.deployment(replicas=2)
    world.converge()
    before = [meta.name(s) for s in world.store.list("MachineSet", NS)]

    def edit(spec):
        spec["template"]["spec"]["minReadySeconds"] = 5
        spec["template"]["metadata"]["labels"]["extra"] = "x"
        spec["deletion"] = {"order": "Newest"}

    world.edit(edit)
    world.converge()
    sets = world.store.list("MachineSet", NS)
    assert [meta.name(s) for s in sets] == before
    assert sets[0]["spec"]["deletion"] == {"order": "Newest"}
    assert sets[0]["spec"]["template"]["spec"]["minReadySeconds"] == 5


def test_on_delete_replaces_only_deleted_machines(world):
    world.deployment(replicas=3, kind="OnDelete")
    world.converge()
    world.edit(lambda spec: spec["template"]["spec"]["infrastructureRef"].update(name="tmpl-v2"))
    names_before = {meta.name(m) for m in world.machines()}
    steps = [world.step() for _ in range(5)]
    assert {meta.name(m) for m in world.machines()} == names_before  # nothing rolls by itself
    # ... and the deployment is settled meanwhile (a run does not wait for a rollout OnDelete never makes)
    assert steps[-1].done, steps[-1].message
    victim = sorted(names_before)[1]
    world.store.delete("Machine", victim, NS)
    assert not world.step().done  # one short until its replacement is available
    for _ in range(8):
        last = world.step()
    assert last.done, last.message
    machines = world.machines()
    assert len(machines) == 3
    assert {meta.name(m) for m in machines} >= names_before - {victim}
    assert sorted(world.template_of(m) for m in machines) == ["tmpl", "tmpl", "tmpl-v2"]


def test_min_ready_seconds_holds_a_rollout_back(world):
    world.deployment(replicas=2, surge=1, unavailable=0)
    world.edit(lambda spec: spec["template"]["spec"].update(minReadySeconds=300))
    for _ in range(40):  # 10 s per step: the first Machines become available after 300 s
        if world.step().done:
            break
    world.edit(lambda spec: spec["template"]["spec"]["infrastructureRef"].update(name="tmpl-v2"))
    old = {meta.name(m) for m in world.machines()}
    for _ in range(10):  # 100 s: the new Machine has a Ready Node but is not available yet
        world.step()
    assert old <= {meta.name(m) for m in world.live()}
    assert len(world.live()) == 3
    for _ in range(80):
        if world.step().done:
            break
    else:
        raise AssertionError("rollout did not finish")
    assert not old & {meta.name(m) for m in world.machines()}


def test_rollout_after_makes_older_machine_sets_old():
    at = datetime.datetime(2026, 1, 1, 12, tzinfo=datetime.UTC)
    after = at - datetime.timedelta(minutes=1)
    ms = {"metadata": {"labels": {"machine-template-hash": "abc-x1y2z"}, "creationTimestamp": "2026-01-01T11:00:00Z"}}
    assert md_controller.is_current(ms, "abc", None, at)
    assert not md_controller.is_current(ms, "abd", None, at)
    assert not md_controller.is_current(ms, "abc", after, at)  # made before a passed rollout.after
    assert md_controller.is_current(ms, "abc", at + datetime.timedelta(minutes=1), at)  # not passed yet
    ms["metadata"]["creationTimestamp"] = "2026-01-01T11:59:30Z"
    assert md_controller.is_current(ms, "abc", after, at)  # made after it: the rollout happened


def test_rollout_after_in_the_future_or_before_the_machine_set_rolls_nothing(world):
    world.deployment(replicas=2)
    world.converge()
    first = {meta.name(m) for m in world.machines()}
    created = world.store.list("MachineSet", NS)[0]["metadata"]["creationTimestamp"]
    before = machineset._parse(created) - datetime.timedelta(seconds=30)
    for after in (before, world.clock() + datetime.timedelta(days=1)):
        world.edit(lambda spec, after=after: spec["rollout"].update(after=after.strftime("%Y-%m-%dT%H:%M:%SZ")))
        for _ in range(3):
            world.step()
        assert {meta.name(m) for m in world.machines()} == first


def test_rollout_after_passed_rolls(world):
    world.deployment(replicas=2)
    world.converge()
    first = {meta.name(m) for m in world.machines()}
    # A rollout.after later than the MachineSet's creation, and passed for the (injected) clock.
    created = machineset._parse(world.store.list("MachineSet", NS)[0]["metadata"]["creationTimestamp"])
    world.clock.t = created + datetime.timedelta(seconds=30)
    after = created + datetime.timedelta(seconds=1)
    world.edit(lambda spec: spec["rollout"].update(after=after.strftime("%Y-%m-%dT%H:%M:%SZ")))
    world.step()
    assert len(world.store.list("MachineSet", NS)) == 2
    assert first <= {meta.name(m) for m in world.machines()}


def test_scale_down_takes_the_delete_machine_annotation_first(world):
    world.deployment(replicas=3)
    world.edit(lambda spec: spec.update(deletion={"order": "Oldest"}))
    world.converge()
    marked = sorted(meta.name(m) for m in world.machines())[2]
    m = world.store.get("Machine", marked, NS)
    m["metadata"].setdefault("annotations", {})[names.DELETE_MACHINE_ANNOTATION] = ""
    world.store.update(m)
    world.edit(lambda spec: spec.update(replicas=2))
    assert world.step().data["deleted"] == [marked]


def test_deletion_order_ranks():
    def m(name, stamp, **status):
        return {"metadata": {"name": name, "creationTimestamp": stamp}, "status": {"nodeRef": {"name": name}, **status}}

    machines = [m("a", "2026-01-01T00:00:01Z"), m("b", "2026-01-01T00:00:02Z"), m("c", "2026-01-01T00:00:03Z")]
    oldest_first = ["a", "b", "c"]

    def order(kind):
        return [meta.name(x) for x in sorted(machines, key=lambda x: machineset.deletion_rank(x, kind, oldest_first))]

    assert order("Oldest") == ["a", "b", "c"]
    assert order("Newest") == ["c", "b", "a"]
    assert order("Random") == ["a", "b", "c"]  # equal priority, by name
    machines[2]["status"] = {}  # no Node: unhealthy, goes before the age order
    assert order("Oldest")[0] == "c"


def test_paused_annotation_stops_everything_and_spec_paused_only_the_rollout(world):
    md = world.deployment(replicas=2)
    md["metadata"]["annotations"] = {names.PAUSED_ANNOTATION: ""}
    world.store.update(md)
    assert world.step().message == "paused" and world.machines() == []
    md = world.md()
    md["metadata"]["annotations"] = {}
    world.store.update(md)
    world.converge()

    def pause_and_change(spec):
        spec["paused"] = True
        spec["template"]["spec"]["infrastructureRef"]["name"] = "tmpl-v2"
        spec["replicas"] = 3

    world.edit(pause_and_change)
    for _ in range(4):
        world.step()
    sets = world.store.list("MachineSet", NS)
    assert len(sets) == 1 and sets[0]["spec"]["replicas"] == 3  # scaled, not rolled
    assert {world.template_of(m) for m in world.machines()} == {"tmpl"}
    world.edit(lambda spec: spec.update(paused=False))
    world.converge()
    assert {world.template_of(m) for m in world.machines()} == {"tmpl-v2"}


def _ask_owner_remediation(store, name):
    m = store.get("Machine", name, NS)
    conditions.set_condition(m, names.OWNER_REMEDIATED, False, "WaitingForRemediation")
    store.update_status(m)


def test_owner_remediation_within_max_in_flight(world):
    world.deployment(replicas=3, remediation={"maxInFlight": 1})
    world.converge()
    first, second = sorted(meta.name(m) for m in world.machines())[:2]
    _ask_owner_remediation(world.store, first)
    _ask_owner_remediation(world.store, second)
    world.hold_deletes = True  # the deletion takes a while
    step = md_controller.reconcile_deployment(world.store, world.md(), world.cluster, clock=world.clock)
    assert len(step.data["deleted"]) == 1
    gone = step.data["deleted"][0]
    waiting = ({first, second} - {gone}).pop()
    reasons = {meta.name(m): (conditions.get(m, names.OWNER_REMEDIATED) or {}).get("reason") for m in world.machines()}
    assert reasons[gone] == machineset.REMEDIATION_MACHINE_DELETING_REASON
    assert reasons[waiting] == machineset.REMEDIATION_DEFERRED_REASON
    again = md_controller.reconcile_deployment(world.store, world.md(), world.cluster, clock=world.clock)
    assert waiting not in again.data["deleted"]  # still one in flight
    world.hold_deletes = False
    world.settle()
    world.settle()  # the first deletion completes
    assert waiting in world.step().data["deleted"]
    world.converge()
    assert len(world.machines()) == 3 and not {first, second} & {meta.name(m) for m in world.machines()}


def test_check_mode_writes_nothing(world):
    world.deployment(replicas=2)
    step = md_controller.reconcile_deployment(world.store, world.md(), world.cluster, check=True)
    assert step.changed and len(step.data["created"]) == 2
    assert world.store.list("Machine", NS) == [] and world.store.list("MachineSet", NS) == []
