"""The lab's emulated machines and the inventory that tells playbooks and tests how to reach them.

Every host is a sushy-tools fake system. Its identity is derived from its index only,
so a host keeps its UUID, MAC and name across `down`/`up`, `reset` and clones.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass
from pathlib import Path

from lab.config import LabConfig

# Fixed namespace: the same index always gives the same system UUID.
_NAMESPACE = uuid.UUID("6b1e4d0a-9c55-4b7e-a3f1-2f0c6d7e8a90")

# The BMC credentials every emulated BMC accepts (sushy-tools basic/session auth).
BMC_USERNAME = "admin"
BMC_PASSWORD = "lab-bmc-password"

# MAC prefix from the sushy-tools fake driver's own example system.
_MAC_PREFIX = "00:5c:52:31:3a"


# What every emulated host is, as its agent ramdisk reports it (lab/ipa/bmcapi_lab_ipa.py): the
# emulator's fake systems carry only NICs, so CPU, memory and the disk are the lab's own figures,
# the same for every host. The disk is a sparse file per host on a loop device (lab.nodesim.agent).
CPU = {"arch": "x86_64", "model": "baremetal.capi lab CPU", "mhz": 2400, "count": 2, "flags": ["lm", "sse4_2", "vmx"]}
MEMORY_MIB = 4096
DISK_BYTES = 8 * 1024**3
DISK_MODEL, DISK_VENDOR = "lab-disk", "BMCAPI"
SYSTEM_VENDOR = {
    "manufacturer": "baremetal.capi lab",
    "product": "sushy-tools fake system",
    "bios_vendor": "baremetal.capi lab",
    "bios_version": "1.0",
    "bios_date": "2026-01-01",
}
NIC_NAME = "enp1s0"


def disk_serial(index: int) -> str:
    return f"LABDISK{index:04d}"


@dataclass(frozen=True)
class Host:
    index: int
    name: str
    uuid: str
    mac: str
    ip: str


def host_count() -> int:
    count = int(os.environ.get("BMCAPI_LAB_HOSTS", "12"))
    # the index is the last byte of the MAC and of the 127.0.1.N address; the IPMI host takes the next one
    if not 1 <= count <= 254 - IPMI_HOSTS:
        raise ValueError(f"BMCAPI_LAB_HOSTS must be between 1 and {254 - IPMI_HOSTS}, not {count}")
    return count


def _host(i: int, net: str) -> Host:
    return Host(
        index=i,
        name=f"host-{i:02d}",
        uuid=str(uuid.uuid5(_NAMESPACE, f"host-{i}")),
        mac=f"{_MAC_PREFIX}:{i:02x}",
        ip=f"{net}.{i}",
    )


def hosts(count: int | None = None, net: str = "127.0.1") -> list[Host]:
    """The emulated Redfish hosts; host N on ``<net>.N`` (the lab's ``cfg.net(1)``)."""
    count = host_count() if count is None else count
    return [_host(i, net) for i in range(1, count + 1)]


# The IPMI hosts come after the Redfish ones (host-13 with the default 12): machines of the same emulator, whose
# BMC is a virtualbmc answering IPMI (lab/ironic/vbmc.py) on 127.A.11.N, port ``ports.ipmi`` (UDP).
IPMI_HOSTS = 1
IPMI_BMC_NET = 11


def ipmi_hosts(count: int | None = None, net: str = "127.0.1") -> list[Host]:
    first = (host_count() if count is None else count) + 1
    return [_host(i, net) for i in range(first, first + IPMI_HOSTS)]


def all_hosts(count: int | None = None, net: str = "127.0.1") -> list[Host]:
    """Every emulated machine, Redfish and IPMI hosts."""
    return hosts(count, net) + ipmi_hosts(count, net)


def ipmi_bmc(cfg: LabConfig, host: Host) -> tuple[str, int]:
    """(address, UDP port) of an IPMI host's BMC in this lab."""
    return f"{cfg.net(IPMI_BMC_NET)}.{host.index}", cfg.ports.ipmi


def ipmi_host_at(cfg: LabConfig, address: str, port) -> Host | None:
    """The lab's IPMI host whose BMC is at ``address``:``port`` (an Ironic node's ipmi_address / ipmi_port)."""
    for h in ipmi_hosts(net=cfg.net(1)):
        if ipmi_bmc(cfg, h) == (address, int(port or 623)):
            return h
    return None


def sushy_systems(count: int | None = None, net: str = "127.0.1") -> list[dict]:
    """SUSHY_EMULATOR_FAKE_SYSTEMS entries: the machines of every host, the IPMI ones too (their state)."""
    return [
        {
            "uuid": h.uuid,
            "name": h.name,
            "power_state": "Off",
            # True would PUT every state change to EXTERNAL_NOTIFICATION_URL (a fake-IPA hook nobody serves)
            "external_notifier": False,
            "nics": [{"mac": h.mac, "ip": h.ip}],
        }
        for h in all_hosts(count, net)
    ]


def inventory(cfg: LabConfig, count: int | None = None) -> dict:
    host = cfg.host
    proxy = f"http://{host}:{cfg.ports.bmc_proxy}"
    sushy = f"http://{host}:{cfg.ports.sushy}"
    images = f"http://{host}:{cfg.ports.images}"
    ironic = f"http://{host}:{cfg.ports.ironic}"
    folder = cfg.data("ironic") / "httproot" / "images"

    def digest(name: str) -> str | None:
        path = folder / name
        return path.read_text().split()[0] if path.exists() else None

    return {
        "ironic": {
            "url": ironic,
            "auth_type": "none",
            "cloud": "lab-ironic",
            "clouds_yaml": str(cfg.root / "inventory" / "clouds.yaml"),
        },
        "images": {
            "url": images,
            # a small ISO9660 image: instance_info.boot_iso for the ramdisk deploy interface
            "boot_iso": f"{images}/images/boot.iso",
            # the agent ramdisk as virtual media (BMO's DEPLOY_ISO_URL): the agent path's deploy_iso
            "ipa_iso": f"{images}/images/ipa.iso",
            # the same agent as a kernel and an initramfs (BMO's DEPLOY_KERNEL_URL / DEPLOY_RAMDISK_URL): what hosts
            # without virtual media (the IPMI host) network-boot
            "ipa_kernel": f"{images}/images/ipa.kernel",
            "ipa_ramdisk": f"{images}/images/ipa.initramfs",
            "test_image": {
                "url": f"{images}/images/test-image.raw",
                "checksum": digest("test-image.raw.sha256"),
                "checksumType": "sha256",
                "format": "raw",
            },
            # a whole-disk image with a partition table, for the agent to write (and add its config drive to)
            "agent_image": {
                "url": f"{images}/images/agent-image.raw",
                "checksum": digest("agent-image.raw.sha256"),
                "checksumType": "sha256",
                "format": "raw",
            },
        },
        "bmc_proxy": {"url": proxy, "faults": f"{proxy}/lab/faults"},
        "sushy": {"url": sushy},
        "bmc_credentials": {"username": BMC_USERNAME, "password": BMC_PASSWORD},
        "hosts": [
            {
                "name": h.name,
                "uuid": h.uuid,
                "boot_mac": h.mac,
                "ip": h.ip,
                "bmc": {
                    # through the fault proxy, as a BareMetalHost's spec.bmc.address
                    "address": f"redfish-virtualmedia+{proxy}/redfish/v1/Systems/{h.uuid}",
                    "username": BMC_USERNAME,
                    "password": BMC_PASSWORD,
                },
                "system_url": f"{sushy}/redfish/v1/Systems/{h.uuid}",
            }
            for h in hosts(count, cfg.net(1))
        ],
        # behind virtualbmc (IPMI): boots the agent over the network (iPXE), no virtual media
        "ipmi_hosts": [
            {
                "name": h.name,
                "uuid": h.uuid,
                "boot_mac": h.mac,
                "ip": h.ip,
                "bmc": {
                    "address": "ipmi://{}:{}".format(*ipmi_bmc(cfg, h)),
                    "username": BMC_USERNAME,
                    "password": BMC_PASSWORD,
                },
                "system_url": f"{sushy}/redfish/v1/Systems/{h.uuid}",
            }
            for h in ipmi_hosts(count, cfg.net(1))
        ],
        # lab-only: a fake://<anything> BMC address means an Ironic fake-hardware node (docs/lab.md)
        "fake_bmc": {"scheme": "fake", "driver": "fake-hardware"},
    }


def _replace(path: Path, text: str, mode: int) -> None:
    """``path`` holds ``text``, written whole or not at all: the lab's bringup runs in every test process at once,
    and a playbook of one may read the file while another writes it."""
    try:
        if path.read_text() == text:
            return
    except OSError:
        pass
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(text)
    tmp.chmod(mode)
    tmp.replace(path)


def write_inventory(cfg: LabConfig, count: int | None = None) -> Path:
    inv = inventory(cfg, count)
    folder = cfg.root / "inventory"
    folder.mkdir(parents=True, exist_ok=True)
    # clouds.yaml for OS_CLIENT_CONFIG_FILE / OS_CLOUD, the variables AWX's OpenStack credential sets
    clouds = (
        "clouds:\n"
        f"  {inv['ironic']['cloud']}:\n"
        "    auth_type: none\n"
        f"    baremetal_endpoint_override: {inv['ironic']['url']}\n"
    )
    _replace(folder / "clouds.yaml", clouds, 0o644)
    path = folder / "ironic.json"
    _replace(path, json.dumps(inv, indent=2) + "\n", 0o600)  # credentials inside: readable by the owner only
    return path


def load_inventory(cfg: LabConfig) -> dict:
    return json.loads((cfg.root / "inventory" / "ironic.json").read_text())
