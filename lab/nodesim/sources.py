"""Where the node simulator sees hosts: the lab's Ironic and the MAAS simulator.

A ``Host`` is one machine as the simulator needs it: is it provisioned (an
instance is on its disk), is it up (provisioned and powered on), which
instance (a new deploy is a new instance: cloud-init runs again), its address,
and a way to read its user data and meta_data where the host itself would
find them:

- redfish Ironic nodes: the config drive on the BMC's virtual media (the ISO
  the emulated BMC downloaded when Ironic inserted it);
- fake-hardware Ironic nodes: the config drive Ironic keeps for the node
  (``instance_info.configdrive``: the dict it was given or a gzip+base64 ISO).
  Ironic's API masks it (policy ``show_instance_secrets`` is "!" by default),
  so it is read from Ironic's database (lab.ironic.iso.stored_config_drive),
  the rendered data the lab can see; fake-hardware has no power of its own
  until someone sets it, so a deployed node whose power is unknown counts as on;
- MAAS simulator machines in Deployed: the user data MAAS holds for the
  machine and MAAS's own meta_data (instance-id = system_id, local-hostname).
"""

from __future__ import annotations

import base64
import json
import urllib.request
from dataclasses import dataclass
from typing import Callable

from lab.config import LabConfig


@dataclass
class Host:
    key: str  # "ironic/<uuid>" or "maas/<system_id>"
    name: str
    provisioned: bool
    powered_on: bool
    instance: str | None  # changes with every new deploy
    ip: str | None
    system_uuid: str | None = None
    busy: bool = False  # Ironic's conductor holds the node (a power action or a state change under way)
    read: Callable[[], tuple[bytes | None, dict, dict | None]] | None = None  # -> (user_data, meta_data, network_data)
    # where ``read`` finds the data: "disk" (the config drive the agent wrote), "virtual-media" (the BMC's),
    # "lab" (what the lab can see of a fake-hardware or MAAS host)
    source: str = "lab"

    @property
    def up(self) -> bool:
        return self.provisioned and self.powered_on


class SourceError(RuntimeError):
    pass


# --- Ironic -------------------------------------------------------------------


def ironic_connection(cfg: LabConfig):
    import openstack

    return openstack.connection.Connection(
        auth_type="none",
        baremetal_endpoint_override=f"http://{cfg.host}:{cfg.ports.ironic}",
        # 1.56: config drives given as a dict (what baremetal-operator sends)
        baremetal_api_version="1.78",
    )


def _lab_ips_by_mac(cfg: LabConfig) -> dict[str, str]:
    try:
        from lab.ironic import hosts

        return {h.mac.lower(): h.ip for h in hosts.all_hosts(net=cfg.net(1))}
    except (ImportError, ValueError):
        return {}


def _network_ip(network_data: dict | None) -> str | None:
    for net in (network_data or {}).get("networks") or []:
        if net.get("ip_address") and ":" not in net["ip_address"]:
            return net["ip_address"]
    return None


def _fake_reader(cfg: LabConfig, node: dict):
    def read():
        from lab.ironic import iso

        drive = iso.stored_config_drive(cfg, node["uuid"])
        if drive is None:
            raise SourceError(f"Ironic node {node['uuid']}: no config drive in instance_info")
        # what Ironic's build_configdrive adds to the dict form's meta_data on the ISO
        meta = dict(drive.get("meta_data") or {})
        meta.setdefault("uuid", node["uuid"])
        if node.get("name"):
            meta.setdefault("name", node["name"])
        user = drive.get("user_data")
        if isinstance(user, (dict, list)):
            user = json.dumps(user).encode()
        return user, meta, drive.get("network_data")

    return read


def _redfish_reader(cfg: LabConfig, system_uuid: str):
    def read():
        from lab.ironic import iso

        for device in iso.virtual_media(cfg, system_uuid).values():
            if not device.get("Inserted"):
                continue
            try:
                path = iso.media_file(cfg, device)
            except LookupError:
                continue
            if iso.iso_volume_id(path) == "config-2":
                parsed = iso.read_config_drive(path)
                return parsed["user_data"], parsed["meta_data"] or {}, parsed["network_data"]
        raise SourceError(f"system {system_uuid}: no config drive (volume config-2) on the BMC's virtual media")

    return read


