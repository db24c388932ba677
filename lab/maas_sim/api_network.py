"""Networking and inventory handlers real clients read (src/maasserver/api/{fabrics,vlans,subnets,spaces,
ipaddresses,interfaces,blockdevices,boot_resources,boot_sources,events,ssh_keys,rackcontrollers,devices}.py).

The lab's network is MAAS's default after install: fabric-0 with its untagged VLAN 5001, one subnet
127.0.2.0/24 on it, no space (MAAS lists the pseudo-space ``undefined``, id -1, for VLANs without one). Shapes
are those of MAAS's handlers' ``fields``; python-libmaas's viscera objects read them.
"""

from __future__ import annotations

import re
import time

from lab.maas_sim import model, render
from lab.maas_sim.api import Ctx, handler
from lab.maas_sim.api_ipranges import in_ranges
from lab.maas_sim.api_machines import _check_admin, _check_edit, get_machine
from lab.maas_sim.forms import NodeStateViolation, NotFound, ValidationError
from lab.maas_sim.net import CIDR, NET

API = render.API
fabrics = handler("FabricsHandler", "fabrics/", "Manage fabrics.")
fabric_h = handler("FabricHandler", "fabrics/{id}/", "Manage fabric.")
vlans = handler("VlansHandler", "fabrics/{fabric_id}/vlans/", "Manage VLANs on a fabric.")
vlan_h = handler("VlanHandler", "fabrics/{fabric_id}/vlans/{vid}/", "Manage a VLAN on a fabric.")
subnets = handler("SubnetsHandler", "subnets/", "Manage subnets.")
subnet_h = handler("SubnetHandler", "subnets/{id}/", "Manage subnet.")
spaces = handler("SpacesHandler", "spaces/", "Manage spaces.")
space_h = handler("SpaceHandler", "spaces/{id}/", "Manage space.")
ipaddresses = handler("IPAddressesHandler", "ipaddresses/", "Manage IP addresses allocated by MAAS.")
interfaces = handler("InterfacesHandler", "nodes/{system_id}/interfaces/", "Manage interfaces on a node.")
interface_h = handler("InterfaceHandler", "nodes/{system_id}/interfaces/{id}/", "Manage a node's interface.")
blockdevices = handler("BlockDevicesHandler", "nodes/{system_id}/blockdevices/", "Manage block devices on a machine.")
blockdevice_h = handler("BlockDeviceHandler", "nodes/{system_id}/blockdevices/{id}/", "Manage a block device.")
boot_resources = handler("BootResourcesHandler", "boot-resources/", "Manage the boot resources.")
boot_resource_h = handler("BootResourceHandler", "boot-resources/{id}/", "Manage a boot resource.")
boot_sources = handler("BootSourcesHandler", "boot-sources/", "Manage the collection of boot sources.")
boot_source_h = handler("BootSourceHandler", "boot-sources/{id}/", "Manage a boot source.")
selections = handler("BootSourceSelectionsHandler", "boot-sources/{boot_source_id}/selections/",
                     "Manage the collection of boot source selections.")  # fmt: skip
selection_h = handler("BootSourceSelectionHandler", "boot-sources/{boot_source_id}/selections/{id}/",
                      "Manage a boot source selection.")  # fmt: skip
events = handler("EventsHandler", "events/", "Retrieve filtered node events.")
sshkeys = handler("SSHKeysHandler", "account/prefs/sshkeys/", "Manage the SSH keys of the logged-in user.")
sshkey_h = handler("SSHKeyHandler", "account/prefs/sshkeys/{id}/", "Manage an SSH key.")
racks = handler("RackControllersHandler", "rackcontrollers/", "Manage the rack controllers.")
rack_h = handler("RackControllerHandler", "rackcontrollers/{system_id}/", "Manage an individual rack controller.")
regions = handler("RegionControllersHandler", "regioncontrollers/", "Manage the region controllers.")
region_h = handler("RegionControllerHandler", "regioncontrollers/{system_id}/",
                   "Manage an individual region controller.")  # fmt: skip
