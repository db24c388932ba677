"""The MAAS rules that protect hosts: power on only a machine MAAS reports off, Broken machines left Broken
(never released back into the pool), a machine whose deployment failed not picked again at once."""

from __future__ import annotations

import json

from tests.integration.maas import objects
from tests.integration.maas.conftest import eventually
from tests.integration.nodesim import cabpk

NS = "default"


def _sid(store, name):
    return store.get("MaasMachine", name, NS)["spec"]["providerID"].rsplit("/", 1)[-1]


def test_power_broken_and_failed_deployment_rules(sim, play, store, tag, maas_lab):
    cname = f"c{tag[1:7]}"
    cp_tags, w_tags = [f"{tag}cp"], [f"{tag}w"]
    s0 = sim.seed({"zone": "az-1", "tags": cp_tags}, tag=tag)[0]
    # x is the cheapest worker candidate and its deployment fails; y and z are dearer
    x, y, z = sim.seed({"tags": w_tags, "cpu_count": 2, "memory": 2048}, {"tags": w_tags, "cpu_count": 8},
                       {"tags": w_tags, "cpu_count": 16, "memory": 32768}, tag=tag)  # fmt: skip
    sim.ctl("POST", f"machines/{x['system_id']}/fault", {"fault": "deploy_fails"})
    for obj in objects.cluster(cname, NS, ["az-1", "az-2", "az-3"]):
        store.create(obj)
    r = play("maas_cluster", {"name": cname})
    assert not r.get("failed"), r.get("msg") or r
    endpoint = f"{r['dns_name']}:6443"
    ca, token = cabpk.new_cluster_ca(), cabpk.new_token()
    kubeconfig = objects.admin_kubeconfig(cname, f"{s0['ip']}:6443", ca)
    store.create(objects.secret(f"{cname}-kubeconfig", NS, cname, kubeconfig))
    specs = {"cp-0": {"image": "ubuntu/jammy", "tags": [tag, *cp_tags], "systemID": s0["system_id"]},
             "w-0": {"image": "ubuntu/jammy", "tags": [tag, *w_tags]}}  # fmt: skip
    data = {"cp-0": objects.init_data(cname, endpoint, ca),
            "w-0": objects.join_data(endpoint, ca, token, control_plane=False)}  # fmt: skip
    for name, text in data.items():
        store.create(objects.secret(f"{name}-bootstrap", NS, cname, text))
        for obj in objects.machine(name, NS, cname, control_plane=name.startswith("cp"), spec=specs[name]):
            store.create(obj)
    r = play("maas_machine", {"name": "cp-0", "wait_timeout": 300})
    assert not r.get("failed"), r.get("msg")
    objects.create_token(kubeconfig, token)

    # --- Failed deployment: released, and the next run does not take the same (cheapest) machine again ---------
    r = play("maas_machine", {"name": "w-0", "wait_timeout": 300})
    assert r.get("failed") and "Failed deployment" in r["msg"], r
    eventually(lambda: sim.machine(x["system_id"])["status_name"] == "Ready", "the failed machine released")
    r = play("maas_machine", {"name": "w-0", "wait_timeout": 300})
    assert not r.get("failed"), r.get("msg")
    assert _sid(store, "w-0") == y["system_id"]
    assert sim.machine(x["system_id"])["owner"] is None  # still in the pool for everyone else

    # --- power: error/unknown is not off; only a confirmed off is powered on ----------------------------------
    for state in ("error", "unknown"):
        sim.ctl("POST", f"machines/{y['system_id']}", {"power_state": state})
        r = play("maas_machine", {"name": "w-0", "wait": False})  # one round: it would wait for "on" forever
        assert not r.get("failed") and f"is Deployed and powered {state}" in json.dumps(r), r
        assert sim.machine(y["system_id"])["power_state"] == state  # no power_on was sent
        assert store.get("MaasMachine", "w-0", NS)["status"]["machinePowered"] is False
    sim.ctl("POST", f"machines/{y['system_id']}", {"power_state": "off"})
    play("maas_machine", {"name": "w-0", "wait": False})
    eventually(lambda: sim.machine(y["system_id"])["power_state"] == "on", "a machine MAAS shows off powered on")

    # --- Broken: MAAS released it when marking it; it is forgotten, left Broken, and another machine is taken ---
    sim.ctl("POST", f"machines/{y['system_id']}/fault", {"fault": "broken"})
    r = play("maas_machine", {"name": "w-0", "wait_timeout": 300})
    assert r.get("failed") and "Broken" in r["msg"], r
    broken = sim.machine(y["system_id"])
    assert (broken["status_name"], broken["owner"]) == ("Broken", None)
    assert "Releasing" not in [h[2] for h in broken["history"]]  # not released again (it would go Ready)
    r = play("maas_machine", {"name": "w-0", "wait_timeout": 300})
    assert not r.get("failed"), r.get("msg")
    # never the Broken one; x may be taken again once its cooldown is over (the runs here are slow)
    assert _sid(store, "w-0") in {x["system_id"], z["system_id"]}
    assert sim.machine(y["system_id"])["status_name"] == "Broken"
