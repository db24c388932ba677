"""Allocation constraints and GET machines/ filters as MAAS 3.5's FilterNodeForm has them.

Driven both through raw OAuth requests (repeated form fields) and through python-libmaas's
objects and bones, the two ways clients send them.
"""

from __future__ import annotations

import pytest
from maas.client.bones import CallError
from maas.client.viscera.machines import MachineNotFound


def _alloc(sim, pairs, dry_run=True):
    data = list(pairs) + ([("dry_run", "true")] if dry_run else [])
    return sim.call("POST", "machines/", params={"op": "allocate"}, data=data)


def _ids(resp):
    assert resp.status_code == 200, resp.text
    return {m["system_id"] for m in resp.json()}


def test_multi_valued_fields_match_any_value(sim, tag):
    a, b, c = sim.seed({"zone": "az-1", "cpu_count": 2, "memory": 2048}, {"zone": "az-2", "cpu_count": 4},
                       {"zone": "az-3", "cpu_count": 8}, tag=tag)  # fmt: skip
    # zone=az-1&zone=az-2: either (3.5 made zone multi-valued); cheapest first
    resp = _alloc(sim, [("tags", tag), ("zone", "az-3"), ("zone", "az-2")])
    assert resp.json()["system_id"] == b["system_id"]
    # system_id repeated: any of them
    resp = _alloc(sim, [("tags", tag), ("system_id", c["system_id"]), ("system_id", "nope00")])
    assert resp.json()["system_id"] == c["system_id"]
    # cpu_count repeated: at least the smallest
    resp = _alloc(sim, [("tags", tag), ("cpu_count", "8"), ("cpu_count", "3")])
    assert resp.json()["system_id"] == b["system_id"]
    # GET machines/ filters likewise
    listed = _ids(sim.call("GET", "machines/", params=[("tags", tag), ("zone", "az-1"), ("zone", "az-3")]))
    assert listed == {a["system_id"], c["system_id"]}
    listed = _ids(sim.call("GET", "machines/", params=[("tags", tag), ("not_id", a["system_id"])]))
    assert listed == {b["system_id"], c["system_id"]}
    listed = _ids(sim.call("GET", "machines/", params=[("tags", tag), ("hostname", a["hostname"]),
                                                      ("hostname", b["hostname"])]))  # fmt: skip
    assert listed == {a["system_id"], b["system_id"]}


def test_not_arch_power_state_owner_cpu_speed(sim, tag):
    amd, arm, fast = sim.seed({"architecture": "amd64/generic"}, {"architecture": "arm64/generic"},
                              {"architecture": "amd64/generic", "cpu_speed": 3600}, tag=tag)  # fmt: skip
    listed = _ids(sim.call("GET", "machines/", params=[("tags", tag), ("not_arch", "amd64/generic")]))
    assert listed == {arm["system_id"]}
    # not_arch has no wildcard cleaning in 3.5 (no clean_not_arch): "amd64" excludes nothing
    listed = _ids(sim.call("GET", "machines/", params=[("tags", tag), ("not_arch", "amd64")]))
    assert listed == {amd["system_id"], arm["system_id"], fast["system_id"]}
    listed = _ids(sim.call("GET", "machines/", params=[("tags", tag), ("arch", "arm64"), ("arch", "amd64/generic")]))
    assert listed == {amd["system_id"], arm["system_id"], fast["system_id"]}
    resp = _alloc(sim, [("tags", tag), ("cpu_speed", "3000")])
    assert resp.json()["system_id"] == fast["system_id"]
    sim.ctl("POST", f"machines/{amd['system_id']}", {"power_state": "on"})
    listed = _ids(sim.call("GET", "machines/", params=[("tags", tag), ("power_state", "on")]))
    assert listed == {amd["system_id"]}
    listed = _ids(sim.call("GET", "machines/", params=[("tags", tag), ("not_power_state", "=on")]))
    assert listed == {arm["system_id"], fast["system_id"]}
    bad = sim.call("GET", "machines/", params={"power_state": "sleeping"})
    msg = "Select a valid choice. sleeping is not one of the available choices."
    assert (bad.status_code, bad.json()) == (400, {"power_state": [msg]})
    # owner: who holds it; an unknown user is a form error
    _alloc(sim, [("system_id", arm["system_id"])], dry_run=False)
    listed = _ids(sim.call("GET", "machines/", params=[("tags", tag), ("owner", "admin")]))
    assert listed == {arm["system_id"]}
    listed = _ids(sim.call("GET", "machines/", params=[("tags", tag), ("not_owner", "admin")]))
    assert listed == {amd["system_id"], fast["system_id"]}
    bad = sim.call("GET", "machines/", params={"owner": "nobody"})
    assert (bad.status_code, bad.json()) == (400, {"owner": ["No such owner: 'nobody'."]})
    listed = _ids(sim.call("GET", "machines/", params=[("tags", tag), ("status", "allocated"),
                                                      ("status", "=deployed")]))  # fmt: skip
    assert listed == {arm["system_id"]}
    listed = _ids(sim.call("GET", "machines/", params=[("tags", tag), ("simple_status", "ready")]))
    assert listed == {amd["system_id"], fast["system_id"]}


