"""maas_dns against the simulator: check mode, the running control-plane set, the never-empty guard, subnets."""

from __future__ import annotations

import copy

from tests.integration.maas import objects
from tests.integration.net import LOOP

NS = "default"


def _cp(store, cname, name, ip, powered=True, state="Deployed"):
    obj = {
        "apiVersion": f"{objects.INFRA}/v1beta1",
        "kind": "MaasMachine",
        "metadata": {
            "name": name,
            "namespace": NS,
            "labels": {"cluster.x-k8s.io/cluster-name": cname, "cluster.x-k8s.io/control-plane": ""},
        },
        "spec": {"image": "ubuntu/jammy", "minCPU": 1, "minMemory": 1024},
    }
    created = store.create(obj)
    return _set(store, created, powered=powered, state=state, ip=ip)


def _set(store, obj, *, powered, state, ip):
    """The status the machine flow writes from MAAS (machineState, machinePowered, addresses)."""
    obj = copy.deepcopy(store.get("MaasMachine", obj["metadata"]["name"], NS))
    obj["status"] = {
        "machineState": state,
        "machinePowered": powered,
        "addresses": [{"type": "ExternalIP", "address": ip}, {"type": "InternalIP", "address": ip}],
    }
    return store.update_status(obj)


def test_dns_record_follows_running_control_planes_and_is_never_emptied(sim, play_maas, store, tag):
    play = play_maas
    cname = f"d{tag[1:7]}"
    for obj in objects.cluster(cname, NS, ["az-1"]):
        store.create(obj)
    r = play("maas_cluster", {"name": cname}, check=True)  # would make the record; makes nothing
    assert not r.get("failed") and r["changed"] and r["dns"]["created"], r
    assert sim.dns(r["dns_name"]) == [] and "status" not in store.get("MaasCluster", cname, NS)
    r = play("maas_cluster", {"name": cname})
    assert not r.get("failed"), r
    fqdn = r["dns_name"]
    ips = [f"{LOOP}.9.3", f"{LOOP}.9.1", f"{LOOP}.9.2"]
    cps = [_cp(store, cname, f"cp-{i}", ip) for i, ip in enumerate(ips)]
    worker = _cp(store, cname, "w-0", f"{LOOP}.9.50")
    worker["metadata"]["labels"].pop("cluster.x-k8s.io/control-plane")
    store.update(worker)

    # check mode: what the record would become; nothing written
    r = play("maas_dns", {"cluster": cname}, check=True)
    assert not r.get("failed") and r["changed"], r
    assert (r["previous_ip_addresses"], r["ip_addresses"]) == ([], sorted(ips))
    assert sim.dns_ips(fqdn) == []

    r = play("maas_dns", {"cluster": cname})
    assert not r.get("failed") and r["changed"], r
    assert sim.dns_ips(fqdn) == sorted(ips)  # sorted, the worker left out
    r = play("maas_dns", {"cluster": cname})
    assert r["changed"] is False, r

    # one control plane off: it leaves the record
    _set(store, cps[0], powered=False, state="Deployed", ip=ips[0])
    r = play("maas_dns", {"cluster": cname})
    assert r["changed"] and sim.dns_ips(fqdn) == [f"{LOOP}.9.1", f"{LOOP}.9.2"], r
    # all of them off (PCP-6608): the record keeps what it has
    for cp, ip in zip(cps[1:], ips[1:], strict=True):
        _set(store, cp, powered=False, state="Deployed", ip=ip)
    r = play("maas_dns", {"cluster": cname})
    assert not r.get("failed") and r["changed"] is False and "kept" in r["message"], r
    assert sim.dns_ips(fqdn) == [f"{LOOP}.9.1", f"{LOOP}.9.2"]

    # back on, with a preferred subnet that holds one of them
    for cp, ip in zip(cps, ips, strict=True):
        _set(store, cp, powered=True, state="Deployed", ip=ip)
    r = play("maas_dns", {"cluster": cname, "preferred_subnets": [f"{LOOP}.9.2/32"]})
    assert r["changed"] and sim.dns_ips(fqdn) == [f"{LOOP}.9.2"], r

    # the cluster goes: the MaasMachines first, then the record with it
    for name in ("cp-0", "cp-1", "cp-2", "w-0"):
        store.delete("MaasMachine", name, NS)
    r = play("maas_cluster", {"name": cname, "state": "absent"})
    assert not r.get("failed"), r
    assert sim.dns(fqdn) == []