devices = handler("DevicesHandler", "devices/", "Manage devices.")
device_h = handler("DeviceHandler", "devices/{system_id}/", "Manage an individual device.")

SUBNET = render._SUBNET
VLAN = render._VLAN
RACK_ID = "rack01"
SERIES = {"focal": "20.04", "jammy": "22.04", "noble": "24.04"}
SSH_KEY_RE = re.compile(r"^(ssh-rsa|ssh-dss|ssh-ed25519|ecdsa-sha2-nistp(256|384|521)) [A-Za-z0-9+/]+={0,3}( .*)?$")


def _fabric() -> dict:
    return {"class_type": None, "name": "fabric-0", "id": 0, "vlans": [VLAN], "resource_uri": f"{API}/fabrics/0/"}


def _vlan() -> dict:
    return {**VLAN, "resource_uri": f"{API}/vlans/{VLAN['id']}/"}


def _subnet() -> dict:
    return {**SUBNET, "description": "", "disabled_boot_architectures": []}


def _undefined_space(store) -> dict:
    return {"id": -1, "name": "undefined", "vlans": [_vlan()], "subnets": [_subnet()] + _more_subnets(store),
            "resource_uri": f"{API}/spaces/-1/"}  # fmt: skip


# -- fabrics, VLANs, subnets, spaces --------------------------------------------------------------------------


@fabrics.action("GET")
def list_fabrics(ctx: Ctx):
    """List fabrics."""
    return [_fabric()]


@fabric_h.action("GET")
def read_fabric(ctx: Ctx, id: str):
    """A fabric."""
    if id != "0":
        raise NotFound("No Fabric matches the given query.")
    return _fabric()


@vlans.action("GET")
def list_vlans(ctx: Ctx, fabric_id: str):
    """The VLANs of a fabric."""
    read_fabric(ctx, fabric_id)
    return [_vlan()]


@vlan_h.action("GET")
def read_vlan(ctx: Ctx, fabric_id: str, vid: str):
    """A VLAN by its VID on a fabric."""
    read_fabric(ctx, fabric_id)
    if vid != str(VLAN["vid"]):
        raise NotFound("No VLAN matches the given query.")
    return _vlan()


def _more_subnets(store) -> list[dict]:
    """Subnets made for machines' other interfaces (control API ``nics``), on fabric-0's untagged VLAN."""
    return [{**render.subnet(s), "description": "", "disabled_boot_architectures": []}
            for _, s in sorted(store.subnets.items())]  # fmt: skip


@subnets.action("GET")
def list_subnets(ctx: Ctx):
    """List subnets."""
    return [_subnet()] + _more_subnets(ctx.store)


def _subnet_or_404(id: str, store=None) -> dict:
    # SubnetHandler takes an id or a specifier (cidr:, name:, ...)
    if id in {"1", f"cidr:{CIDR}", f"name:{CIDR}", CIDR}:
        return _subnet()
    for sub in _more_subnets(store) if store is not None else []:
        if id in {str(sub["id"]), f"cidr:{sub['cidr']}", f"name:{sub['name']}", sub["cidr"]}:
            return sub
    raise NotFound("No Subnet matches the given query.")


@subnet_h.action("GET")
def read_subnet(ctx: Ctx, id: str):
    """A subnet."""
    return _subnet_or_404(id, ctx.store)


@subnet_h.action("GET", "ip_addresses")
def subnet_ip_addresses(ctx: Ctx, id: str):
    """The addresses in use on a subnet."""
    sub = _subnet_or_404(id, ctx.store)
    import ipaddress as ipa

    net = ipa.ip_network(sub["cidr"])
    out = []
    for m in ctx.store.machines.values():
        for ip in (a for a in render.addresses(m) if ipa.ip_address(a) in net):
            out.append({"ip": ip, "alloc_type": 0, "alloc_type_name": "Automatic", "user": m.owner,
                        "node_summary": {"system_id": m.system_id, "node_type": 0, "fqdn": ctx.store.fqdn(m),
                                         "hostname": m.hostname, "via": "eth0"}})  # fmt: skip
    for r in ctx.store.reserved_ips.values():
        out.append({"ip": r["ip"], "alloc_type": 4, "alloc_type_name": "User reserved", "user": r["owner"]})
    return out


