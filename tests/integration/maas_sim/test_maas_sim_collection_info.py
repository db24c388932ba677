"""Every maas.maas ``*_info`` module against the simulator, replayed request by request.

The collection is not installable here (not in the ``ansible`` package, Galaxy unreachable), so each module's
calls are made as its code makes them (canonical/ansible-collection plugins/modules/*_info.py and the
module_utils they use): the same paths, the same client-side filtering (``utils.filter_results``: every query
key equal), and the same reads of the answer (their ``from_maas`` / ``to_ansible``), where a missing key is the
collection's ``MissingValueMAAS`` failure. Signed PLAINTEXT with no realm, as its ``module_utils/auth.py``.
"""

from __future__ import annotations

from itertools import groupby

import pytest

from tests.integration.net import LOOP


class Collection:
    """The collection's Client + RestClient: ``get`` answers JSON, ``record`` filters a list for one match."""

    def __init__(self, sim):
        self.sim = sim

    def get(self, path: str, query=None, ok=True):
        resp = self.sim.call("GET", path.removeprefix("/api/2.0/"), params=query)
        if ok:
            assert resp.status_code == 200, (path, resp.status_code, resp.text)
            return resp.json()
        return resp

    def record(self, path: str, query: dict):
        found = [r for r in self.get(path) if all(k in r and r[k] == v for k, v in query.items())]
        assert len(found) == 1, f"{len(found)} records from endpoint {path} match the {query} query."
        return found[0]


def _read(d: dict, *keys):
    missing = [k for k in keys if k not in d]
    assert not missing, f"MissingValueMAAS: {missing} not in {sorted(d)}"
    return {k: d[k] for k in keys}


def _nic(d: dict) -> dict:  # NetworkInterface.from_maas
    out = _read(d, "name", "id", "mac_address", "system_id", "tags", "effective_mtu")
    if d.get("discovered"):
        sub = d["discovered"][0]["subnet"]
    elif d.get("links"):
        sub = d["links"][0]["subnet"]
    else:
        sub = {"cidr": d.get("cidr"), "vlan": _read(d, "vlan")["vlan"]}
    if sub["vlan"]:
        out.update(subnet_cidr=sub["cidr"], vlan=sub["vlan"].get("name"), fabric=sub["vlan"].get("fabric"))
    return out


def _machine(d: dict) -> dict:  # Machine.from_maas
    out = _read(d, "fqdn", "hostname", "system_id", "memory", "cpu_count", "tag_names", "status_name", "osystem",
                "distro_series", "hwe_kernel", "power_type", "interface_set", "blockdevice_set")  # fmt: skip
    out.update(domain=d["domain"]["id"], zone=d["zone"]["id"], pool=d["pool"]["id"])
    out["interface_set"] = [_nic(i) for i in d["interface_set"] or []]
    out["blockdevice_set"] = [{**_read(b, "name", "id"), "size": int(int(b["size"]) / 1000000000)}
                              for b in d["blockdevice_set"] or []]  # fmt: skip
    return out


BLOCK_DEVICE = ("name", "id", "system_id", "model", "serial", "id_path", "block_size", "size", "tags")
VLAN = ("name", "id", "vid", "mtu", "dhcp_on", "external_dhcp", "relay_vlan", "space", "fabric_id", "secondary_rack",
        "fabric", "primary_rack", "resource_uri")  # fmt: skip


@pytest.fixture
def col(sim):
    return Collection(sim)


@pytest.fixture
def machine(sim, tag):
    return sim.seed({"interface_name": "eno1"}, tag=tag)[0]


def test_machine_info(col, machine):
    every = col.get("/api/2.0/machines/")
    assert machine["system_id"] in {_machine(m)["system_id"] for m in every}
    found = col.record("/api/2.0/machines/", {"fqdn": machine["fqdn"]})  # Machine.get_by_fqdn
    (one,) = [col.get(f"/api/2.0/machines/{found['system_id']}/")]
    got = _machine(one)
    assert (got["hostname"], got["status_name"], got["power_type"]) == (machine["hostname"], "Ready", "ipmi")
    assert got["interface_set"][0]["name"] == "eno1" and got["interface_set"][0]["fabric"] == "fabric-0"
    assert got["blockdevice_set"] == [{"name": "sda", "id": got["blockdevice_set"][0]["id"], "size": 64}]


