"""The endpoints real clients read, through python-libmaas 0.6.8's viscera objects (and raw OAuth where it
has none: ipaddresses/)."""

from __future__ import annotations

import pytest
from maas.client.bones import CallError
from maas.client.enum import InterfaceType, LinkMode

from tests.integration.net import LOOP

SSH_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGJ1cnN0IG9mIGJpdHMgZm9yIGEgbGFiIGtleQ lab@test"


def test_fabrics_vlans_subnets_spaces(client):
    fabrics = client.fabrics.list()
    assert [f.name for f in fabrics] == ["fabric-0"]
    vlan = fabrics[0].vlans[0]
    assert (vlan.vid, vlan.mtu, vlan.dhcp_on, vlan.fabric.id) == (0, 1500, True, 0)
    assert client._origin.session.Vlan.read(fabric_id=0, vid=0)["id"] == vlan.id
    subnet = client.subnets.list()[0]
    assert (subnet.cidr, subnet.gateway_ip, subnet.managed, subnet.vlan.id) == (f"{LOOP}.2.0/24", f"{LOOP}.2.254", True,
                                                                              vlan.id)  # fmt: skip
    assert client.subnets.get(subnet.id).cidr == f"{LOOP}.2.0/24"
    spaces = client.spaces.list()
    assert [(s.id, s.name) for s in spaces] == [(-1, "undefined")]


def test_machine_interfaces_block_devices_and_create_bridge(client, sim, tag):
    m = sim.seed({}, tag=tag)[0]
    machine = client.machines.get(m["system_id"])
    (eth0,) = machine.interfaces
    assert (eth0.name, eth0.type, eth0.mac_address) == ("eth0", InterfaceType.PHYSICAL, m["mac_address"])
    assert eth0.links[0].mode == LinkMode.AUTO and eth0.links[0].subnet.cidr == f"{LOOP}.2.0/24"
    (disk,) = machine.block_devices
    assert (disk.name, disk.size, disk.block_size) == ("sda", 64_000_000_000, 512)
    # CAPMAAS's HCP path: POST nodes/{id}/interfaces/ op=create_bridge name=br0 parent=<boot interface id>
    bridge = machine.interfaces.create(InterfaceType.BRIDGE, name="br0", parent=eth0)
    assert (bridge.name, bridge.type, [p.name for p in bridge.parents]) == ("br0", InterfaceType.BRIDGE, ["eth0"])
    machine.refresh()
    by_name = {i.name: i for i in machine.interfaces}
    assert set(by_name) == {"eth0", "br0"}
    assert len(by_name["br0"].links) == 1 and len(by_name["eth0"].links) == 0  # the links moved to the bridge
    session = client._origin.session
    with pytest.raises(CallError) as err:
        session.Interfaces.create_bridge(system_id=m["system_id"], name="br1", parent=str(eth0.id))
    assert err.value.status == 400
    # not while deployed
    other = sim.seed({"status": "Deployed", "power_state": "on"}, tag=tag)[0]
    other_eth0 = session.Interfaces.read(system_id=other["system_id"])[0]
    with pytest.raises(CallError) as err:
        session.Interfaces.create_bridge(system_id=other["system_id"], name="br0", parent=str(other_eth0["id"]))
    assert err.value.status == 409 and b"not Ready, Allocated, or Broken" in err.value.content