def test_pod_constraints_compare_the_bmc_so_bare_metal_survives_not_pod_type(sim, tag):
    metal, vm = sim.seed({"cpu_count": 2}, {"pod": f"lxd-{tag}", "cpu_count": 1}, tag=tag)
    # 3.3+: exclude(bmc__power_type__in=[lxd]) keeps a machine whose BMC is ipmi
    resp = _alloc(sim, [("tags", tag), ("not_pod_type", "lxd")])
    assert resp.json()["system_id"] == metal["system_id"]
    resp = _alloc(sim, [("tags", tag), ("not_pod", f"lxd-{tag}")])
    assert resp.json()["system_id"] == metal["system_id"]
    # CAPMAAS's HCP allocation sends not_pod=true too: no pod is called "true", bare metal stays
    resp = _alloc(sim, [("tags", tag), ("not_pod", "true"), ("not_pod_type", "lxd")])
    assert resp.json()["system_id"] == metal["system_id"]
    resp = _alloc(sim, [("tags", tag), ("pod", f"lxd-{tag}")])
    assert resp.json()["system_id"] == vm["system_id"]
    assert resp.json()["pod"]["name"] == f"lxd-{tag}"
    resp = _alloc(sim, [("tags", tag), ("pod_type", "lxd")])
    assert resp.json()["system_id"] == vm["system_id"]
    # pod_type is the BMC's power type: a bare-metal ipmi machine matches pod_type=ipmi
    resp = _alloc(sim, [("tags", tag), ("pod_type", "ipmi")])
    assert resp.json()["system_id"] == metal["system_id"]
    listed = _ids(sim.call("GET", "machines/", params=[("tags", tag), ("not_pod_type", "lxd")]))
    assert listed == {metal["system_id"]}


