"""chooseHost on the sqlite store's indexed path: the same host as classify + pick over every host, read whole
only where it must be (CAPM3 baremetal/metal3machine_manager.go chooseHost)."""

from __future__ import annotations

import random

import pytest
from capi_objects import bmh, machine, metal3_machine, put

from ansible_collections.baremetal.capi.plugins.module_utils.errors import NoHostAvailable, Requeue
from ansible_collections.baremetal.capi.plugins.module_utils.metal3 import choose
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta, names
from ansible_collections.baremetal.capi.plugins.module_utils.store.sqlite import SqliteStore

M3M_REF = {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "Metal3Machine", "namespace": "default"}
CLUSTER_REF = {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "name": "c1", "namespace": "default"}
STATES = ["available", "ready", "provisioned", "registering", "inspecting", "", "deprovisioning"]


class CountingStore(SqliteStore):
    """Counts the objects it decodes."""

    decoded = 0

    def _load(self, body, rv):
        CountingStore.decoded += 1
        return super()._load(body, rv)


def reference(store, m3m, mach, rng, exclude=()):
    """Host choice as it was before the index: every host the selector matches, classify, pick."""
    selector = choose.host_selector(m3m)
    listed = [h for h in store.list("BareMetalHost", "default", selector) if meta.name(h) not in exclude]
    own, reuse, available, _skipped = choose.classify(listed, m3m, choose.node_reuse_value(store, mach))
    if own is not None:
        return meta.name(own)
    if reuse:
        if any(h["status"]["provisioning"]["state"] not in ("ready", "available") for h in reuse):
            return "requeue"
        return meta.name(reuse[-1])
    if not available:
        return None
    return meta.name(choose.pick(available, m3m["spec"].get("failureDomain"), rng))


def varied_hosts(store, n: int, seed: int, reuse: bool) -> None:
    """Hosts in every state chooseHost tells apart: states, consumerRefs, errors, annotations, deleting."""
    r = random.Random(seed)
    for i in range(n):
        labels = {"rack": f"r{r.randrange(3)}"}
        if r.random() < 0.6:
            labels[names.FAILURE_DOMAIN_LABEL] = r.choice(["fd-a", "fd-b"])
        spec = {}
        roll = r.random()
        if roll < 0.25:
            spec["consumerRef"] = dict(M3M_REF, name=f"other-{i}")
        elif roll < 0.3:
            spec["consumerRef"] = {}
        elif reuse and roll < 0.35:
            labels[names.NODE_REUSE_LABEL] = r.choice(["md-other", "md-workers"])
            spec["consumerRef"] = CLUSTER_REF
        notes = {}
        roll = r.random()
        if roll < 0.08:
            notes[names.BMH_PAUSED_ANNOTATION] = r.choice(["", names.PAUSED_ANNOTATION_VALUE_CAPM3])
        elif roll < 0.12:
            notes[names.UNHEALTHY_ANNOTATION] = "capm3/UnhealthyNode"
        elif roll < 0.15:
            notes[names.UNHEALTHY_ANNOTATION_DEPRECATED] = ""
        elif roll < 0.3:
            notes["example.com/other"] = "x"
        host = bmh(f"h{i:03d}", state=r.choice(STATES), labels=labels, annotations=notes, **spec)
        roll = r.random()
        if roll < 0.1:
            host["status"]["errorMessage"] = "BMC unreachable"
        elif roll < 0.2:
            host["status"]["errorMessage"] = ""
        if r.random() < 0.05:
            host["metadata"]["finalizers"] = ["baremetalhost.metal3.io"]
            put(store, host)
            store.delete("BareMetalHost", host["metadata"]["name"], "default")
        else:
            put(store, host)


SELECTORS = [
    None,
    {"matchLabels": {"rack": "r1"}},
    {"matchExpressions": [{"key": "rack", "operator": "NotIn", "values": ["r0"]}]},
    {"matchExpressions": [{"key": names.FAILURE_DOMAIN_LABEL, "operator": "Exists"}]},
]


