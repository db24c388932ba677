"""CAPMAAS spectro-master's ``spec.staticIP`` through the machine flow, against the simulator alone.

maas_machine (one round, ``wait: false``) gives the boot interface its static address before deploying: the
AUTO link unlinked, one STATIC link on the subnet, the machine deployed holding it (in memory, as
``spec.deployInMemory`` asks); a re-run changes no link.
An address MAAS refuses (another machine holds it) fails the deploy with MAAS's text, and the machine is
released for the next run; a staticIP outside its cidr is refused before any machine is taken.
"""

from __future__ import annotations

from tests.integration.maas import objects
from tests.integration.net import LOOP
from tests.integration.nodesim import cabpk

NS = "default"


def _links(sim, system_id: str) -> list[dict]:
    (iface,) = sim.get(f"nodes/{system_id}/interfaces/")
    return iface["links"]


def test_static_ip_on_the_boot_interface(sim, play_maas, store, tag):
    play = play_maas
    cname = f"s{tag[1:7]}"
    a, b, other = sim.seed({"tags": [f"{tag}a"]}, {"tags": [f"{tag}b"]}, {}, tag=tag)
    for obj in objects.cluster(cname, NS, []):
        store.create(obj)
    r = play("maas_cluster", {"name": cname})
    assert not r.get("failed"), r.get("msg") or r
    ca, token = cabpk.new_cluster_ca(), cabpk.new_token()
    endpoint = f"{r['dns_name']}:6443"
    taken = {m["ip"] for m in sim.ctl("GET", "machines")} | {ip for m in sim.ctl("GET", "machines")
                                                              for ip in m["ip_addresses"]}  # fmt: skip
    static_ip = next(f"{LOOP}.2.{n}" for n in range(200, 250) if f"{LOOP}.2.{n}" not in taken)
    cidr = f"{LOOP}.2.0/24"
    specs = {
        "w-a": {
            "image": "ubuntu/jammy",
            "tags": [tag, f"{tag}a"],
            "staticIP": {"ip": static_ip, "cidr": cidr},
            "deployInMemory": True,
        },
        "w-b": {"image": "ubuntu/jammy", "tags": [tag, f"{tag}b"], "staticIP": {"ip": other["ip"], "cidr": cidr}},
        "w-c": {"image": "ubuntu/jammy", "tags": [tag, f"{tag}b"], "staticIP": {"ip": "10.9.9.9", "cidr": cidr}},
    }
    data = objects.join_data(endpoint, ca, token, control_plane=False)
    for name, spec in specs.items():
        store.create(objects.secret(f"{name}-bootstrap", NS, cname, data))
        for obj in objects.machine(name, NS, cname, control_plane=False, spec=spec):
            store.create(obj)

    for _ in range(4):  # one round allocates, the next deploys
        r = play("maas_machine", {"name": "w-a", "wait": False})
        assert not r.get("failed"), r.get("msg") or r
        state = sim.machine(a["system_id"])
        if state["status_name"] != "Allocated":
            break
    assert state["status_name"] in ("Deploying", "Deployed") and state["ip"] == static_ip, state
    assert state["ephemeral_deploy"] is True  # spec.deployInMemory: MAAS's ephemeral_deploy
    (link,) = _links(sim, a["system_id"])
    assert (link["mode"], link["ip_address"]) == ("static", static_ip)
    link_id = link["id"]
    r = play("maas_machine", {"name": "w-a", "wait": False})
    assert not r.get("failed"), r.get("msg") or r
    assert [ln["id"] for ln in _links(sim, a["system_id"])] == [link_id]  # the same link: nothing relinked

    # another machine's address: MAAS refuses the link; the deploy fails and the machine goes back to the pool
    for _ in range(4):
        r = play("maas_machine", {"name": "w-b", "wait": False})
        if r.get("failed"):
            break
    assert r.get("failed"), r
    assert "already in use" in r["msg"] and b["hostname"] in r["msg"], r["msg"]
    assert sim.machine(b["system_id"])["owner"] is None
    assert not store.get("MaasMachine", "w-b", NS)["spec"].get("providerID")

    # outside its own cidr: refused before any machine is taken (b is free again and matches w-c's tags)
    r = play("maas_machine", {"name": "w-c", "wait": False})
    assert r.get("failed") and "spec.staticIP.ip" in r["msg"], r
    assert sim.machine(b["system_id"])["status_name"] == "Ready"