@spaces.action("GET")
def list_spaces(ctx: Ctx):
    """List spaces (with ``undefined`` for the VLANs in none)."""
    return [_undefined_space(ctx.store)]


@space_h.action("GET")
def read_space(ctx: Ctx, id: str):
    """A space."""
    if id not in ("-1", "undefined"):
        raise NotFound("No Space matches the given query.")
    return _undefined_space(ctx.store)


# -- IP addresses ------------------------------------------------------------------------------------------------


def _ipaddress(ctx: Ctx, ip: str, alloc_type: int, owner: str | None, iface: list) -> dict:
    names = {0: "Automatic", 1: "Static", 4: "User reserved", 5: "DHCP", 6: "Observed"}
    user = ctx.store.users.get(owner) if owner else None
    # the subnet of the link that holds the address (an address of another NIC is on that NIC's subnet)
    link = next((ln for i in iface for ln in i["links"] if ln.get("ip_address") == ip), None)
    sub = {**link["subnet"], "description": "", "disabled_boot_architectures": []} if link else _subnet()
    return {"alloc_type": alloc_type, "alloc_type_name": names[alloc_type], "created": "2026-01-01T00:00:00",
            "ip": ip, "subnet": sub, "interface_set": iface, "owner": render.user(user) if user else None,
            "temp_expires_on": None, "resource_uri": f"{API}/ipaddresses/"}  # fmt: skip


@ipaddresses.action("GET")
def list_ipaddresses(ctx: Ctx):
    """The caller's addresses: machines' AUTO addresses and reserved ones (all=true for an admin: everyone's)."""
    everyone = ctx.query.get("all", "").lower() in ("true", "1") and ctx.user["is_superuser"]
    out = []
    for m in ctx.store.machines.values():
        if everyone or m.owner == ctx.user["username"]:
            ifaces = render.interfaces(m)
            for ip in render.addresses(m):
                holder = [i for i in ifaces if any(ln.get("ip_address") == ip for ln in i["links"])]
                out.append(_ipaddress(ctx, ip, 0, m.owner, holder[:1] or [render.interface(m)]))
    for r in ctx.store.reserved_ips.values():
        if everyone or r["owner"] == ctx.user["username"]:
            out.append(_ipaddress(ctx, r["ip"], 4, r["owner"], []))
    return out


def _in_use(ctx: Ctx) -> set[str]:
    return {ip for m in ctx.store.machines.values() for ip in render.addresses(m)} | set(ctx.store.reserved_ips)


@ipaddresses.action("POST", "reserve")
def reserve_ip(ctx: Ctx):
    """Reserve an address (ip, subnet, hostname, mac): User reserved, held until released."""
    import ipaddress as ipa

    ip, subnet = ctx.data.get("ip"), ctx.data.get("subnet")
    if subnet is not None:
        _subnet_or_404(subnet)
    net = ipa.ip_network(SUBNET["cidr"])
    if ip:
        try:
            addr = ipa.ip_address(ip)
        except ValueError:
            raise ValidationError({"ip": ["Enter a valid IPv4 or IPv6 address."]}) from None
        if addr not in net:
            raise ValidationError({"ip": [f"IP address {ip} is not within any known subnet."]}) from None
        if ip in _in_use(ctx) or ip == SUBNET["gateway_ip"]:
            raise ValidationError({"ip": [f"The IP address {ip} is already in use."]})
    else:
        # Subnet.get_next_ip_for_allocation: never an address of a dynamic or reserved IP range
        free = [
            str(h)
            for h in net.hosts()
            if str(h) not in _in_use(ctx) and str(h) != SUBNET["gateway_ip"] and not in_ranges(ctx.store, str(h))
        ]
        if not free:
            raise ValidationError({"subnet": [f"No more IPs available in subnet: {CIDR}."]})
        ip = free[-1]
    ctx.store.reserved_ips[ip] = {"ip": ip, "owner": ctx.user["username"], "hostname": ctx.data.get("hostname")}
    return _ipaddress(ctx, ip, 4, ctx.user["username"], [])


