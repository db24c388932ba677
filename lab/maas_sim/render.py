"""JSON shapes of MAAS objects (src/maasserver/api/examples/*.json).

Every field a client reads is there with MAAS's name, type and nesting; the
values come from the simulator's model, not from the example files.
"""

from __future__ import annotations

from lab.maas_sim import model
from lab.maas_sim.model import Machine, Store
from lab.maas_sim.net import CIDR, GATEWAY

API = "/MAAS/api/2.0"

# Machines get their address when deployment starts (MAAS claims AUTO IPs in start()).
_ADDRESSED = {model.DEPLOYING, model.DEPLOYED, model.FAILED_DEPLOYMENT, model.RELEASING, model.DISK_ERASING,
              model.FAILED_RELEASING, model.FAILED_DISK_ERASING}  # fmt: skip

_VLAN = {"vid": 0, "mtu": 1500, "dhcp_on": True, "external_dhcp": None, "relay_vlan": None, "id": 5001,
         "name": "untagged", "fabric": "fabric-0", "primary_rack": None, "secondary_rack": None,
         "space": "undefined", "fabric_id": 0, "resource_uri": f"{API}/vlans/5001/"}  # fmt: skip

_SUBNET = {"name": CIDR, "vlan": _VLAN, "cidr": CIDR, "rdns_mode": 2, "gateway_ip": GATEWAY,
           "dns_servers": [], "allow_dns": True, "allow_proxy": True, "active_discovery": False, "managed": True,
           "id": 1, "space": "undefined", "resource_uri": f"{API}/subnets/1/"}  # fmt: skip


def zone(z: dict) -> dict:
    return {"name": z["name"], "description": z["description"], "id": z["id"],
            "resource_uri": f"{API}/zones/{z['name']}/"}  # fmt: skip


def pool(p: dict) -> dict:
    return {"name": p["name"], "description": p["description"], "id": p["id"],
            "resource_uri": f"{API}/resourcepool/{p['id']}/"}  # fmt: skip


def domain(store: Store, d: dict) -> dict:
    count = sum(1 for r in store.dnsresources.values() if r["domain"] == d["id"])
    return {"authoritative": d["authoritative"], "ttl": d["ttl"], "id": d["id"], "name": d["name"],
            "is_default": d["id"] == store.default_domain, "resource_record_count": count,
            "resource_uri": f"{API}/domains/{d['id']}/"}  # fmt: skip


def tag(t: dict) -> dict:
    return {"name": t["name"], "definition": t["definition"], "comment": t["comment"],
            "kernel_opts": t["kernel_opts"], "resource_uri": f"{API}/tags/{t['name']}/"}  # fmt: skip


def user(u: dict) -> dict:
    return {"is_superuser": u["is_superuser"], "username": u["username"], "email": u["email"], "is_local": True,
            "resource_uri": f"{API}/users/{u['username']}/"}  # fmt: skip


def dnsresource(store: Store, r: dict) -> dict:
    d = store.domains[r["domain"]]
    fqdn = f"{r['name']}.{d['name']}" if r["name"] != "@" else d["name"]
    # DNSResourceHandler.resource_records: the records (dnsresourcerecords/) by rrtype
    records = [{"id": x["id"], "fqdn": fqdn, "ttl": x["ttl"], "rrtype": x["rrtype"], "rrdata": x["rrdata"],
                "resource_uri": f"{API}/dnsresourcerecords/{x['id']}/"}
               for x in sorted(r.get("dnsdata", []), key=lambda x: x["rrtype"])]  # fmt: skip
    return {"id": r["id"], "fqdn": fqdn, "address_ttl": r["address_ttl"],
            "ip_addresses": [{"id": ip_id, "ip": ip} for ip_id, ip in r["ip_addresses"]],
            "resource_records": records, "resource_uri": f"{API}/dnsresources/{r['id']}/"}  # fmt: skip


