"""CAPMAAS's API-server interface on multi-NIC control planes (``spec.apiServerInterfaceName``), against the
simulator: eno1 PXE on the lab subnet, eno2 on another; the API record holds the eno2 addresses, read from
MAAS's interfaces endpoint, and a wrong name fails with upstream's message naming the machine."""

from __future__ import annotations

import copy

from tests.integration.maas import objects
from tests.integration.net import LOOP

NS = "default"


def _control_plane(store, cname: str, name: str, m: dict) -> dict:
    """A MaasMachine with what the machine flow writes once its MAAS machine is Deployed and on."""
    created = store.create(
        {
            "apiVersion": f"{objects.INFRA}/v1beta1",
            "kind": "MaasMachine",
            "metadata": {
                "name": name,
                "namespace": NS,
                "labels": {"cluster.x-k8s.io/cluster-name": cname, "cluster.x-k8s.io/control-plane": ""},
            },
            "spec": {
                "image": "ubuntu/jammy",
                "minCPU": 1,
                "minMemory": 1024,
                "systemID": m["system_id"],
                "providerID": f"maas:///{m['zone']}/{m['system_id']}",
            },
        }
    )
    obj = copy.deepcopy(created)
    addresses = [{"type": "ExternalDNS", "address": m["fqdn"]}]
    for ip in m["ip_addresses"]:  # every interface's, the boot one's first (state.addresses)
        addresses += [{"type": "ExternalIP", "address": ip}, {"type": "InternalIP", "address": ip}]
    obj["status"] = {"machineState": "Deployed", "machinePowered": True, "addresses": addresses}
    return store.update_status(obj)


def _set_interface(store, cname: str, value: str | None) -> None:
    mc = copy.deepcopy(store.get("MaasCluster", cname, NS))
    if value is None:
        mc["spec"].pop("apiServerInterfaceName", None)
    else:
        mc["spec"]["apiServerInterfaceName"] = value
    mc.pop("status", None)
    store.update(mc)


def _network(store, cname: str) -> dict:
    return store.get("MaasCluster", cname, NS)["status"]["network"]


def test_control_planes_publish_their_eno2_addresses(sim, play_maas, store, tag):
    play = play_maas
    cname = f"i{tag[1:7]}"
    api_cidr = f"{LOOP}.32.0/24"
    seeded = sim.seed(
        *[
            {
                "interface_name": "eno1",
                "nics": [{"name": "eno2", "cidr": api_cidr}],
                "status": "Deployed",
                "power_state": "on",
            }  # fmt: skip
            for _ in range(3)
        ],
        tag=tag,
    )
    by_name = {i["name"]: i for m in seeded for i in m["interfaces"]}
    assert set(by_name) == {"eno1", "eno2"}
    pxe = sorted(m["ip"] for m in seeded)
    api = sorted(m["interfaces"][1]["links"][0]["ip_address"] for m in seeded)
    assert all(ip.startswith(f"{LOOP}.32.") for ip in api) and all(ip.startswith(f"{LOOP}.2.") for ip in pxe)

    for obj in objects.cluster(cname, NS, []):
        if obj["kind"] == "MaasCluster":
            obj["spec"]["apiServerInterfaceName"] = "eno2"
        store.create(obj)
    cps = [_control_plane(store, cname, f"{cname}-cp-{n}", m) for n, m in enumerate(seeded)]

    # check mode: the record would be made; nothing is
    r = play("maas_cluster", {"name": cname}, check=True)
    assert not r.get("failed") and r["changed"], r
    assert "status" not in store.get("MaasCluster", cname, NS)

    r = play("maas_cluster", {"name": cname})
    assert not r.get("failed"), r
    fqdn = r["dns_name"]
    assert sim.dns_ips(fqdn) == api  # eno2's, not the PXE addresses
    assert _network(store, cname)["publishedInterfaceName"] == "eno2"
    r = play("maas_cluster", {"name": cname})
    assert not r.get("failed") and r["changed"] is False, r
    r = play("maas_dns", {"cluster": cname})
    assert not r.get("failed") and r["changed"] is False and r["published_interface"] == "eno2", r
    assert sorted(r["ip_addresses"]) == api

    # a name no machine has: upstream's error naming the machine, the record left as it was
    _set_interface(store, cname, "eno9")
    for module, args in (("maas_dns", {"cluster": cname}), ("maas_cluster", {"name": cname})):
        r = play(module, args)
        assert r.get("failed"), r
        assert (
            f"MaasCluster {NS}/{cname}: spec.apiServerInterfaceName: unable to select API server IP for machine"
            in (r["msg"])
        ), r
        named = [(mm["metadata"]["name"], mm["spec"]["systemID"]) for mm in cps]
        assert any(
            f'for machine "{n}": interface "eno9" not found for machine "{sid}"' in r["msg"] for n, sid in named
        ), r
        assert "Unknown error" not in r["msg"]
    assert sim.dns_ips(fqdn) == api

    # the name of an interface without an address (eno2 before deployment claims it: a fresh machine's link)
    _set_interface(store, cname, "eno2")
    sim.ctl("POST", f"machines/{seeded[0]['system_id']}", {"status": "Allocated"})
    r = play("maas_dns", {"cluster": cname})
    assert r.get("failed") and f'no IP found on interface "eno2" for machine "{seeded[0]["system_id"]}"' in r["msg"], r
    sim.ctl("POST", f"machines/{seeded[0]['system_id']}", {"status": "Deployed"})

    # back to the legacy rule: each machine's first address, and no published interface
    _set_interface(store, cname, None)
    r = play("maas_dns", {"cluster": cname})
    assert not r.get("failed") and r["changed"] and r["published_interface"] == "", r
    assert sim.dns_ips(fqdn) == pxe
    assert "publishedInterfaceName" not in _network(store, cname)

    for mm in cps:
        store.delete("MaasMachine", mm["metadata"]["name"], NS)
    r = play("maas_cluster", {"name": cname, "state": "absent"})
    assert not r.get("failed"), r
    assert sim.dns(fqdn) == []
