"""The machine flow's MAAS rules round by round against the simulator alone (no workload cluster, no node):
a machine whose deployment failed is released and not taken again at once, power is asked for only when MAAS
reports the machine off (error / unknown are not off), and a Broken machine is left Broken (MAAS released it
when marking it) while the next run takes another. test_maas_rules.py runs the same rules to a joined Node
with the whole lab; this one needs only the simulator, so each rule is checked at the round it acts in.
"""

from __future__ import annotations

import json

from tests.integration.maas import objects
from tests.integration.maas.conftest import eventually
from tests.integration.nodesim import cabpk

NS = "default"


def _sid(store, name: str) -> str | None:
    pid = store.get("MaasMachine", name, NS)["spec"].get("providerID")
    return pid.rsplit("/", 1)[-1] if pid else None


def _rounds(play, name: str, until, limit: int = 6) -> dict:
    """maas_machine one round at a time (wait: false) until ``until(result)``; the last result."""
    for _ in range(limit):
        r = play("maas_machine", {"name": name, "wait": False})
        if until(r):
            return r
    raise AssertionError(f"{name}: not reached in {limit} rounds; last: {r}")


def test_failed_deployment_power_and_broken_rules(sim, play_maas, store, tag):
    play = play_maas
    cname = f"r{tag[1:7]}"
    # x is the cheapest candidate and its deployment fails; y and z are dearer
    x, y, z = sim.seed({"cpu_count": 2, "memory": 2048}, {"cpu_count": 8}, {"cpu_count": 16, "memory": 32768},
                       tag=tag)  # fmt: skip
    sim.ctl("POST", f"machines/{x['system_id']}/fault", {"fault": "deploy_fails"})
    for obj in objects.cluster(cname, NS, []):
        store.create(obj)
    r = play("maas_cluster", {"name": cname})
    assert not r.get("failed"), r.get("msg") or r
    data = objects.join_data(f"{r['dns_name']}:6443", cabpk.new_cluster_ca(), cabpk.new_token(), control_plane=False)
    store.create(objects.secret("w-0-bootstrap", NS, cname, data))
    for obj in objects.machine("w-0", NS, cname, control_plane=False, spec={"image": "ubuntu/jammy", "tags": [tag]}):
        store.create(obj)

    # --- Failed deployment: released, and the next allocation does not take the same (cheapest) machine -----
    r = _rounds(play, "w-0", lambda r: r.get("failed"))
    assert "Failed deployment" in r["msg"] and x["hostname"] in r["msg"], r["msg"]
    eventually(lambda: sim.machine(x["system_id"])["status_name"] == "Ready", "the failed machine released")
    assert sim.machine(x["system_id"])["owner"] is None  # back in the pool for everyone else
    _rounds(play, "w-0", lambda r: sim.machine(y["system_id"])["status_name"] in ("Deploying", "Deployed"))
    assert _sid(store, "w-0") == y["system_id"]  # not x, though x is the cheapest and Ready
    eventually(lambda: sim.machine(y["system_id"])["status_name"] == "Deployed", "y deployed")

    # --- power: error/unknown is not off; only a confirmed off is powered on ----------------------------------
    for state in ("error", "unknown"):
        sim.ctl("POST", f"machines/{y['system_id']}", {"power_state": state})
        r = play("maas_machine", {"name": "w-0", "wait": False})
        assert not r.get("failed") and f"is Deployed and powered {state}" in json.dumps(r), r
        seen = sim.machine(y["system_id"])
        assert (seen["power_state"], seen["power_pending"]) == (state, None), seen  # no power_on was sent
        assert store.get("MaasMachine", "w-0", NS)["status"]["machinePowered"] is False
    sim.ctl("POST", f"machines/{y['system_id']}", {"power_state": "off"})
    r = play("maas_machine", {"name": "w-0", "wait": False})
    assert not r.get("failed"), r
    eventually(lambda: sim.machine(y["system_id"])["power_state"] == "on", "a machine MAAS shows off powered on")

    # --- Broken: MAAS released it when marking it; it is forgotten, left Broken, and another machine is taken ---
    sim.ctl("POST", f"machines/{y['system_id']}/fault", {"fault": "broken"})
    r = play("maas_machine", {"name": "w-0", "wait": False})
    assert r.get("failed") and "Broken" in r["msg"], r
    broken = sim.machine(y["system_id"])
    assert (broken["status_name"], broken["owner"]) == ("Broken", None)
    assert "Releasing" not in [h[2] for h in broken["history"]]  # not released again (that would make it Ready)
    assert _sid(store, "w-0") is None
    _rounds(play, "w-0", lambda r: _sid(store, "w-0") is not None)
    # never the Broken one, and not x while its cooldown lasts (minutes; this test takes seconds)
    assert _sid(store, "w-0") == z["system_id"]
    assert sim.machine(y["system_id"])["status_name"] == "Broken"
