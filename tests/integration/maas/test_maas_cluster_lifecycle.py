"""A 3 control-plane + 2 worker MAAS cluster through the modules, asserted on the simulators' state.

The lab serves no DNS, so the test resolves the API name the way a client would through MAAS DNS: the
``<cluster>-kubeconfig`` Secret points at the address the record will hold for the first control plane
(pinned with ``spec.systemID``), where the node simulator starts the workload API server on ``kubeadm init``.
"""

from __future__ import annotations

import re

from tests.integration.maas import objects
from tests.integration.maas.conftest import eventually
from tests.integration.nodesim import cabpk

NS = "default"


def _create(store, objs):
    for obj in objs:
        store.create(obj)


def _sid(store, name):
    return store.get("MaasMachine", name, NS)["spec"]["providerID"].rsplit("/", 1)[-1]


def _hosts(maas_lab, sim, tag) -> dict:
    """What the node simulator did with this test's machines (for failure messages)."""
    from lab.nodesim import client as nodesim

    mine = {f"maas/{m['system_id']}" for m in sim.tagged(tag)}
    return {k: v for k, v in nodesim.status(maas_lab.cfg).get("hosts", {}).items() if k in mine}


def test_three_control_planes_two_workers(sim, play, store, tag, maas_lab):
    cname = f"c{tag[1:7]}"
    cp_tags, w_tags = [f"{tag}cp"], [f"{tag}w"]
    cpu = {"cpu_count": 4, "memory": 8192}
    s0, s1, s2 = sim.seed(*({"zone": z, "tags": cp_tags, **cpu} for z in ("az-1", "az-2", "az-3")), tag=tag)
    s3, s4 = sim.seed(*({"zone": z, "tags": w_tags, **cpu} for z in ("az-1", "az-2")), tag=tag)

    # --- the cluster: DNS name, record with TTL 10, endpoint --------------------------------------------------
    _create(store, objects.cluster(cname, NS, ["az-1", "az-2", "az-3"]))
    r = play("maas_cluster", {"name": cname})
    assert not r.get("failed"), r.get("msg") or r
    fqdn = r["dns_name"]
    assert re.fullmatch(rf"{cname}-[0-9a-f]{{6}}\.maas", fqdn), fqdn
    record = sim.dns(fqdn)
    assert len(record) == 1 and record[0]["address_ttl"] == 10 and record[0]["ip_addresses"] == []
    mc = store.get("MaasCluster", cname, NS)
    assert mc["spec"]["controlPlaneEndpoint"] == {"host": fqdn, "port": 6443}
    assert mc["status"]["failureDomains"] == [{"name": z, "controlPlane": True} for z in ("az-1", "az-2", "az-3")]
    cluster = store.get("Cluster", cname, NS)
    assert cluster["spec"]["controlPlaneEndpoint"] == {"host": fqdn, "port": 6443}
    assert cluster["status"]["initialization"]["infrastructureProvisioned"] is True
    assert r["api_server_available"] is False

    # --- bootstrap data and machines --------------------------------------------------------------------------
    endpoint = f"{fqdn}:6443"
    ca, etcd_ca, token = cabpk.new_cluster_ca(), cabpk.new_cluster_ca("etcd-ca"), cabpk.new_token()
    kubeconfig = objects.admin_kubeconfig(cname, f"{s0['ip']}:6443", ca)
    store.create(objects.secret(f"{cname}-kubeconfig", NS, cname, kubeconfig))
    data = {
        "cp-0": objects.init_data(cname, endpoint, ca, etcd_ca),
        "cp-1": objects.join_data(endpoint, ca, token, control_plane=True, etcd_ca=etcd_ca),
        "cp-2": objects.join_data(endpoint, ca, token, control_plane=True, etcd_ca=etcd_ca),
        "w-0": objects.join_data(endpoint, ca, token, control_plane=False),
        "w-1": objects.join_data(endpoint, ca, token, control_plane=False),
    }
    specs = {
        "cp-0": {"image": "ubuntu/jammy", "tags": [tag, *cp_tags], "systemID": s0["system_id"]},
        "cp-1": {"image": "ubuntu/jammy", "tags": [tag, *cp_tags], "failureDomain": "az-2"},
        "cp-2": {"image": "ubuntu/jammy", "tags": [tag, *cp_tags], "failureDomain": "az-3"},
        "w-0": {"image": "k8s-custom-image", "tags": [tag, *w_tags], "failureDomain": "az-1"},
        "w-1": {"image": "k8s-custom-image", "tags": [tag, *w_tags], "failureDomain": "az-2", "deployInMemory": True},
    }
    for name, text in data.items():
        store.create(objects.secret(f"{name}-bootstrap", NS, cname, text))
        _create(store, objects.machine(name, NS, cname, control_plane=name.startswith("cp"), spec=specs[name]))

    # --- check mode: which machine would be allocated; nothing is --------------------------------------------
    r = play("maas_machine", {"name": "cp-1"}, check=True)
    assert not r.get("failed") and r["changed"], r
    assert r["machines"][0]["would_allocate"]["system_id"] == s1["system_id"]
    assert sim.machine(s1["system_id"])["status_name"] == "Ready" and sim.machine(s1["system_id"])["owner"] is None
    assert "providerID" not in store.get("MaasMachine", "cp-1", NS)["spec"]

    # --- the first control plane: kubeadm init, the record holds it, its Node gets the providerID --------------
    r = play("maas_machine", {"name": "cp-0", "wait_timeout": 300})
    assert not r.get("failed"), (r.get("msg"), _hosts(maas_lab, sim, tag))
    m0 = sim.machine(s0["system_id"])
    assert (m0["status_name"], m0["power_state"], m0["osystem"], m0["distro_series"]) == (
        "Deployed",
        "on",
        "ubuntu",
        "jammy",
    )
    assert "kubeadm init" in m0["user_data"] and m0["user_data"] == data["cp-0"]
    assert sim.dns_ips(fqdn) == [s0["ip"]]
    objects.create_token(kubeconfig, token)

    # --- every machine of the cluster at once ----------------------------------------------------------------
    r = play("maas_machine", {"cluster": cname, "wait_timeout": 300})
    assert not r.get("failed"), (r.get("msg"), _hosts(maas_lab, sim, tag))
    assert sorted(m["name"] for m in r["machines"]) == ["cp-0", "cp-1", "cp-2", "w-0", "w-1"]
    sids = {name: _sid(store, name) for name in data}
    assert sids["cp-0"] == s0["system_id"]
    assert {sids["cp-1"], sids["cp-2"]} == {s1["system_id"], s2["system_id"]}
    assert {sids["w-0"], sids["w-1"]} == {s3["system_id"], s4["system_id"]}
    live = {name: sim.machine(sid) for name, sid in sids.items()}
    for name, m in live.items():
        assert (m["status_name"], m["power_state"], m["owner"]) == ("Deployed", "on", "admin"), (name, m)
        assert m["user_data"] == data[name]
        assert sim.get(f"machines/{m['system_id']}/")["swap_size"] == 0
    assert (live["w-0"]["osystem"], live["w-0"]["distro_series"]) == ("custom", "k8s-custom-image")
    assert live["w-1"]["ephemeral_deploy"] is True and live["w-0"]["ephemeral_deploy"] is False
    assert sim.dns_ips(fqdn) == sorted(live[n]["ip"] for n in ("cp-0", "cp-1", "cp-2"))
    nodes = objects.nodes(kubeconfig)
    for name, m in live.items():
        assert nodes[m["hostname"].lower()]["providerID"] == f"maas:///{m['zone']}/{m['system_id']}"
        machine = store.get("Machine", name, NS)
        assert machine["status"]["phase"] == "Running"
        assert machine["spec"]["providerID"] == f"maas:///{m['zone']}/{m['system_id']}"
        assert {"type": "InternalIP", "address": m["ip"]} in machine["status"]["addresses"]
        assert {"type": "ExternalIP", "address": m["ip"]} in machine["status"]["addresses"]
        mm = store.get("MaasMachine", name, NS)
        assert mm["status"]["ready"] is True and mm["status"]["machineState"] == "Deployed"
        assert mm["status"].get("dnsAttached") is (True if name.startswith("cp") else None)

    # --- re-run: no change, nothing happens in MAAS -------------------------------------------------------------
    r = play("maas_cluster", {"name": cname, "wait_for_api_server": True})
    assert not r.get("failed") and r["api_server_available"] is True, r
    assert objects.namespace_labels(kubeconfig, "kube-system")["cluster-api-maas/api-server-ready"] == "true"
    conds = {c["type"]: c for c in store.get("MaasCluster", cname, NS)["status"]["conditions"]}
    assert {t: conds[t]["status"] for t in ("LoadBalancerReady", "APIServerAvailable", "Ready")} == dict.fromkeys(
        ("LoadBalancerReady", "APIServerAvailable", "Ready"), "True"
    )
    histories = {sid: sim.machine(sid)["history"] for sid in sids.values()}
    r = play("maas_machine", {"cluster": cname})
    moved = [(m["name"], m.get("message")) for m in r["machines"] if m["changed"]]
    assert not r.get("failed") and r["changed"] is False, (moved, r["dns"], r.get("msg"))
    r = play("maas_cluster", {"name": cname, "wait_for_api_server": True})
    assert not r.get("failed") and r["changed"] is False, r
    assert {sid: sim.machine(sid)["history"] for sid in sids.values()} == histories
    assert sim.dns_ips(fqdn) == sorted(live[n]["ip"] for n in ("cp-0", "cp-1", "cp-2"))

    # --- a MAAS 503 is retried ------------------------------------------------------------------------------------
    path = f"machines/{sids['w-0']}/"
    sim.ctl("POST", "faults", {"status": 503, "count": 2, "method": "GET", "path": path})
    r = play("maas_machine_info", {"name": "w-0"})
    assert not r.get("failed"), r.get("msg") or r
    assert r["machines"][0]["maas"]["status_name"] == "Deployed"
    assert not [f for f in sim.ctl("GET", "faults") if f.get("path") == path], "the two 503s were not all answered"

    # --- removing a control plane: the record is updated before the release ------------------------------------
    cp2 = sids["cp-2"]
    r = play("maas_machine", {"name": "cp-2", "state": "absent"}, check=True)
    assert not r.get("failed") and r["changed"] and cp2 in r["machines"][0]["message"], r
    assert sim.dns_ips(fqdn) == sorted(live[n]["ip"] for n in ("cp-0", "cp-1", "cp-2"))
    assert sim.machine(cp2)["status_name"] == "Deployed"
    assert not store.get("MaasMachine", "cp-2", NS)["metadata"].get("deletionTimestamp")
    # every attempt of the first release answers 503 (1 + 5 retries), so that step stops between the two
    sim.ctl("POST", "faults", {"status": 503, "count": 6, "method": "POST", "path": f"machines/{cp2}/"})
    r = play("maas_machine", {"name": "cp-2", "state": "absent", "wait": False})
    assert not r.get("failed"), r.get("msg") or r
    assert sim.dns_ips(fqdn) == sorted(live[n]["ip"] for n in ("cp-0", "cp-1"))
    assert (sim.machine(cp2)["status_name"], sim.machine(cp2)["owner"]) == ("Deployed", "admin")
    r = play("maas_machine", {"name": "cp-2", "state": "absent", "wait_timeout": 300})
    assert not r.get("failed"), r.get("msg") or r
    assert sim.machine(cp2)["owner"] is None and sim.machine(cp2)["status_name"] in ("Releasing", "Ready")
    assert "Releasing" in [h[2] for h in sim.machine(cp2)["history"]]
    assert live["cp-2"]["hostname"].lower() not in objects.nodes(kubeconfig)
    assert "cp-2" not in {m["metadata"]["name"] for m in store.list("Machine", NS)}
    assert "cp-2" not in {m["metadata"]["name"] for m in store.list("MaasMachine", NS)}
    assert sim.dns_ips(fqdn) == sorted(live[n]["ip"] for n in ("cp-0", "cp-1"))

    # --- a deploy ending in Failed deployment: released, forgotten, replaced on the next run ---------------------
    x, y = sim.seed(
        {"tags": w_tags, "cpu_count": 16, "memory": 32768}, {"tags": w_tags, "cpu_count": 2, "memory": 4096}, tag=tag
    )
    sim.ctl("POST", f"machines/{x['system_id']}/fault", {"fault": "deploy_fails"})
    store.create(
        objects.secret("w-2-bootstrap", NS, cname, objects.join_data(endpoint, ca, token, control_plane=False))
    )
    spec = {"image": "k8s-custom-image", "tags": [tag, *w_tags], "systemID": x["system_id"]}
    _create(store, objects.machine("w-2", NS, cname, control_plane=False, spec=spec))
    r = play("maas_machine", {"name": "w-2"})
    assert r.get("failed"), r
    assert "Failed deployment" in r["msg"] and "the next run allocates another" in r["msg"], r["msg"]
    eventually(lambda: sim.machine(x["system_id"])["status_name"] == "Ready", "the failed machine released")
    assert sim.machine(x["system_id"])["owner"] is None
    assert "Failed deployment" in [h[2] for h in sim.machine(x["system_id"])["history"]]
    assert "providerID" not in store.get("MaasMachine", "w-2", NS)["spec"]
    r = play("maas_machine", {"name": "w-2", "wait_timeout": 300})
    assert not r.get("failed"), r.get("msg") or r
    assert _sid(store, "w-2") == y["system_id"]
    my = sim.machine(y["system_id"])
    assert (my["status_name"], my["power_state"]) == ("Deployed", "on")
    assert objects.nodes(kubeconfig)[my["hostname"].lower()]["providerID"] == f"maas:///{my['zone']}/{my['system_id']}"

    # --- deleting the cluster releases every machine and removes the record --------------------------------------
    r = play("maas_cluster", {"name": cname, "state": "absent", "wait_timeout": 300})
    assert not r.get("failed"), r.get("msg") or r
    for m in sim.tagged(tag):
        assert m["owner"] is None and m["status_name"] in ("Releasing", "Ready"), m
    assert sim.dns(fqdn) == []
    for kind in ("Cluster", "MaasCluster", "Machine", "MaasMachine"):
        assert store.list(kind, NS) == [], kind
