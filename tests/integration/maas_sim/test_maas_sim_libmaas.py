"""The MAAS simulator driven through python-libmaas 0.6.8, as the collection drives MAAS."""

from __future__ import annotations

import asyncio
import base64
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from maas.client import connect, login
from maas.client.bones import CallError
from maas.client.enum import NodeStatus, PowerState
from maas.client.viscera.machines import FailedDeployment, MachineNotFound

from tests.integration.net import LOOP

USER_DATA = b"#cloud-config\nruncmd:\n  - kubeadm join 127.0.0.1:6443 --token abc.def\n"


def test_connect_reads_version_user_and_inventory(client, sim, tag):
    seeded = sim.seed({"zone": "az-2", "pool": "compute"}, tag=tag)[0]
    assert "authenticate-api" in client.version.get().capabilities
    assert client.users.whoami().username == "admin"
    machines = {m.system_id: m for m in client.machines.list()}
    m = machines[seeded["system_id"]]
    assert (m.hostname, m.zone.name, m.pool.name, m.status) == (seeded["hostname"], "az-2", "compute", NodeStatus.READY)
    assert m.power_state == PowerState.OFF
    assert tag in [t.name for t in m.tags]
    assert {"default", "az-1", "az-2", "az-3"} <= {z.name for z in client.zones.list()}
    assert {"default", "compute"} <= {p.name for p in client.resource_pools.list()}
    assert "maas" in [d.name for d in client.domains.list()]


def test_allocate_with_constraints_deploy_and_release(client, sim, tag):
    small, big, other_zone = sim.seed(
        {"zone": "az-1", "cpu_count": 2, "memory": 4096},
        {"zone": "az-1", "cpu_count": 8, "memory": 16384},
        {"zone": "az-3", "cpu_count": 16, "memory": 32768},
        tag=tag,
    )
    m = client.machines.allocate(tags=[tag], cpus=4, memory=8000, zone="az-1")
    assert m.system_id == big["system_id"]
    assert (m.status, m.owner.username) == (NodeStatus.ALLOCATED, "admin")

    m = m.deploy(user_data=USER_DATA, distro_series="jammy", wait=True, wait_interval=0.1)
    assert m.status == NodeStatus.DEPLOYED
    assert (m.osystem, m.distro_series) == ("ubuntu", "jammy")
    assert m.ip_addresses == [big["ip"]]
    state = sim.state(big["system_id"])
    assert state["user_data"] == USER_DATA.decode()  # base64 over the wire, twice: decoded once each
    assert state["power_state"] == "on"

    m = m.release(comment="done", wait=True, wait_interval=0.1)
    assert m.status == NodeStatus.READY
    m.refresh()
    assert m.owner is None and m.ip_addresses == []
    state = sim.state(big["system_id"])
    assert (state["user_data"], state["power_state"], state["osystem"]) == (None, "off", "")
    # the others were never touched
    assert {sim.state(x["system_id"])["status_name"] for x in (small, other_zone)} == {"Ready"}


def test_allocate_no_match_is_machine_not_found(client, sim, tag):
    sim.seed({"cpu_count": 4}, tag=tag)
    with pytest.raises(MachineNotFound):
        client.machines.allocate(tags=[tag], cpus=64)
    # python-libmaas sends not_zones as not_in_zones, which MAAS does not know
    with pytest.raises(CallError) as err:
        client.machines.allocate(tags=[tag], not_zones=["az-1"])
    assert err.value.status == 400
    assert err.value.content == b'{"not_in_zones": ["No such constraint."]}'


def test_capmaas_sequence_through_bones(client, sim, tag):
    """Allocate with pool, swap off, deploy with osystem/ephemeral_deploy: what CAPMAAS sends."""
    target = sim.seed({"pool": "compute", "zone": "az-2"}, tag=tag)[0]
    sim.seed({"pool": "default", "zone": "az-2"}, tag=tag)
    session = client._origin.session
    allocated = session.Machines.allocate(pool="compute", tags=[tag], zone="az-2", cpu_count="1", mem="1024")
    assert allocated["system_id"] == target["system_id"]
    assert session.Machine.update(system_id=target["system_id"], swap_size="0")["swap_size"] == 0
    user_data = base64.b64encode(USER_DATA).decode()
    deployed = session.Machine.deploy(
        system_id=target["system_id"],
        osystem="custom",
        distro_series="rocky-9-k8s",
        user_data=user_data,
        ephemeral_deploy="true",
    )
    assert (deployed["status_name"], deployed["osystem"], deployed["distro_series"]) == (
        "Deploying",
        "custom",
        "rocky-9-k8s",
    )
    assert deployed["ephemeral_deploy"] is True
    assert sim.wait_status(target["system_id"], "Deployed")["status_name"] == "Deployed"
    read = session.Machine.read(system_id=target["system_id"])
    assert (read["status"], read["power_state"], read["ip_addresses"]) == (6, "on", [target["ip"]])
    assert read["fqdn"] == f"{target['hostname']}.maas"
    assert sim.state(target["system_id"])["user_data"] == USER_DATA.decode()
    released = session.Machine.release(system_id=target["system_id"], erase="true", quick_erase="true")
    assert released["status_name"] == "Disk erasing"
    assert sim.wait_status(target["system_id"], "Ready")["status_name"] == "Ready"