def test_deployment_target_and_system_id(sim, tag):
    """3.5's FilterNodeForm has deployment_target / not_deployment_target (memory for an ephemeral deployment,
    disk otherwise) and system_id, for allocate and GET machines/ alike."""
    mem, disk, ready = sim.seed({}, {}, {}, tag=tag)
    for m, ephemeral in ((mem, "true"), (disk, "false")):
        resp = sim.call("POST", f"machines/{m['system_id']}/", params={"op": "deploy"},
                        data={"ephemeral_deploy": ephemeral})  # fmt: skip
        assert resp.status_code == 200, resp.text
    listed = _ids(sim.call("GET", "machines/", params=[("tags", tag), ("deployment_target", "memory")]))
    assert listed == {mem["system_id"]}
    listed = _ids(sim.call("GET", "machines/", params=[("tags", tag), ("deployment_target", "=disk")]))
    assert listed == {disk["system_id"], ready["system_id"]}  # a machine never deployed is "disk" too
    listed = _ids(sim.call("GET", "machines/", params=[("tags", tag), ("not_deployment_target", "disk")]))
    assert listed == {mem["system_id"]}
    listed = _ids(sim.call("GET", "machines/", params=[("tags", tag), ("system_id", disk["system_id"]),
                                                      ("system_id", mem["system_id"])]))  # fmt: skip
    assert listed == {disk["system_id"], mem["system_id"]}
    resp = _alloc(sim, [("tags", tag), ("deployment_target", "disk")])
    assert resp.json()["system_id"] == ready["system_id"]
    none = _alloc(sim, [("tags", tag), ("deployment_target", "memory")])  # the only one is deployed
    assert none.status_code == 409
    assert none.text.endswith(f'(resolved to "deployment_target=memory tags={tag}")'), none.text
    # released, a machine is "disk" again (ephemeral_deploy cleared with the deployment)
    assert sim.call("POST", f"machines/{mem['system_id']}/", params={"op": "release"}).status_code == 200
    sim.wait_status(mem["system_id"], "Ready")
    listed = _ids(sim.call("GET", "machines/", params=[("tags", tag), ("deployment_target", "memory")]))
    assert listed == set()


def test_35_error_texts(sim, tag):
    sim.seed({}, tag=tag)
    cases = [
        ([("zone", "nowhere")], {"zone": ["No such zone(s): nowhere."]}),
        ([("zone", "az-1"), ("zone", "b"), ("zone", "a")], {"zone": ["No such zone(s): a, b."]}),
        ([("pool", "nopool")], {"pool": ["No such pool(s): nopool."]}),
        ([("not_in_pool", "nopool")], {"not_in_pool": ["No such pool(s): nopool."]}),
        ([("cpu_count", "many")], {"cpu_count": ["Invalid CPU count: number required."]}),
        ([("cpu_speed", "fast")], {"cpu_speed": ["Invalid CPU speed: number required."]}),
        ([("mem", "lots")], {"mem": ["Invalid memory: number of MiB required."]}),
        ([("arch", "sparc")], {"arch": ["Architecture not recognised."]}),
        ([("not_system_id", "abc")], {"not_system_id": ["No such constraint."]}),
        (
            [("deployment_target", "ram")],
            {"deployment_target": ["Select a valid choice. ram is not one of the available choices."]},
        ),
    ]
    for pairs, expected in cases:
        resp = _alloc(sim, [("tags", tag)] + pairs)
        assert (resp.status_code, resp.json()) == (400, expected), pairs
    none = _alloc(sim, [("tags", tag), ("zone", "az-1"), ("zone", "az-2"), ("cpu_count", "512")])
    assert none.status_code == 409
    assert none.text.endswith(f'(resolved to "cpu_count=512.0 tags={tag} zone=az-1,az-2")')
    bad = sim.call("GET", "machines/", params={"status": "sleeping"})
    assert bad.status_code == 400 and "sleeping is not one of the available choices" in bad.json()["status"][0]


def test_python_libmaas_objects_and_bones_send_lists(client, sim, tag):
    small, big = sim.seed({"zone": "az-1", "cpu_count": 2}, {"zone": "az-2", "cpu_count": 8}, tag=tag)
    session = client._origin.session
    got = session.Machines.allocate(tags=[tag], zone=["az-2", "az-3"], not_pod_type="lxd", dry_run="true")
    assert got["system_id"] == big["system_id"]
    listed = client.machines.list(hostnames=[small["hostname"], big["hostname"]])
    assert {m.system_id for m in listed} == {small["system_id"], big["system_id"]}
    with pytest.raises(MachineNotFound):
        client.machines.allocate(tags=[tag], cpus=64)
    with pytest.raises(CallError) as err:
        session.Machines.allocate(tags=[tag], pool=["nopool"])
    assert err.value.status == 400
    m = client.machines.allocate(tags=[tag], zone="az-1")
    assert m.system_id == small["system_id"]
    owned = session.Machines.read(owner=["admin"], tags=[tag])
    assert [x["system_id"] for x in owned] == [small["system_id"]]