@ipaddresses.action("POST", "release")
def release_ip(ctx: Ctx):
    """Release a reserved address (ip)."""
    ip = ctx.data.get("ip")
    r = ctx.store.reserved_ips.get(ip)
    if r is None or (r["owner"] != ctx.user["username"] and not ctx.user["is_superuser"]):
        raise NotFound(f"IP address {ip} does not exist or is not owned by you.")
    del ctx.store.reserved_ips[ip]
    return None


# -- a machine's interfaces and block devices ---------------------------------------------------------------------


@interfaces.action("GET")
def list_interfaces(ctx: Ctx, system_id: str):
    """A node's interfaces."""
    return render.interfaces(get_machine(ctx.store, system_id))


@interface_h.action("GET")
def read_interface(ctx: Ctx, system_id: str, id: str):
    """One interface (by id or name)."""
    m = get_machine(ctx.store, system_id)
    for iface in render.interfaces(m):
        if str(iface["id"]) == id or iface["name"] == id:
            return iface
    raise NotFound("No Interface matches the given query.")


# Interfaces can be changed only in these states (Node.is_... / NodeInterfaceForm's check)
_EDITABLE = {model.READY, model.ALLOCATED, model.BROKEN, model.NEW, model.FAILED_COMMISSIONING,
             model.FAILED_TESTING}  # fmt: skip


@interfaces.action("POST", "create_bridge")
def create_bridge(ctx: Ctx, system_id: str):
    """Create a bridge on a parent interface (name, parent, bridge_type, bridge_stp, bridge_fd); the
    parent's links move to the bridge."""
    m = get_machine(ctx.store, system_id)
    _check_edit(ctx, m)
    if m.status not in _EDITABLE:
        raise NodeStateViolation(
            f"Cannot create bridge interface because the machine is not Ready, Allocated, or Broken."
            f" (current state: {model.STATUS_NAMES[m.status]})"
        )
    parent = ctx.data.get("parent")
    errors = {}
    if parent in (None, ""):
        errors["parent"] = ["This field is required."]
    elif parent not in (str(m.interface_id), m.interface_name):
        errors["parent"] = [f"Select a valid choice. {parent} is not one of the available choices."]
    elif m.bridges:
        errors["parent"] = ["A bridge can only have one parent that is not already a bridge member."]
    name = ctx.data.get("name") or f"br-{m.interface_name}"
    if any(i["name"] == name for i in render.interfaces(m)):
        errors["name"] = [f"Interface with name '{name}' already exists on this node."]
    bridge_type = ctx.data.get("bridge_type", "standard")
    if bridge_type not in ("standard", "ovs"):
        errors["bridge_type"] = [f"Select a valid choice. {bridge_type} is not one of the available choices."]
    if errors:
        raise ValidationError(errors)
    params = {"bridge_type": bridge_type, "bridge_stp": ctx.data.get("bridge_stp", "false").lower() == "true",
              "bridge_fd": int(ctx.data.get("bridge_fd") or 15)}  # fmt: skip
    bridge = {"id": ctx.store.next_id("iface"), "name": name, "params": params}
    m.bridges.append(bridge)
    return read_interface(ctx, system_id, str(bridge["id"]))