def test_machine_with_two_nics_on_two_subnets(client, sim, tag):
    """A multi-NIC machine as MAAS 3.5 lists it (CAPMAAS's apiServerInterfaceName reads it): eno1 PXE on the lab
    subnet, eno2 AUTO on another subnet, its address claimed when deployment starts; python-libmaas parses it."""
    cidr = f"{LOOP}.31.0/24"
    m = sim.seed({"interface_name": "eno1", "nics": [{"name": "eno2", "cidr": cidr}]}, tag=tag)[0]
    machine = client.machines.get(m["system_id"])
    eno1, eno2 = machine.interfaces
    assert (eno1.name, eno2.name, eno2.type) == ("eno1", "eno2", InterfaceType.PHYSICAL)
    assert eno1.mac_address == m["mac_address"] and eno2.mac_address != eno1.mac_address
    assert eno1.links[0].subnet.cidr == f"{LOOP}.2.0/24"
    assert (eno2.links[0].mode, eno2.links[0].subnet.cidr, eno2.links[0].ip_address) == (LinkMode.AUTO, cidr, None)
    assert machine.ip_addresses == []  # Ready: no AUTO address claimed yet
    subnet = client.subnets.get(eno2.links[0].subnet.id)
    assert (subnet.cidr, subnet.vlan.id) == (cidr, eno1.vlan.id)
    assert cidr in {s.cidr for s in client.subnets.list()}
    assert cidr in {s["cidr"] for s in client._origin.session.Space.read(id=-1)["subnets"]}  # no space of its own

    machine = client.machines.allocate(tags=[tag]).deploy(user_data=b"#cloud-config\n")
    machine.refresh()
    eno2_ip = sim.state(m["system_id"])["interfaces"][1]["links"][0]["ip_address"]
    assert eno2_ip.startswith(f"{LOOP}.31.")
    assert machine.ip_addresses == [m["ip"], eno2_ip]  # the boot interface's first
    by_name = {i.name: i for i in client.machines.get(m["system_id"]).interfaces}
    assert by_name["eno2"].links[0].ip_address == eno2_ip
    used = sim.call("GET", f"subnets/{subnet.id}/", params={"op": "ip_addresses"}).json()
    # this machine's (an earlier run on the same simulator may have left others on the subnet)
    assert [u["ip"] for u in used if u.get("node_summary", {}).get("system_id") == m["system_id"]] == [eno2_ip]
    mine = {a["ip"]: a for a in sim.call("GET", "ipaddresses/").json()}
    assert (mine[eno2_ip]["subnet"]["cidr"], mine[eno2_ip]["interface_set"][0]["name"]) == (cidr, "eno2")
    assert (mine[m["ip"]]["subnet"]["cidr"], mine[m["ip"]]["interface_set"][0]["name"]) == (f"{LOOP}.2.0/24", "eno1")
    # an interface name the machine already has is refused by the control API
    assert (
        sim.http.post(
            sim.control + "machines",
            json={"machines": [{"interface_name": "eno1", "nics": [{"name": "eno1", "cidr": cidr}]}]},
            timeout=30,
        ).status_code
        == 400
    )


def test_boot_resources_sources_rack_controllers(client):
    names = {r.name for r in client.boot_resources.list()}
    assert {"ubuntu/jammy", "ubuntu/noble"} <= names
    (source,) = client.boot_sources.list()
    assert source.url == "http://images.maas.io/ephemeral-v3/stable/"
    # the selections the synced images came from (python-libmaas's BootSourceSelections objects)
    origin = client._origin
    chosen = origin.BootSourceSelections.read(source)
    assert {(x.os, x.release) for x in chosen} >= {("ubuntu", "jammy"), ("ubuntu", "noble")}
    first = origin.BootSourceSelection.read(source, chosen[0].id)
    assert (first.release, list(first.arches), first.boot_source.id) == (chosen[0].release, ["amd64"], source.id)
    with pytest.raises(CallError) as err:
        origin.BootSourceSelection.read(source, 999)
    assert err.value.status == 404 and err.value.content == b"No BootSourceSelection matches the given query."
    (rack,) = client.rack_controllers.list()
    assert rack.hostname == "maas-rack"
    # the one host is region and rack (node_type 4), as a snap-installed MAAS: both handlers list it
    (region,) = client.region_controllers.list()
    assert (region.system_id, region.hostname) == (rack.system_id, "maas-rack")
    assert client.region_controllers.get(rack.system_id).fqdn == rack.fqdn
    with pytest.raises(CallError) as err:
        client._origin.session.RegionController.read(system_id="nosuch")
    assert err.value.status == 404