def _disk_reader(cfg: LabConfig, system_uuid: str):
    """The config drive the agent wrote to the host's own disk (the direct deploy interface)."""

    def read():
        from lab.ironic import hosts, iso
        from lab.nodesim import agent

        host = next((h for h in hosts.all_hosts(net=cfg.net(1)) if h.uuid == system_uuid), None)
        dev = agent.loop_of(agent.disk_file(cfg, host.name)) if host else None
        if dev is None:
            raise SourceError(f"system {system_uuid}: no disk attached")
        part = agent.config_drive_partition(dev)
        if part is None:
            raise SourceError(f"system {system_uuid}: no config drive partition (config-2) on its disk {dev}")
        parsed = iso.read_config_drive(part)
        return parsed["user_data"], parsed["meta_data"] or {}, parsed["network_data"]

    return read


def _ipmi_system(cfg: LabConfig, info: dict) -> str | None:
    """The emulated machine behind an ipmi node's BMC (the lab's virtualbmc at ipmi_address:ipmi_port), if any."""
    from lab.ironic import hosts

    try:
        host = hosts.ipmi_host_at(cfg, info.get("ipmi_address") or "", info.get("ipmi_port"))
    except ValueError:
        return None
    return host.uuid if host else None


def ironic_hosts(cfg: LabConfig, conn) -> list[Host]:
    # the raw listing: provision_updated_at (not on openstacksdk's Node) tells one deploy from the next
    resp = conn.baremetal.get("/nodes/detail", microversion="1.78")
    resp.raise_for_status()
    nodes = resp.json()["nodes"]
    ports = {}
    presp = conn.baremetal.get("/ports/detail", microversion="1.78")
    if presp.ok:
        for port in presp.json()["ports"]:
            ports.setdefault(port["node_uuid"], port["address"].lower())
    by_mac = _lab_ips_by_mac(cfg)
    out = []
    for node in nodes:
        provisioned = node["provision_state"] == "active"
        system_uuid = None
        if node["driver"] == "redfish":
            system_id = (node.get("driver_info") or {}).get("redfish_system_id") or ""
            system_uuid = system_id.rstrip("/").rsplit("/", 1)[-1] or None
        elif node["driver"] == "ipmi":
            system_uuid = _ipmi_system(cfg, node.get("driver_info") or {})
        if system_uuid and node.get("deploy_interface") == "direct":
            reader, source = _disk_reader(cfg, system_uuid), "disk"
        elif system_uuid:
            reader, source = _redfish_reader(cfg, system_uuid), "virtual-media"
        else:
            reader, source = _fake_reader(cfg, node), "lab"
        out.append(
            Host(
                key=f"ironic/{node['uuid']}",
                name=node.get("name") or node["uuid"],
                provisioned=provisioned,
                powered_on=node.get("power_state") == "power on"
                or (node["driver"] == "fake-hardware" and node.get("power_state") is None),
                instance=f"{node['uuid']}@{node.get('provision_updated_at')}" if provisioned else None,
                ip=by_mac.get(ports.get(node["uuid"], "")),
                system_uuid=system_uuid,
                busy=bool(node.get("reservation")),
                read=reader,
                source=source,
            )
        )
    return out


# --- MAAS simulator -------------------------------------------------------------


def maas_hosts(cfg: LabConfig) -> list[Host]:
    url = f"http://{cfg.host}:{cfg.ports.maas}/MAAS/_sim/machines"
    with urllib.request.urlopen(url, timeout=10) as resp:
        machines = json.load(resp)
    out = []
    for m in machines:
        provisioned = m["status_name"] == "Deployed"
        deployed_at = None
        for when, _before, after in m.get("history") or []:
            if after == "Deployed":
                deployed_at = when
        meta = {"instance-id": m["system_id"], "local-hostname": m["hostname"]}

        def read(m=m, meta=meta):
            data = m.get("user_data_b64")
            return (base64.b64decode(data) if data else None), meta, None

        out.append(
            Host(
                key=f"maas/{m['system_id']}",
                name=m["hostname"],
                provisioned=provisioned,
                powered_on=m.get("power_state") == "on",
                instance=f"{m['system_id']}@{deployed_at}" if provisioned else None,
                ip=m.get("ip"),
                read=read,
            )
        )
    return out