def _boot_iface(ctx: Ctx, system_id: str, id: str):
    m = get_machine(ctx.store, system_id)
    _check_edit(ctx, m)
    if id not in (str(m.interface_id), m.interface_name) or m.bridges:
        raise NotFound("No Interface matches the given query.")
    if m.status not in _EDITABLE:
        raise NodeStateViolation(
            "Cannot change interface links because the machine is not Ready, Allocated, or Broken."
            f" (current state: {model.STATUS_NAMES[m.status]})"
        )
    return m


def _taken_by_others(ctx: Ctx, m) -> set[str]:
    # every machine here holds its address from the start (MAAS would hand it out at deploy): count them all
    return ctx.store.all_ips(but=m) | set(ctx.store.reserved_ips)


@interface_h.action("POST", "link_subnet")
def link_subnet(ctx: Ctx, system_id: str, id: str):
    """Link the interface to a subnet: mode AUTO, DHCP, STATIC (ip_address), LINK_UP; default_gateway."""
    import ipaddress as ipa

    m = _boot_iface(ctx, system_id, id)
    d = ctx.data
    mode = (d.get("mode") or "").lower()
    errors = {}
    if mode not in ("auto", "dhcp", "static", "link_up"):
        errors["mode"] = [f"Select a valid choice. {d.get('mode')} is not one of the available choices."]
    if mode in ("auto", "static") and not d.get("subnet"):
        errors["subnet"] = ["This field is required."]
    elif d.get("subnet"):
        try:
            _subnet_or_404(d.get("subnet"))
        except NotFound:
            errors["subnet"] = [f"Select a valid choice. {d.get('subnet')} is not one of the available choices."]
    ip = d.get("ip_address")
    if mode == "static" and ip and not errors:
        try:
            inside = ipa.ip_address(ip) in ipa.ip_network(SUBNET["cidr"])
        except ValueError:
            inside = None
        if inside is None:
            errors["ip_address"] = ["Enter a valid IPv4 or IPv6 address."]
        elif not inside:
            errors["ip_address"] = [f"IP address is not in the given subnet '{SUBNET['cidr']}'."]
        elif ip in _taken_by_others(ctx, m) or ip == SUBNET["gateway_ip"]:
            errors["ip_address"] = [f"IP address ({ip}) is already in use."]
    if m.link_mode is not None and not errors:
        errors["subnet"] = ["Interface is already linked to this subnet; unlink it first."]
    if errors:
        raise ValidationError(errors)
    if mode == "static":
        m.ip = ip or next(h for h in (f"{NET}.{n}" for n in range(253, 100, -1)) if h not in _taken_by_others(ctx, m))
    m.link_mode = mode
    m.link_id = ctx.store.next_id("ip")
    return render.interface(m)


@interface_h.action("POST", "unlink_subnet")
def unlink_subnet(ctx: Ctx, system_id: str, id: str):
    """Remove a link (id) from the interface."""
    m = _boot_iface(ctx, system_id, id)
    if m.link_mode is None or ctx.data.get("id") != str(m.link_id):
        raise ValidationError({"id": [f"Select a valid choice. {ctx.data.get('id')} is not one of the available "
                                      "choices."]})  # fmt: skip
    m.link_mode = None
    return render.interface(m)


@blockdevices.action("GET")
def list_blockdevices(ctx: Ctx, system_id: str):
    """A machine's block devices."""
    return [render.disk(get_machine(ctx.store, system_id))]


@blockdevice_h.action("GET")
def read_blockdevice(ctx: Ctx, system_id: str, id: str):
    """One block device (by id or name)."""
    disk = render.disk(get_machine(ctx.store, system_id))
    if id not in (str(disk["id"]), disk["name"]):
        raise NotFound("No BlockDevice matches the given query.")
    return disk


# -- boot resources and sources ------------------------------------------------------------------------------------


def _boot_resources(store) -> list[dict]:
    out = []
    for n, series in enumerate(sorted(SERIES), start=1):
        out.append({"id": n, "type": "Synced", "name": f"ubuntu/{series}", "architecture": "amd64/ga-" + SERIES[series],
                    "subarches": "generic,ga-" + SERIES[series], "title": f"Ubuntu {SERIES[series]} LTS",
                    "resource_uri": f"{API}/boot-resources/{n}/"})  # fmt: skip
    return out