def _shows(m: Machine, mode: str | None) -> bool:
    # a STATIC (sticky) address is the machine's in every state; an AUTO one only once deployment claimed it
    return mode == "static" or (mode == "auto" and m.status in _ADDRESSED)


def addresses(m: Machine) -> list[str]:
    """The machine's ``ip_addresses``: the boot interface's first, then the other interfaces' in order."""
    out = [m.ip] if _shows(m, m.link_mode) else []
    return out + [n["ip"] for n in m.nics if n.get("ip") and _shows(m, n["mode"])]


def subnet(sub: dict) -> dict:
    """A subnet as links and the subnets endpoint show it (the lab's own is ``_SUBNET``)."""
    if sub["id"] == _SUBNET["id"]:
        return _SUBNET
    return {**_SUBNET, "name": sub["cidr"], "cidr": sub["cidr"], "gateway_ip": sub.get("gateway_ip"),
            "id": sub["id"], "resource_uri": f"{API}/subnets/{sub['id']}/"}  # fmt: skip


def _links(m: Machine) -> list[dict]:
    if m.link_mode is None:
        return []
    link = {"id": m.link_id, "mode": m.link_mode, "subnet": _SUBNET}
    if _shows(m, m.link_mode):
        link["ip_address"] = m.ip
    return [link]


def _nic_links(m: Machine, nic: dict) -> list[dict]:
    link = {"id": nic["link_id"], "mode": nic["mode"], "subnet": subnet(nic["subnet"])}
    if nic.get("ip") and _shows(m, nic["mode"]):
        link["ip_address"] = nic["ip"]
    return [link]


def _physical(m: Machine, iface_id: int, name: str, mac: str, links: list, children: list) -> dict:
    return {"type": "physical", "vlan": _VLAN, "mac_address": mac, "enabled": True, "discovered": None,
            "system_id": m.system_id, "name": name, "effective_mtu": 1500, "firmware_version": None,
            "vendor": None, "tags": [], "children": children, "product": None, "params": "",
            "links": links, "id": iface_id, "parents": [], "link_connected": True, "interface_speed": 1000,
            "link_speed": 1000, "numa_node": 0, "sriov_max_vf": 0,
            "resource_uri": f"{API}/nodes/{m.system_id}/interfaces/{iface_id}/"}  # fmt: skip


def interface(m: Machine) -> dict:
    """The boot interface; its links move to a bridge made on it (Interface.create_bridge)."""
    children = [b["name"] for b in m.bridges]
    return _physical(m, m.interface_id, m.interface_name, m.mac, [] if children else _links(m), children)


def interfaces(m: Machine) -> list[dict]:
    """Every interface, by id as MAAS lists them: the boot one, the other physical ones, then bridges."""
    out = [interface(m)]
    out += [_physical(m, n["id"], n["name"], n["mac"], _nic_links(m, n), []) for n in m.nics]
    for b in m.bridges:
        out.append({**interface(m), "type": "bridge", "name": b["name"], "id": b["id"], "children": [],
                    "parents": [m.interface_name], "params": b["params"], "links": _links(m),
                    "firmware_version": None, "vendor": None, "product": None, "interface_speed": 0,
                    "link_speed": 0, "resource_uri": f"{API}/nodes/{m.system_id}/interfaces/{b['id']}/"})  # fmt: skip
    return out


def disk(m: Machine) -> dict:
    return {"firmware_version": None, "type": "physical", "available_size": 0, "model": "QEMU HARDDISK",
            "used_for": "GPT partitioned with 1 partition", "partitions": [], "system_id": m.system_id,
            "name": "sda", "path": "/dev/disk/by-dname/sda", "id_path": None,
            "tags": ["ssd"] if "ssd" in m.tags else [],
            "serial": f"QM{m.disk_id:05d}", "used_size": m.disk_bytes, "filesystem": None, "storage_pool": None,
            "block_size": 512, "partition_table_type": "GPT", "size": m.disk_bytes,
            "uuid": f"00000000-0000-4000-8000-{m.disk_id:012d}", "id": m.disk_id,
            "numa_node": 0, "resource_uri": f"{API}/nodes/{m.system_id}/blockdevices/{m.disk_id}/"}  # fmt: skip


