"""The metal3_machine and metal3_machine_info modules, run in-process on sqlite (external host driver)."""

from __future__ import annotations

from flow_world import add_machine, host_of, make_world, play_bmo_available, play_bmo_provisioned

from ansible_collections.baremetal.capi.plugins.modules import metal3_machine, metal3_machine_info

BASE = {"host_driver": "external", "host_driver_options": {"poll": 0.1}, "wait_sleep": 0.1, "no_host_retry": 0.2}


def test_check_mode_gives_each_machine_its_own_host_and_writes_nothing(run, store):
    make_world(store, n_hosts=3)
    for i in range(3):
        add_machine(store, f"w{i}")
    rvs = sorted(h["metadata"]["resourceVersion"] for h in store.list("BareMetalHost", "default"))
    res = run(metal3_machine, dict(BASE, cluster="c1"), check=True)
    assert res["changed"]
    hosts = [m["host"] for m in res["machines"]]
    assert sorted(hosts) == ["h0", "h1", "h2"], res["machines"]
    assert sorted(h["metadata"]["resourceVersion"] for h in store.list("BareMetalHost", "default")) == rvs


def test_step_then_wait_timeout_reports_why(run, store):
    make_world(store, n_hosts=2)
    add_machine(store, "w1")
    res = run(metal3_machine, dict(BASE, name="w1", wait=False))
    assert res["changed"] and res["machines"][0]["message"].startswith("associated with host")
    res = run(metal3_machine, dict(BASE, name="w1", wait_timeout=1))
    assert res["failed"]
    assert "timed out" in res["msg"] and "wants provisioned" in res["msg"]
    info = run(metal3_machine_info, {"cluster": "c1"})
    [m] = info["machines"]
    assert m["host"] == host_of(store, "w1") and m["host_state"] == "available" and m["machine"] == "w1"


def test_losers_say_no_available_host(run, store):
    make_world(store, n_hosts=1)
    add_machine(store, "w1")
    add_machine(store, "w2")
    res = run(metal3_machine, dict(BASE, cluster="c1", wait=False))
    messages = sorted(m["message"] for m in res["machines"])
    assert messages[0].startswith("No available host found") and messages[1].startswith("associated with host h0")


def test_absent_with_external_driver(run, store):
    make_world(store, n_hosts=1)
    add_machine(store, "w1")
    run(metal3_machine, dict(BASE, name="w1", wait=False))
    play_bmo_provisioned(store, "h0")
    res = run(metal3_machine, dict(BASE, name="w1", state="absent", wait=False))
    assert res["changed"] and not res["machines"][0]["done"]
    play_bmo_available(store, "h0")
    res = run(metal3_machine, dict(BASE, name="w1", state="absent", wait_timeout=10))
    assert not res.get("failed"), res
    assert store.list("Metal3Machine", "default") == []
    assert "consumerRef" not in store.get("BareMetalHost", "h0", "default")["spec"]
    again = run(metal3_machine, dict(BASE, name="w1", state="absent"))
    assert not again["changed"]