@boot_resources.action("GET")
def list_boot_resources(ctx: Ctx):
    """The images MAAS can deploy (type=synced|uploaded to filter)."""
    kind = (ctx.query.get("type") or "").lower()
    return [r for r in _boot_resources(ctx.store) if not kind or r["type"].lower() == kind]


@boot_resource_h.action("GET")
def read_boot_resource(ctx: Ctx, id: str):
    """A boot resource, with its sets."""
    for r in _boot_resources(ctx.store):
        if str(r["id"]) == id:
            return {**r, "sets": {}}
    raise NotFound("No BootResource matches the given query.")


_SOURCE = {"id": 1, "url": "http://images.maas.io/ephemeral-v3/stable/",
           "keyring_filename": "/usr/share/keyrings/ubuntu-cloudimage-keyring.gpg", "keyring_data": "",
           "created": "2026-01-01T00:00:00.000", "updated": "2026-01-01T00:00:00.000",
           "resource_uri": f"{API}/boot-sources/1/"}  # fmt: skip


@boot_sources.action("GET")
def list_boot_sources(ctx: Ctx):
    """Boot sources."""
    _check_admin(ctx)
    return [_SOURCE]


@boot_source_h.action("GET")
def read_boot_source(ctx: Ctx, id: str):
    """A boot source."""
    _check_admin(ctx)
    if id != "1":
        raise NotFound("No BootSource matches the given query.")
    return _SOURCE


def _selections() -> list[dict]:
    # what the synced images were selected by: one selection per Ubuntu release, every arch of it imported
    return [{"boot_source_id": 1, "id": n, "os": "ubuntu", "release": series, "arches": ["amd64"],
             "subarches": ["*"], "labels": ["*"], "resource_uri": f"{API}/boot-sources/1/selections/{n}/"}
            for n, series in enumerate(sorted(SERIES), start=1)]  # fmt: skip


@selections.action("GET")
def list_selections(ctx: Ctx, boot_source_id: str):
    """A boot source's selections (admin)."""
    read_boot_source(ctx, boot_source_id)
    return _selections()


@selection_h.action("GET")
def read_selection(ctx: Ctx, boot_source_id: str, id: str):
    """A boot source selection (admin)."""
    read_boot_source(ctx, boot_source_id)
    for sel in _selections():
        if str(sel["id"]) == id:
            return sel
    raise NotFound("No BootSourceSelection matches the given query.")


# -- events -----------------------------------------------------------------------------------------------------


@events.action("GET", "query")
def query_events(ctx: Ctx):
    """Node events, newest first: id, hostname, level, limit (default 100), before, after."""
    q = ctx.query
    ids, hostnames = set(q.getlist("id")), set(q.getlist("hostname"))
    limit = int(q.get("limit") or 100)
    rows = []
    for m in ctx.store.machines.values():
        if (ids and m.system_id not in ids) or (hostnames and m.hostname not in hostnames):
            continue
        for n, (when, before, after) in enumerate(m.history):
            rows.append({"username": m.owner or "", "node": m.system_id, "hostname": m.hostname,
                         "id": int(when * 1000) * 100 + n, "level": "INFO",
                         "created": time.strftime("%a, %d %b. %Y %H:%M:%S", time.gmtime(when)),
                         "type": after, "description": f"{before} -> {after}"})  # fmt: skip
    rows.sort(key=lambda r: r["id"], reverse=True)
    if q.get("before"):
        rows = [r for r in rows if r["id"] < int(q.get("before"))]
    if q.get("after"):
        rows = [r for r in rows if r["id"] > int(q.get("after"))]
    rows = rows[:limit]
    return {"count": len(rows), "events": rows, "next_uri": f"{API}/events/?op=query&after=" + (
        str(rows[0]["id"]) if rows else "0"), "prev_uri": f"{API}/events/?op=query&before=" + (
        str(rows[-1]["id"]) if rows else "0")}  # fmt: skip