def test_network_interface_info_and_block_device_info(col, machine):
    sid = col.record("/api/2.0/machines/", {"fqdn": machine["fqdn"]})["system_id"]
    nics = col.get(f"/api/2.0/nodes/{sid}/interfaces/")
    assert [_nic(n)["mac_address"] for n in nics] == [machine["mac_address"]]
    assert _nic(col.get(f"/api/2.0/nodes/{sid}/interfaces/{nics[0]['id']}/"))["name"] == "eno1"
    disks = col.get(f"/api/2.0/nodes/{sid}/blockdevices/")
    sda = _read(col.record(f"/api/2.0/nodes/{sid}/blockdevices/", {"name": "sda"}), *BLOCK_DEVICE)
    assert [d["id"] for d in disks] == [sda["id"]] and sda["system_id"] == sid
    assert _read(col.get(f"/api/2.0/nodes/{sid}/blockdevices/{sda['id']}/"), *BLOCK_DEVICE) == sda


def test_fabric_vlan_space_subnet_info(col, sim):
    fabric = _read(col.record("/api/2.0/fabrics/", {"name": "fabric-0"}), "name", "id", "vlans", "resource_uri",
                   "class_type")  # fmt: skip
    vlans = col.get(f"/api/2.0/fabrics/{fabric['id']}/vlans/")
    by_vid = _read(col.get(f"/api/2.0/fabrics/{fabric['id']}/vlans/0/"), *VLAN)  # Vlan.get_by_vid
    by_name = _read(col.record(f"/api/2.0/fabrics/{fabric['id']}/vlans/", {"name": "untagged"}), *VLAN)
    assert by_vid == by_name and [v["id"] for v in vlans] == [by_vid["id"]]
    assert col.get(f"/api/2.0/fabrics/{fabric['id']}/vlans/9/", ok=False).status_code == 404  # "vid not found"
    space = _read(col.record("/api/2.0/spaces/", {"name": "undefined"}), "name", "id", "vlans", "resource_uri",
                  "subnets")  # fmt: skip
    assert space["id"] == -1
    # subnet_info: subnets/ plus ipranges/ grouped by the range's subnet name into each subnet's ip_ranges
    made = sim.call("POST", "ipranges/", data={"type": "reserved", "start_ip": f"{LOOP}.2.251",
                                               "end_ip": f"{LOOP}.2.252", "comment": "subnet_info"})  # fmt: skip
    assert made.status_code == 200, made.text
    try:
        subnets = col.get("/api/2.0/subnets/")
        ranges = [{"subnet": r["subnet"]["name"], "data": _read(r, "type", "start_ip", "end_ip")}
                  for r in col.get("/api/2.0/ipranges/")]  # fmt: skip
        ranges.sort(key=lambda x: x["subnet"])
        grouped = {k: [v["data"] for v in g] for k, g in groupby(ranges, lambda x: x["subnet"])}
        lab = next(s for s in subnets if s["cidr"] == f"{LOOP}.2.0/24")
        assert {"type": "reserved", "start_ip": f"{LOOP}.2.251", "end_ip": f"{LOOP}.2.252"} in grouped[lab["name"]]
    finally:
        assert sim.call("DELETE", f"ipranges/{made.json()['id']}/").status_code == 204


def _dns_to_ansible(record: dict) -> list[dict]:  # module_utils/dns_record.py to_ansible
    name, domain = record["fqdn"].rsplit(".", 1)
    if record.get("resource_records", []):
        return [{"type": i["rrtype"], "data": i["rrdata"], "name": name, "domain": domain, "ttl": i["ttl"],
                 "id": i["id"]} for i in record["resource_records"]]  # fmt: skip
    ips = [x["ip"] for x in record["ip_addresses"] if x["ip"]]
    return [{"type": "A/AAAA", "data": " ".join(ips), "name": name, "domain": domain,
             **_read(record, "address_ttl", "id")}] if ips else []  # fmt: skip


