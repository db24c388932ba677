"""LXD VM hosts as MAAS 3.5 handles them (src/maasserver/api/pods.py, forms/pods.py, models/bmc.py, vmhost.py).

Each test declares an LXD host of its own through the control API (a unique address) and registers it.
"""

from __future__ import annotations

import uuid

import pytest

GB = 1000**3


@pytest.fixture
def lxd(sim):
    """A fresh LXD host address (4 cores, 8192 MiB, 100 GB), declared to the simulator; VM hosts deleted after."""
    n = uuid.uuid4().int
    address = f"10.{n % 200 + 20}.{n // 256 % 250 + 1}.{n // 65536 % 250 + 1}:8443"
    sim.ctl("POST", "lxd-hosts", {"address": address, "cores": 4, "memory": 8192, "storage": 100 * GB})
    made = []
    yield address, made
    for host_id in made:
        sim.call("DELETE", f"vm-hosts/{host_id}/", params={"decompose": "true"})


def _create(sim, made, **data):
    resp = sim.call("POST", "vm-hosts/", data={"type": "lxd", **data})
    if resp.status_code == 200:
        made.append(resp.json()["id"])
    return resp


def test_create_renders_maas_fields_and_parameters(sim, lxd):
    address, made = lxd
    resp = _create(sim, made, power_address=f"https://{address}", name=f"h-{uuid.uuid4().hex[:6]}", tags="a,b",
                   password="trust")  # fmt: skip
    assert resp.status_code == 200, resp.text
    host = resp.json()
    assert set(host) == {"id", "name", "tags", "type", "architectures", "capabilities", "total", "used", "available",
                         "zone", "cpu_over_commit_ratio", "memory_over_commit_ratio", "storage_pools", "pool",
                         "host", "default_macvlan_mode", "version", "resource_uri"}  # fmt: skip
    assert host["tags"] == ["a", "b", "pod-console-logging"]
    assert host["total"] == {"cores": 4, "memory": 8192, "local_storage": 100 * GB}
    assert host["used"] == {"cores": 0, "memory": 0, "local_storage": 0}
    assert host["available"] == host["total"]
    assert host["host"] == {"system_id": None, "__incomplete__": True}
    assert host["default_macvlan_mode"] is None and host["version"]
    assert host["cpu_over_commit_ratio"] == 1.0 and host["zone"]["name"] == "default"
    assert "composable" in host["capabilities"] and host["architectures"] == ["amd64/generic"]
    assert host["storage_pools"][0]["total"] == 100 * GB and host["storage_pools"][0]["default"] is True
    params = sim.call("GET", f"vm-hosts/{host['id']}/", params={"op": "parameters"}).json()
    # the trust password is dropped once discovery worked (Pod.sync)
    assert set(params) == {"power_address", "project", "certificate", "key"}
    assert params["power_address"] == f"https://{address}" and params["project"] == "default"


def test_create_when_discovery_fails_saves_an_empty_host_and_refresh_is_503(sim, lxd):
    _, made = lxd
    resp = _create(sim, made, power_address="10.255.255.1")
    assert resp.status_code == 200, resp.text
    host = resp.json()
    assert host["name"]  # a random name, as BMC.set_random_name gives
    assert host["total"] == {"cores": 0, "memory": 0, "local_storage": 0}
    assert (host["capabilities"], host["architectures"], host["storage_pools"], host["version"]) == ([], [], [], "")
    resp = sim.call("POST", f"vm-hosts/{host['id']}/", params={"op": "refresh"})
    assert resp.status_code == 503
    assert resp.text.startswith(f"Pod {host['id']}: Failed to connect to the LXD REST API: ")
    resp = sim.call("POST", f"vm-hosts/{host['id']}/", params={"op": "compose"})
    assert (resp.status_code, resp.text) == (400, "VM host does not support composability.")
    # the host answers now: refresh reads its resources
    sim.ctl("POST", "lxd-hosts", {"address": "10.255.255.1:8443", "cores": 2, "memory": 4096, "storage": 10 * GB})
    resp = sim.call("POST", f"vm-hosts/{host['id']}/", params={"op": "refresh"})
    assert resp.status_code == 200, resp.text
    assert resp.json()["total"] == {"cores": 2, "memory": 4096, "local_storage": 10 * GB}


def test_create_validation(sim, lxd):
    address, made = lxd
    resp = _create(sim, made, power_address=address, zone="nowhere", cpu_over_commit_ratio="11",
                   default_macvlan_mode="weird")  # fmt: skip
    assert resp.status_code == 400
    assert resp.json() == {
        "zone": ["Select a valid choice. That choice is not one of the available choices."],
        "cpu_over_commit_ratio": ["Ensure this value is less than or equal to 10."],
        "default_macvlan_mode": ["Select a valid choice. weird is not one of the available choices."],
    }
    resp = sim.call("POST", "vm-hosts/", data={"type": "lxd"})
    assert (resp.status_code, resp.json()) == (400, {"power_address": ["This field is required."]})