# -- SSH keys ----------------------------------------------------------------------------------------------------


def _sshkey(k: dict) -> dict:
    return {
        "id": k["id"],
        "key": k["key"],
        "keysource": None,
        "resource_uri": f"{API}/account/prefs/sshkeys/{k['id']}/",
    }


@sshkeys.action("GET")
def list_sshkeys(ctx: Ctx):
    """The caller's SSH keys."""
    return [_sshkey(k) for k in ctx.store.sshkeys.values() if k["username"] == ctx.user["username"]]


@sshkeys.action("POST")
def create_sshkey(ctx: Ctx):
    """Add an SSH public key (key)."""
    key = (ctx.data.get("key") or "").strip()
    if not key:
        raise ValidationError({"key": ["This field is required."]})
    if not SSH_KEY_RE.match(key):
        raise ValidationError({"key": ["Invalid SSH public key: " + key]})
    if any(k["key"] == key and k["username"] == ctx.user["username"] for k in ctx.store.sshkeys.values()):
        raise ValidationError({"__all__": ["This key has already been added for this user."]})
    k = {"id": ctx.store.next_id("sshkey"), "key": key, "username": ctx.user["username"]}
    ctx.store.sshkeys[k["id"]] = k
    return _sshkey(k)


def _own_key(ctx: Ctx, id: str) -> dict:
    k = ctx.store.sshkeys.get(int(id)) if id.isdigit() else None
    if k is None or k["username"] != ctx.user["username"]:
        raise NotFound("No SSHKey matches the given query.")
    return k


@sshkey_h.action("GET")
def read_sshkey(ctx: Ctx, id: str):
    """An SSH key."""
    return _sshkey(_own_key(ctx, id))


@sshkey_h.action("DELETE")
def delete_sshkey(ctx: Ctx, id: str):
    """Delete an SSH key."""
    del ctx.store.sshkeys[_own_key(ctx, id)["id"]]
    return None


# -- rack controllers and devices ----------------------------------------------------------------------------------


def _rack(store) -> dict:
    # one host running both, as a MAAS installed from the snap is: listed by both controller handlers
    domain = render.domain(store, store.domains[store.default_domain])
    services = ("regiond", "rackd", "bind9", "ntp_region", "proxy", "syslog_region", "temporal")
    return {"system_id": RACK_ID, "hostname": "maas-rack", "fqdn": f"maas-rack.{domain['name']}", "domain": domain,
            "node_type": 4, "node_type_name": "Region and rack controller", "architecture": "amd64/generic",
            "cpu_count": 4, "memory": 8192, "osystem": "ubuntu", "distro_series": "jammy", "power_state": "unknown",
            "power_type": "", "ip_addresses": [SUBNET["gateway_ip"]], "interface_set": [], "zone": render.zone(
                store.zones["default"]), "tag_names": [], "version": "3.5.0", "service_set": [
                {"name": n, "status": "running", "status_info": ""} for n in services],
            "description": "", "resource_uri": f"{API}/rackcontrollers/{RACK_ID}/"}  # fmt: skip


@racks.action("GET")
def list_racks(ctx: Ctx):
    """Rack controllers."""
    return [_rack(ctx.store)]


@rack_h.action("GET")
def read_rack(ctx: Ctx, system_id: str):
    """A rack controller."""
    if system_id != RACK_ID:
        raise NotFound("No RackController matches the given query.")
    return _rack(ctx.store)


@regions.action("GET")
def list_regions(ctx: Ctx):
    """Region controllers (the rack controller's host is the region too)."""
    return [{**_rack(ctx.store), "resource_uri": f"{API}/regioncontrollers/{RACK_ID}/"}]


@region_h.action("GET")
def read_region(ctx: Ctx, system_id: str):
    """A region controller."""
    if system_id != RACK_ID:
        raise NotFound("No RegionController matches the given query.")
    return list_regions(ctx)[0]


