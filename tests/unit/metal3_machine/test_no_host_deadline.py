"""A machine that gets no host fails the run at its deadline saying so (issue 20, "deadlines that explain
themselves"): the Converger's rounds over a cluster with more machines than matching hosts, then the message
cluster_machines fails with - the machine, "no available host matching" its selector, the failure domain, how
many hosts were seen and why each one was not taken; not a bare timeout."""

from __future__ import annotations

from capi_objects import bmh, put
from flow_world import add_machine, make_world, manager

from ansible_collections.baremetal.capi.plugins.module_utils.capi import converge_task
from ansible_collections.baremetal.capi.plugins.module_utils.capi.converge import Converger


def test_the_deadline_names_the_machine_without_a_host_and_why_each_host_was_skipped(store):
    make_world(store, n_hosts=0)
    store.delete("Machine", "cp-keep", "default")  # only the two workers: both wait for a host
    put(store, bmh("h-w", labels={"pool": "w"}))
    put(store, bmh("h-cp", labels={"pool": "cp"}))
    for name in ("w1", "w2"):
        add_machine(store, name, host_selector={"matchLabels": {"pool": "w"}}, failure_domain="rack-1")
    conv = Converger(store, manager(store), "c1", "default", infra_kind="Metal3Machine")
    report = conv.converge(timeout=2, poll=0.2)
    assert report["timed_out"] and not report["done"]
    owner = store.get("BareMetalHost", "h-w", "default")["spec"].get("consumerRef") or {}
    winner = owner.get("name")
    assert winner in ("w1", "w2"), owner
    loser = ({"w1", "w2"} - {winner}).pop()
    params = {"cluster": "c1", "wait": True, "wait_timeout": 2, "stop_when": "converged"}
    _result, msg = converge_task.outcome(params, "default", report, check_mode=False)
    assert msg.startswith("cluster default/c1 not converged after 2s: "), msg
    assert (
        f"{loser} (Provisioning): No available host found: no available host matching pool=w "
        "(failure domain rack-1, preferred); 2 BareMetalHost(s) in default, 1 matching: "
        f"h-cp labels do not match; h-w consumed by Metal3Machine default/{winner}"
    ) in msg, msg
    assert f"{winner} (Provisioning): waiting: host is available, wants provisioned" in msg, msg