def test_dns_domain_and_dns_record_info(col, sim, tag):
    """dns_record_info with all: MAAS adds the implicit records (DNSResourcesQuerySet): per label, id -1, the
    addresses as A/AAAA resource_records, for the DNS resources' addresses and the machines' alike."""
    m = sim.seed({}, tag=tag)[0]
    assert sim.call("POST", f"machines/{m['system_id']}/", params={"op": "deploy"}).status_code == 200
    made = sim.call("POST", "dnsresources/", data={"fqdn": f"{tag}.maas", "ip_addresses": "192.0.2.7 192.0.2.8"})
    assert made.status_code == 200, made.text
    try:
        assert "maas" in {d["name"] for d in col.get("/api/2.0/domains/")}
        plain = col.get("/api/2.0/dnsresources/")
        assert -1 not in {r["id"] for r in plain}
        assert [r["id"] for r in plain if r["fqdn"] == f"{tag}.maas"] == [made.json()["id"]]
        records = col.get("/api/2.0/dnsresources/", {"all": True})  # the module's query for all: yes
        mine = [r for r in records if r["fqdn"] == f"{tag}.maas"]
        assert sorted(r["id"] for r in mine) == sorted([-1, made.json()["id"]])
        synthetic = next(r for r in mine if r["id"] == -1)
        assert (synthetic["ip_addresses"], synthetic["address_ttl"]) == (None, None)
        rr = synthetic["resource_records"]
        assert {(x["rrtype"], x["rrdata"], x["dnsresource_id"], x["system_id"]) for x in rr} == {
            ("A", "192.0.2.7", made.json()["id"], None),
            ("A", "192.0.2.8", made.json()["id"], None),
        }
        assert all(set(x) == {"system_id", "node_type", "user_id", "dnsresource_id", "ttl", "rrtype", "rrdata",
                              "dnsdata_id"} for x in rr)  # fmt: skip
        # The collection reads rr["id"] of every resource record; MAAS's implicit ones carry dnsdata_id only, so
        # dns_record_info with all: true fails on them (a KeyError) against MAAS as against this simulator.
        with pytest.raises(KeyError):
            _dns_to_ansible(synthetic)
        explicit = next(r for r in mine if r["id"] != -1)
        assert [(x["type"], x["data"]) for x in _dns_to_ansible(explicit)] == [("A/AAAA", "192.0.2.7 192.0.2.8")]
        # the deploying machine's address under its hostname
        (node,) = col.get("/api/2.0/dnsresources/", {"all": "true", "name": m["hostname"]})
        assert node["fqdn"] == m["fqdn"] and node["id"] == -1
        assert [(x["rrtype"], x["rrdata"], x["system_id"], x["node_type"]) for x in node["resource_records"]] == [
            ("A", m["ip"], m["system_id"], 0)]  # fmt: skip
        assert col.get("/api/2.0/dnsresources/", {"all": "true", "name": m["hostname"], "rrtype": "AAAA"}) == []
        assert col.get("/api/2.0/dnsresources/", {"all": "maybe"}, ok=False).status_code == 400
    finally:
        assert sim.call("DELETE", f"dnsresources/{made.json()['id']}/").status_code == 204
        sim.call("POST", f"machines/{m['system_id']}/", params={"op": "release"})


def test_tag_user_vm_host_boot_sources_info(col, machine, tag):
    assert tag in {t["name"] for t in col.get("/api/2.0/tags/")}
    assert all(set(t) >= {"name", "comment", "definition", "kernel_opts", "resource_uri"}
               for t in col.get("/api/2.0/tags/"))  # fmt: skip
    users = col.get("/api/2.0/users/")
    assert "admin" in {u["username"] for u in users}
    assert col.get("/api/2.0/users/admin/")["is_superuser"] is True
    assert col.get("/api/2.0/users/nobody/", ok=False).status_code == 404  # the module warns on 404
    assert isinstance(col.get("/api/2.0/vm-hosts/"), list)
    resources = col.get("/api/2.0/boot-resources/")  # boot_sources_info reads boot-resources/
    assert {"ubuntu/jammy"} <= {r["name"] for r in resources}


# -- state modules that touch VM hosts, replayed as their code calls MAAS ----------------------------------------


def _vm_host(d: dict) -> dict:  # module_utils/vmhost.py VMHost.from_maas
    return _read(d, "name", "id", "cpu_over_commit_ratio", "memory_over_commit_ratio", "default_macvlan_mode",
                 "tags", "zone", "pool")  # fmt: skip


VM_HOST_INFO = ("architectures", "available", "capabilities", "cpu_over_commit_ratio", "default_macvlan_mode",
                "host", "id", "memory_over_commit_ratio", "name", "pool", "resource_uri", "storage_pools", "tags",
                "total", "type", "used", "version", "zone")  # fmt: skip