@pytest.mark.parametrize("fd", [None, "fd-a", "fd-x"])
@pytest.mark.parametrize("host_selector", SELECTORS, ids=[str(s) for s in SELECTORS])
def test_the_indexed_choice_is_the_full_reads_choice_for_every_draw(store, host_selector, fd):
    varied_hosts(store, 80, seed=7, reuse=False)
    m3m = metal3_machine("m1", host_selector=host_selector, failure_domain=fd)
    mach = machine("m1")
    seen = set()
    for seed in range(25):
        exclude = {f"h{i:03d}" for i in random.Random(seed).sample(range(80), 10)} if seed % 2 else set()
        want = reference(store, m3m, mach, random.Random(seed), exclude)
        host, _reason = choose.choose_host(store, m3m, mach, rng=random.Random(seed), exclude=exclude)
        assert (host and host["metadata"]["name"]) == want, (seed, sorted(exclude))
        seen.add(want)
    assert len(seen) > 1  # the draws went to several hosts: the test compares choices, not one answer


def test_own_and_node_reuse_hosts_come_first_as_before(store):
    varied_hosts(store, 60, seed=3, reuse=True)
    mach = machine("m1", labels={names.DEPLOYMENT_NAME_LABEL: "workers"})
    m3m = metal3_machine("m1")
    for seed in range(5):
        want = reference(store, m3m, mach, random.Random(seed))
        try:
            host, _ = choose.choose_host(store, m3m, mach, rng=random.Random(seed))
            got = host and host["metadata"]["name"]
        except Requeue:
            got = "requeue"
        assert got == want
    put(store, bmh("h-mine", state="provisioned", consumerRef=dict(M3M_REF, name="m1")))
    assert choose.choose_host(store, m3m, mach)[0]["metadata"]["name"] == "h-mine"


def test_only_the_drawn_host_is_read_whole(tmp_path):
    store = CountingStore(str(tmp_path / "state.db"))
    for i in range(300):
        consumer = {"consumerRef": dict(M3M_REF, name=f"other-{i}")} if i % 3 else {}
        put(store, bmh(f"h{i:03d}", state="available" if i % 2 else "provisioned", **consumer))
    CountingStore.decoded = 0
    host, _ = choose.choose_host(store, metal3_machine("m1"), machine("m1"))
    assert host is not None and not host["spec"].get("consumerRef")
    assert CountingStore.decoded == 1  # the drawn host; the 50 others available were named, not read
    store.close()


def test_a_host_claimed_after_it_was_named_is_not_taken(store, monkeypatch):
    """Between the names and the read of the drawn one, another machine claims it: draw again."""
    for i in range(2):
        put(store, bmh(f"h{i}"))
    other = put(store, metal3_machine("m2"))
    real = store.list_keys
    raced = []

    def list_keys(*args, **kwargs):
        keys = real(*args, **kwargs)
        if not raced:
            raced.append(True)
            for _ns, name in keys:  # every host named is claimed before it is read but one
                if name == "h0":
                    host = store.get("BareMetalHost", name, "default")
                    store.update(choose.claimed(host, other, "c1"))
        return keys

    monkeypatch.setattr(store, "list_keys", list_keys)
    m3m = put(store, metal3_machine("m1"))
    rng = random.Random(0)
    rng.choice = lambda seq: seq[0]  # draw h0 first: the claimed one
    host, _ = choose.claim(store, m3m, machine("m1"), rng=rng)
    assert host["metadata"]["name"] == "h1"
    assert store.get("BareMetalHost", "h0", "default")["spec"]["consumerRef"]["name"] == "m2"


def test_no_host_still_says_why_each_host_was_skipped(store):
    put(store, bmh("h-err"))
    h = store.get("BareMetalHost", "h-err", "default")
    h["status"] = {"provisioning": {"state": "available"}, "errorMessage": "boom"}
    store.update_status(h)
    put(store, bmh("h-unhealthy", annotations={names.UNHEALTHY_ANNOTATION: ""}))
    with pytest.raises(NoHostAvailable) as info:
        choose.claim(store, put(store, metal3_machine("m1")), machine("m1"))
    assert info.value.skipped == {"h-err": "error", "h-unhealthy": "unhealthy"}