def test_events_ssh_keys_devices(client, sim, tag):
    m = sim.seed({}, tag=tag)[0]
    client.machines.allocate(tags=[tag]).deploy(user_data=b"#cloud-config\n")
    events = client.events.query(hostnames=[m["hostname"]])
    assert [e.hostname for e in events] and {e.hostname for e in events} == {m["hostname"]}
    assert "Deploying" in {e.event_type for e in events}
    key = client.ssh_keys.create(SSH_KEY)
    try:
        assert SSH_KEY in [k.key for k in client.ssh_keys.list()]
        with pytest.raises(CallError) as err:
            client.ssh_keys.create("not a key")
        assert err.value.status == 400
    finally:
        client._origin.session.SSHKey.delete(id=key.id)  # python-libmaas's SSHKey has no delete()
    assert SSH_KEY not in [k.key for k in client.ssh_keys.list()]
    session = client._origin.session
    dev = session.Devices.create(hostname=f"d{tag[1:8]}", mac_addresses=["52:54:00:aa:bb:01"])
    try:
        assert dev["node_type_name"] == "Device"
        assert dev["hostname"] in {d.hostname for d in client.devices.list()}
        bad = sim.call("POST", "devices/", data={"mac_addresses": "zz"})
        assert bad.status_code == 400 and "mac_addresses" in bad.json()
    finally:
        session.Device.delete(system_id=dev["system_id"])


def test_ipaddresses_reserve_and_list(sim, tag):
    m = sim.seed({}, tag=tag)[0]
    sim.call("POST", f"machines/{m['system_id']}/", params={"op": "deploy"})
    mine = sim.call("GET", "ipaddresses/").json()
    assert m["ip"] in {a["ip"] for a in mine}
    reserved = sim.call("POST", "ipaddresses/", params={"op": "reserve"}, data={"ip": f"{LOOP}.2.200"})
    assert (reserved.status_code, reserved.json()["alloc_type_name"]) == (200, "User reserved"), reserved.text
    try:
        again = sim.call("POST", "ipaddresses/", params={"op": "reserve"}, data={"ip": f"{LOOP}.2.200"})
        assert again.status_code == 400 and "already in use" in again.text
        outside = sim.call("POST", "ipaddresses/", params={"op": "reserve"}, data={"ip": "10.9.9.9"})
        assert outside.status_code == 400
        used = sim.call("GET", "subnets/1/", params={"op": "ip_addresses"}).json()
        assert {f"{LOOP}.2.200", m["ip"]} <= {a["ip"] for a in used}
    finally:
        assert sim.call("POST", "ipaddresses/", params={"op": "release"}, data={"ip": f"{LOOP}.2.200"}).ok


def test_static_ip_on_the_boot_interface(client, sim, tag):
    """What CAPMAAS spectro-master does for staticIP: unlink the AUTO link, link STATIC with the address."""
    m, other = sim.seed({}, {}, tag=tag)
    machine = client.machines.get(m["system_id"])
    eth0 = machine.boot_interface
    eth0.links[0].delete()
    assert len(client.machines.get(m["system_id"]).boot_interface.links) == 0
    session = client._origin.session
    with pytest.raises(CallError) as err:  # another machine's address
        session.Interface.link_subnet(system_id=m["system_id"], id=eth0.id, mode="STATIC", subnet="1",
                                      ip_address=other["ip"])  # fmt: skip
    assert err.value.status == 400 and b"already in use" in err.value.content
    with pytest.raises(CallError) as err:
        session.Interface.link_subnet(system_id=m["system_id"], id=eth0.id, mode="STATIC", subnet="1",
                                      ip_address="10.1.2.3")  # fmt: skip
    assert err.value.status == 400 and b"not in the given subnet" in err.value.content
    eth0 = client.machines.get(m["system_id"]).boot_interface
    # an address no machine holds (the simulator is shared with the rest of the run, runs before this one too)
    taken = {x["ip"] for x in sim.ctl("GET", "machines")} | {ip for x in sim.ctl("GET", "machines")
                                                              for ip in x["ip_addresses"]}  # fmt: skip
    static = next(f"{LOOP}.2.{n}" for n in range(240, 200, -1) if f"{LOOP}.2.{n}" not in taken)
    link = eth0.links.create(LinkMode.STATIC, subnet=client.subnets.get(1), ip_address=static)
    assert (link.mode, link.ip_address) == (LinkMode.STATIC, static)
    machine = client.machines.get(m["system_id"])
    assert machine.ip_addresses == [static]  # a sticky address shows before deployment too
    machine.deploy()
    assert sim.state(m["system_id"])["ip"] == static