def _device(store, d: dict) -> dict:
    domain = store.domains[d["domain"]]
    return {"system_id": d["system_id"], "hostname": d["hostname"], "fqdn": f"{d['hostname']}.{domain['name']}",
            "domain": render.domain(store, domain), "node_type": 1, "node_type_name": "Device",
            "owner": d["owner"], "owner_data": {}, "parent": d["parent"], "zone": render.zone(store.zones[d["zone"]]),
            "tag_names": [], "ip_addresses": [], "address_ttl": None, "description": d["description"],
            "interface_set": [{"id": d["iface"], "name": "eth0", "type": "physical", "mac_address": mac,
                               "links": [], "vlan": None, "tags": [], "enabled": True, "params": "",
                               "parents": [], "children": [], "system_id": d["system_id"], "effective_mtu": 1500}
                              for mac in d["macs"]],
            "resource_uri": f"{API}/devices/{d['system_id']}/"}  # fmt: skip


@devices.action("GET")
def list_devices(ctx: Ctx):
    """Devices (hostname, mac_address, id filters)."""
    q = ctx.query
    ids, names, macs = set(q.getlist("id")), set(q.getlist("hostname")), {x.lower() for x in q.getlist("mac_address")}
    out = []
    for d in ctx.store.devices.values():
        if (ids and d["system_id"] not in ids) or (names and d["hostname"] not in names):
            continue
        if macs and not macs & set(d["macs"]):
            continue
        out.append(_device(ctx.store, d))
    return out


@devices.action("POST")
def create_device(ctx: Ctx):
    """Create a device (hostname, mac_addresses, domain, parent)."""
    from lab.maas_sim import constraints
    from lab.maas_sim.api_machines import HOSTNAME_RE

    d = ctx.data
    macs = [x.lower().replace("-", ":") for x in d.getlist("mac_addresses")]
    errors = {}
    if not macs:
        errors["mac_addresses"] = ["This field is required."]
    bad = [x for x in macs if not constraints.MAC_RE.match(x)]
    if bad:
        errors["mac_addresses"] = [f"'{bad[0]}' is not a valid MAC address."]
    hostname = d.get("hostname") or f"device-{ctx.store.next_id('device')}"
    if not HOSTNAME_RE.match(hostname):
        errors["hostname"] = [f"Invalid hostname: {hostname!r}"]
    parent = d.get("parent")
    if parent and parent not in ctx.store.machines:
        errors["parent"] = [f"Select a valid choice. {parent} is not one of the available choices."]
    domain = ctx.store.default_domain
    if d.get("domain"):
        found = ctx.store.domain_by_name(d.get("domain"))
        if found is None:
            errors["domain"] = ["Select a valid choice. That choice is not one of the available choices."]
        else:
            domain = found["id"]
    if errors:
        raise ValidationError(errors)
    system_id = model._rand_id(ctx.store.rng, set(ctx.store.machines) | set(ctx.store.devices))
    dev = {"system_id": system_id, "hostname": hostname, "macs": macs, "domain": domain, "parent": parent,
           "owner": ctx.user["username"], "zone": "default", "description": d.get("description", ""),
           "iface": ctx.store.next_id("iface")}  # fmt: skip
    ctx.store.devices[system_id] = dev
    return _device(ctx.store, dev)


def _dev(ctx: Ctx, system_id: str) -> dict:
    dev = ctx.store.devices.get(system_id)
    if dev is None:
        raise NotFound("No Device matches the given query.")
    return dev


@device_h.action("GET")
def read_device(ctx: Ctx, system_id: str):
    """A device."""
    return _device(ctx.store, _dev(ctx, system_id))


@device_h.action("DELETE")
def delete_device(ctx: Ctx, system_id: str):
    """Delete a device."""
    del ctx.store.devices[_dev(ctx, system_id)["system_id"]]
    return None