def test_dns_resource_create_update_delete_through_bones(client, sim):
    session = client._origin.session
    fqdn = f"api-{time.monotonic_ns()}.maas"
    created = session.DNSResources.create(fqdn=fqdn, address_ttl="10", ip_addresses="")
    assert (created["fqdn"], created["address_ttl"], created["ip_addresses"]) == (fqdn, 10, [])
    found = session.DNSResources.read(fqdn=fqdn)
    assert [r["id"] for r in found] == [created["id"]]
    updated = session.DNSResource.update(id=created["id"], ip_addresses=f"{LOOP}.2.1 {LOOP}.2.2")
    assert [a["ip"] for a in updated["ip_addresses"]] == [f"{LOOP}.2.1", f"{LOOP}.2.2"]
    assert session.DNSResource.read(id=created["id"])["ip_addresses"] == updated["ip_addresses"]
    assert session.DNSResource.delete(id=created["id"]) == b""
    assert session.DNSResources.read(fqdn=fqdn) == []
    with pytest.raises(CallError) as err:
        session.DNSResource.read(id=created["id"])
    assert err.value.status == 404


def test_failed_deployment_fault(client, sim, tag):
    target = sim.seed({}, tag=tag)[0]
    sim.ctl("POST", f"machines/{target['system_id']}/fault", {"fault": "deploy_fails"})
    m = client.machines.allocate(tags=[tag])
    with pytest.raises(FailedDeployment):
        m.deploy(user_data=USER_DATA, wait=True, wait_interval=0.1)
    m.refresh()
    assert (m.status, m.status_name) == (NodeStatus.FAILED_DEPLOYMENT, "Failed deployment")
    with pytest.raises(CallError) as err:
        m.deploy()
    assert (err.value.status, err.value.content) == (
        409,
        b"Can't deploy a machine that is in the 'Failed deployment' state",
    )
    m.release(wait=True, wait_interval=0.1)
    assert m.status == NodeStatus.READY


def test_power_operations(client, sim, tag):
    target = sim.seed({}, tag=tag)[0]
    m = client.machines.get(target["system_id"])
    with pytest.raises(CallError) as err:
        m.power_on()
    assert (err.value.status, err.value.content) == (409, b"Can't start node: it hasn't been allocated.")
    m = client.machines.allocate(tags=[tag])
    m.deploy(wait=True, wait_interval=0.1)
    m.power_off(wait=True, wait_interval=0.1)
    assert m.query_power_state() == PowerState.OFF
    assert m.status == NodeStatus.DEPLOYED
    m.power_on(wait=True, wait_interval=0.1)
    assert m.query_power_state() == PowerState.ON
    assert sim.state(target["system_id"])["power_state"] == "on"


def test_tags_create_and_update_nodes(client, sim, tag):
    a, b = sim.seed({}, {}, tag=tag)
    new_tag = client.tags.create(name=f"{tag}-x", comment="by test")
    session = client._origin.session
    assert session.Tag.update_nodes(name=new_tag.name, add=[a["system_id"], b["system_id"]]) == {
        "added": 2,
        "removed": 0,
    }
    assert session.Tag.update_nodes(name=new_tag.name, remove=b["system_id"]) == {"added": 0, "removed": 1}
    assert client.machines.allocate(tags=[tag, new_tag.name]).system_id == a["system_id"]
    assert f"{tag}-x" in session.Machine.read(system_id=a["system_id"])["tag_names"]


def test_login_with_username_and_password(sim, maas_info, lab):
    password = (lab.cfg.data("maas") / "password").read_text().strip()
    asyncio.set_event_loop(asyncio.new_event_loop())
    try:
        c = login(sim.url, username="admin", password=password)
        assert c.users.whoami().username == "admin"
        with pytest.raises(Exception, match="403 Forbidden"):  # MAAS's authenticate view: HttpResponseForbidden
            login(sim.url, username="admin", password="wrong")
    finally:
        asyncio.get_event_loop().close()
        asyncio.set_event_loop(None)


def test_worker_threads_each_with_an_event_loop(sim, tag):
    """Concurrent clients in worker threads: each thread needs its own loop; no machine goes twice."""
    seeded = sim.seed({}, {}, {}, {}, tag=tag)

    def allocate_one(_):
        asyncio.set_event_loop(asyncio.new_event_loop())
        try:
            c = connect(sim.url, apikey=sim.apikey)
            return c.machines.allocate(tags=[tag]).system_id
        except MachineNotFound:
            return None
        finally:
            asyncio.get_event_loop().close()

    with ThreadPoolExecutor(max_workers=6) as pool:
        got = list(pool.map(allocate_one, range(6)))
    won = [g for g in got if g]
    assert sorted(won) == sorted(m["system_id"] for m in seeded)
    assert got.count(None) == 2