@pytest.fixture
def lxd_address(sim, tag):
    address = f"10.{int(tag[1:3], 16) % 200 + 20}.{int(tag[3:5], 16) % 250 + 1}.{int(tag[5:7], 16) % 250 + 1}:8443"
    sim.ctl("POST", "lxd-hosts", {"address": address, "cores": 4, "memory": 8192, "storage": 50 * 1000**3})
    return address


def test_vm_host_vm_host_machine_instance(col, sim, tag, lxd_address):
    name = f"vmh-{tag}"
    # vm_host state=present: get_by_name (list, filter on name) finds nothing, so create_vm_host: POST with
    # type/power_address/power_pass/tags/zone/pool/name, then PUT the ratios and macvlan mode
    assert [h for h in col.get("/api/2.0/vm-hosts/") if h.get("name") == name] == []
    created = sim.call("POST", "vm-hosts/", data={"type": "lxd", "power_address": lxd_address, "power_pass": "pw",
                                                   "tags": "t1", "zone": "default", "pool": "default",
                                                   "name": name})  # fmt: skip
    assert created.status_code == 200, created.text
    host = _vm_host(created.json())
    resp = sim.call("PUT", f"vm-hosts/{host['id']}/", data={"cpu_over_commit_ratio": 2, "memory_over_commit_ratio": 2,
                                                            "default_macvlan_mode": "bridge"})  # fmt: skip
    assert resp.status_code == 200, resp.text
    record = resp.json()
    assert set(record) >= set(VM_HOST_INFO)  # vm_host_info returns these records as MAAS gives them
    assert (record["cpu_over_commit_ratio"], record["default_macvlan_mode"]) == (2.0, "bridge")
    # vm_host again (update_vm_host): compares with the record (zone and pool are the objects MAAS renders)
    again = _vm_host(col.record("/api/2.0/vm-hosts/", {"name": name}))
    assert again["cpu_over_commit_ratio"] == 2.0 and again["zone"]["name"] == "default"
    resp = sim.call("PUT", f"vm-hosts/{host['id']}/", data={"tags": "t2", "power_address": lxd_address})
    assert resp.status_code == 200 and resp.json()["tags"] == ["t2", "pod-console-logging"], resp.text

    # vm_host_machine state=ready: payload_for_compose (cores, memory, storage "label:<GB>"), the answer's system_id
    # read back through Machine.get_by_id
    task = sim.call("POST", f"vm-hosts/{host['id']}/", params={"op": "compose"},
                    data={"hostname": f"vm-{tag}", "cores": 2, "memory": 2048, "storage": "label:10"})  # fmt: skip
    assert task.status_code == 200, task.text
    system_id = task.json()["system_id"]
    vm = _read(col.get(f"/api/2.0/machines/{system_id}/"), "hostname", "system_id", "memory", "cpu_count",
               "status_name", "blockdevice_set", "interface_set", "zone", "pool", "tag_names")  # fmt: skip
    assert (vm["hostname"], vm["cpu_count"], vm["memory"]) == (f"vm-{tag}", 2, 2048)
    assert col.get(f"/api/2.0/vm-hosts/{host['id']}/")["used"]["local_storage"] == 10 * 1000**3

    # instance state=deployed with allocate_params: allocate (cpu_count, mem), wait Ready/Allocated, deploy
    sim.wait_status(system_id, "Ready")
    resp = sim.call("POST", "machines/", params={"op": "allocate"},
                    data={"cpu_count": 2, "mem": 2048, "system_id": system_id})  # fmt: skip
    assert resp.status_code == 200, resp.text
    instance = resp.json()
    assert instance["boot_interface"]["system_id"] == system_id  # get_instance_id reads it there
    assert instance["status_name"] == "Allocated"
    resp = sim.call("POST", f"machines/{system_id}/", params={"op": "deploy"},
                    data={"osystem": "ubuntu", "distro_series": "jammy"})  # fmt: skip
    assert resp.status_code == 200, resp.text
    assert resp.json()["status_name"] == "Deploying"

    # vm_host state=absent: get_by_name, then DELETE vm-hosts/{id}/ (no decompose): its machines leave MAAS
    assert sim.call("DELETE", f"vm-hosts/{host['id']}/").status_code == 204
    assert col.get(f"/api/2.0/machines/{system_id}/", ok=False).status_code == 404
    assert [h for h in col.get("/api/2.0/vm-hosts/") if h.get("name") == name] == []