def pod_ref(store: Store, m: Machine) -> dict | None:
    pod = store.pods.get(m.pod) if m.pod is not None else None
    if pod is None:
        return None
    return {"id": pod["id"], "name": pod["name"], "resource_uri": f"{API}/pods/{pod['id']}/"}


def machine(store: Store, m: Machine) -> dict:
    z = store.zones[m.zone]
    p = store.pool_by_name(m.pool)
    blockdev = disk(m)
    iface = interface(m)
    ifaces = interfaces(m)
    return {
        "system_id": m.system_id, "hostname": m.hostname, "description": m.description,
        "hardware_uuid": None, "domain": domain(store, store.domains[m.domain]), "fqdn": store.fqdn(m),
        "owner": m.owner, "owner_data": dict(m.owner_data), "locked": m.locked, "cache_sets": [], "bcaches": [],
        "bios_boot_method": "pxe", "boot_interface": iface, "architecture": m.architecture,
        "min_hwe_kernel": m.min_hwe_kernel, "hwe_kernel": m.hwe_kernel, "cpu_count": m.cpu_count,
        "cpu_speed": m.cpu_speed, "memory": m.memory, "swap_size": m.swap_size,
        "storage": round(m.disk_bytes / 1_000_000, 3),
        "status": m.status, "status_name": model.STATUS_NAMES[m.status], "status_message": m.status_message,
        "status_action": "", "osystem": m.osystem, "distro_series": m.distro_series, "netboot": m.netboot,
        "power_type": m.power_type, "power_state": m.power_state, "tag_names": list(m.tags), "address_ttl": None,
        "ip_addresses": addresses(m), "interface_set": ifaces, "zone": zone(z), "pool": pool(p),
        "disable_ipv4": False, "boot_disk": blockdev, "blockdevice_set": [blockdev],
        "physicalblockdevice_set": [blockdev], "virtualblockdevice_set": [], "volume_groups": [], "raids": [],
        "special_filesystems": [], "node_type": 0, "node_type_name": "Machine", "pod": pod_ref(store, m),
        "ephemeral_deploy": m.ephemeral_deploy,
        "default_gateways": {"ipv4": {"gateway_ip": None, "link_id": None},
                             "ipv6": {"gateway_ip": None, "link_id": None}},
        "current_commissioning_result_id": None, "current_testing_result_id": None,
        "current_installation_result_id": None,
        "commissioning_status": 2, "commissioning_status_name": "Passed",
        "testing_status": 2, "testing_status_name": "Passed",
        "cpu_test_status": -1, "cpu_test_status_name": "Unknown",
        "memory_test_status": -1, "memory_test_status_name": "Unknown",
        "network_test_status": -1, "network_test_status_name": "Unknown",
        "storage_test_status": 2, "storage_test_status_name": "Passed",
        "other_test_status": -1, "other_test_status_name": "Unknown",
        "interface_test_status": -1, "interface_test_status_name": "Unknown",
        "hardware_info": {"system_vendor": "QEMU", "system_product": "Standard PC (Q35 + ICH9, 2009)",
                          "system_version": "pc-q35", "system_serial": m.system_id, "cpu_model": "QEMU Virtual CPU",
                          "mainboard_vendor": "Unknown", "mainboard_product": "Unknown",
                          "mainboard_firmware_version": "Unknown", "mainboard_firmware_date": "Unknown"},
        "numanode_set": [{"index": 0, "cores": list(range(m.cpu_count)), "memory": m.memory, "hugepages_set": []}],
        "virtualmachine_id": None,
        "resource_uri": f"{API}/machines/{m.system_id}/",
    }  # fmt: skip