def test_compose_limits_over_commit_and_decompose(sim, lxd):
    address, made = lxd
    host = _create(sim, made, power_address=address).json()
    hid = host["id"]

    def compose(**data):
        return sim.call("POST", f"vm-hosts/{hid}/", params={"op": "compose"}, data=data)

    resp = compose(cores="5", memory="512")
    assert resp.status_code == 400
    assert resp.json() == {"cores": ["Ensure this value is less than or equal to 4."],
                           "memory": ["Ensure this value is greater than or equal to 1024."]}  # fmt: skip
    first = compose(cores="3", memory="6144", storage="root:40")
    assert first.status_code == 200, first.text
    vm = sim.call("GET", f"machines/{first.json()['system_id']}/").json()
    assert (vm["cpu_count"], vm["memory"], vm["power_type"], vm["pool"]["name"]) == (3, 6144, "lxd", "default")
    assert "pod-console-logging" in vm["tag_names"]
    after = sim.call("GET", f"vm-hosts/{hid}/").json()
    assert after["used"] == {"cores": 3, "memory": 6144, "local_storage": 40 * GB}
    assert after["available"] == {"cores": 1, "memory": 2048, "local_storage": 60 * GB}
    resp = compose(cores="2", memory="4096")
    assert resp.status_code == 503
    name = host["name"]
    assert resp.text == (f"Unable to compose KVM instance in '{name}'. CPU overcommit ratio is 1.0 and there are 1 "
                         "available resources; 2 requested.Memory overcommit ratio is 1.0 and there are 2048 "
                         "available resources; 4096 requested.")  # fmt: skip
    resp = compose(storage="root:70")
    assert (resp.status_code, resp.text) == (
        503,
        "Unable to compose machine because: Not enough storage space on any storage pools: default",
    )
    # a higher ratio lets the same request through; available stays total - used
    resp = sim.call("PUT", f"vm-hosts/{hid}/", data={"cpu_over_commit_ratio": "2", "memory_over_commit_ratio": "2"})
    assert resp.status_code == 200, resp.text
    second = compose(cores="2", memory="4096", hostname=vm["hostname"])
    assert second.json() == {"hostname": [f'Node with hostname "{vm["hostname"]}" already exists']}
    second = compose(cores="2", memory="4096")
    assert second.status_code == 200, second.text
    assert sim.call("GET", f"vm-hosts/{hid}/").json()["available"]["cores"] == -1
    # deleting a composed machine decomposes it
    assert sim.call("DELETE", f"machines/{first.json()['system_id']}/").status_code == 204
    assert sim.call("GET", f"vm-hosts/{hid}/").json()["used"] == {"cores": 2, "memory": 4096,
                                                                    "local_storage": 8 * GB}  # fmt: skip
    # deleting the VM host without decompose: its machines leave MAAS, the VM stays on LXD and comes back
    # as a machine when the host is registered again
    sid = second.json()["system_id"]
    assert sim.call("DELETE", f"vm-hosts/{hid}/").status_code == 204
    made.remove(hid)
    assert sim.call("GET", f"machines/{sid}/").status_code == 404
    assert sim.call("GET", f"vm-hosts/{hid}/").status_code == 404
    again = _create(sim, made, power_address=address).json()
    assert again["used"]["cores"] == 2


def test_update(sim, lxd, tag):
    address, made = lxd
    hid = _create(sim, made, power_address=address).json()["id"]
    pool = sim.call("POST", "resourcepools/", data={"name": f"p{tag}"}).json()
    resp = sim.call("PUT", f"vm-hosts/{hid}/", data={"name": f"n{tag}", "pool": pool["name"], "tags": "x, y",
                                                      "default_macvlan_mode": "vepa",
                                                      "memory_over_commit_ratio": "1.5"})  # fmt: skip
    assert resp.status_code == 200, resp.text
    host = resp.json()
    assert (host["name"], host["pool"]["name"], host["tags"]) == (
        f"n{tag}",
        f"p{tag}",
        ["x", "y", "pod-console-logging"],
    )
    assert (host["default_macvlan_mode"], host["memory_over_commit_ratio"]) == ("vepa", 1.5)
    resp = sim.call("PUT", f"vm-hosts/{hid}/", data={"type": "virsh", "pool": "nope", "cpu_over_commit_ratio": "x"})
    assert resp.status_code == 400
    assert resp.json() == {
        "type": ["Cannot change the type of a pod. Delete and re-create the pod with a different type."],
        "pool": ["Select a valid choice. That choice is not one of the available choices."],
        "cpu_over_commit_ratio": ["Enter a number."],
    }
    assert sim.call("PUT", "vm-hosts/99999/", data={"name": "x"}).status_code == 404
    resp = sim.call("POST", f"vm-hosts/{hid}/", params={"op": "add_tag"}, data={"tag": "a,b"})
    assert (resp.status_code, resp.text) == (400, 'Tag may not contain a ",".')


def test_unknown_op_and_not_system_id(sim):
    resp = sim.call("POST", "vm-hosts/1/", params={"op": "frobnicate"})
    assert (resp.status_code, resp.text) == (400, "Unrecognised signature: method=POST op=frobnicate")
    resp = sim.call("POST", "machines/", params={"op": "allocate"}, data={"not_system_id": "abc"})
    assert (resp.status_code, resp.json()) == (400, {"not_system_id": ["No such constraint."]})


def test_libmaas_pods(client, sim, lxd):
    address, made = lxd
    pod = client.pods.create(type="lxd", power_address=address, name=f"lm-{uuid.uuid4().hex[:6]}")
    made.append(pod.id)
    assert pod.total["cores"] == 4
    assert "pod-console-logging" in pod.tags
    assert pod.refresh() is not None
    params = pod.parameters()
    assert params["power_address"] == address
    machine = pod.compose(cores=1, memory=1024, hostname=f"lm-{uuid.uuid4().hex[:6]}")
    assert machine["system_id"]
    assert client.pods.get(pod.id).used["cores"] == 1
