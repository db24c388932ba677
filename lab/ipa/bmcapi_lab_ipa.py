"""The lab's ironic-python-agent hardware manager: what one emulated host looks like from its ramdisk.

Installed into the agent's venv as a distribution of its own with an
``ironic_python_agent.hardware_managers`` entry point (IPA's plug-in mechanism, as a
vendor's hardware manager is). It imports nothing of the lab: the node simulator that
starts the agent for a host writes that host's description to the JSON file named by
``BMCAPI_LAB_IPA_HOST`` (NICs as the BMC emulates them, CPU, memory, and the one disk,
a loop device over a file of that host).

It is a GenericHardwareManager whose *inventory* is the host's instead of the machine
the lab runs on: every other method (cleaning's ``erase_devices_metadata``, image
writing, the config-drive partition, ...) is IPA's own code, run on the host's loop
device, because every device list it works from comes from here. Its support level is
SERVICE_PROVIDER, so IPA dispatches to it before the generic manager (which IPA loads
too and which only ever sees step names from it).
"""

from __future__ import annotations

import json
import os

from ironic_python_agent import errors, hardware, tls_utils

ENV = "BMCAPI_LAB_IPA_HOST"
# A custom deploy step of the lab's own (what a BareMetalHost's spec.customDeploy.method names, as
# OpenShift's install_coreos is one of its ramdisk): it writes a marker at the start of the host's disk.
CUSTOM_DEPLOY_STEP = "install_lab_marker"
CUSTOM_DEPLOY_MARKER = b"baremetal.capi lab custom deploy: node "


def _host() -> dict:
    with open(os.environ[ENV], encoding="utf-8") as fh:
        return json.load(fh)


def _partitions(device: str) -> list:
    """The partitions the kernel sees on the host's disk (/sys/block/loopN/loopNpM)."""
    name = os.path.basename(device)
    sys_dir = f"/sys/block/{name}"
    out = []
    for entry in sorted(os.listdir(sys_dir)) if os.path.isdir(sys_dir) else []:
        if not entry.startswith(name + "p"):
            continue
        with open(f"{sys_dir}/{entry}/size", encoding="ascii") as fh:
            size = int(fh.read().strip()) * 512
        out.append(hardware.BlockDevice(name=f"/dev/{entry}", model="", size=size, rotational=False))
    return out


class LabHardwareManager(hardware.GenericHardwareManager):
    HARDWARE_MANAGER_NAME = "bmcapi_lab"
    HARDWARE_MANAGER_VERSION = "1.0"

    def evaluate_hardware_support(self):
        if not os.environ.get(ENV):
            return hardware.HardwareSupport.NONE
        return hardware.HardwareSupport.SERVICE_PROVIDER

    def initialize(self):
        # the generic manager's initialize loads kernel modules and assembles md/iscsi
        # devices of the machine itself: nothing of that belongs to an emulated host
        self.host = _host()

    # --- inventory ---------------------------------------------------------------

    def list_network_interfaces(self):
        return [
            hardware.NetworkInterface(
                nic["name"],
                nic["mac"],
                # the lab's host addresses are loopback aliases (127.A.1.N), and Ironic's inspection drops
                # an interface with a loopback address as the host's own `lo`: the NIC goes without one
                ipv4_address=None,
                has_carrier=True,
                vendor=nic.get("vendor"),
                product=nic.get("product"),
                speed_mbps=nic.get("speed_mbps"),
                pci_address=nic.get("pci_address"),
                driver=nic.get("driver"),
            )
            for nic in self.host["nics"]
        ]

    def get_interface_info(self, interface_name):
        for iface in self.list_network_interfaces():
            if iface.name == interface_name:
                return iface
        return None

    def collect_lldp_data(self, interface_names=None):
        return {}

    def get_cpus(self):
        cpu = self.host["cpu"]
        return hardware.CPU(
            model_name=cpu["model"],
            frequency=str(cpu["mhz"]),
            count=cpu["count"],
            architecture=cpu["arch"],
            flags=list(cpu.get("flags", [])),
            socket_count=1,
        )

    def get_memory(self):
        mib = self.host["memory_mib"]
        return hardware.Memory(total=mib * 1024 * 1024, physical_mb=mib)

    def _disk(self):
        disk = self.host["disk"]
        return hardware.BlockDevice(
            name=disk["device"],
            model=disk["model"],
            size=disk["size"],
            rotational=False,
            serial=disk["serial"],
            vendor=disk["vendor"],
            wwn=disk.get("wwn"),
        )

    def list_block_devices(self, include_partitions=False):
        devices = [self._disk()]
        if include_partitions:
            devices.extend(_partitions(self.host["disk"]["device"]))
        return devices

    def list_block_devices_check_skip_list(self, node, include_partitions=False, **_kwargs):
        return self.list_block_devices(include_partitions=include_partitions)

    def get_os_install_device(self, permit_refresh=False):
        return self.host["disk"]["device"]

    def get_skip_list_from_node_for_disks(self, node, block_devices=None):
        return set()

    def get_skip_list_from_node_for_raids(self, node):
        return set()

    def wait_for_disks(self):
        return None

    def get_system_vendor_info(self):
        vendor = self.host["vendor"]
        return hardware.SystemVendorInfo(
            product_name=vendor["product"],
            serial_number=vendor["serial"],
            manufacturer=vendor["manufacturer"],
            firmware=hardware.SystemFirmware(
                vendor=vendor["bios_vendor"], version=vendor["bios_version"], build_date=vendor["bios_date"]
            ),
        )

    def get_boot_info(self):
        # the NIC the host booted through: its one NIC (a PXE ramdisk learns it from BOOTIF=)
        nics = self.host["nics"]
        return hardware.BootInfo(
            current_boot_mode=self.host.get("boot_mode", "uefi"), pxe_interface=nics[0]["mac"] if nics else None
        )

    def get_bmc_address(self):
        return self.host.get("bmc_ip")  # None when the lab host has no BMC address of its own

    def get_bmc_v6address(self):
        return None  # no BMC address of its own, as for IPv4: never the unspecified "::"

    def get_bmc_mac(self):
        return None

    def get_usb_devices(self):
        return []

    def list_hardware_info(self):
        # the generic manager wraps this in an lshw run of the machine itself; the hostname is the host's
        info = hardware.HardwareManager.list_hardware_info(self)
        info["hostname"] = self.host["name"]
        return info

    def get_bios_given_nic_name(self, interface_name):
        return None

    def generate_tls_certificate(self, ip_address):
        """IPA's own self-signed certificate, kept in the host's own run directory.

        The generic manager writes it to /run/ironic-python-agent, a host's own tmpfs; here every host's
        agent shares the lab machine's /run, and two agents starting at once would pair one's key with the
        other's certificate (``KEY_VALUES_MISMATCH``).
        """
        root = os.path.join(os.path.dirname(os.environ[ENV]), "run")
        os.makedirs(root, exist_ok=True)
        cert_path, key_path = os.path.join(root, "agent.crt"), os.path.join(root, "agent.key")
        content = tls_utils._generate_tls_certificate(cert_path, key_path, self.host["name"], ip_address)
        return tls_utils.TlsCertificate(content, cert_path, key_path)

    # --- software RAID (the agent's raid interface) ------------------------------------
    # IPA's generic code builds md arrays with mdadm over every disk lsblk shows (``mdadm --assemble --scan``,
    # ``--create``, ``--stop`` ...): on this machine that is the machine's own devices, not the host's.  The
    # emulated host is what the lab gives it: one disk and no md arrays, so there is nothing to delete, and
    # an array over physical disks cannot be built on one disk; the configuration is checked with IPA's own
    # rules first, so a bad one fails as it does on any host.

    def delete_configuration(self, node, ports):
        return {}

    def create_configuration(self, node, ports):
        raid_config = node.get("target_raid_config") or {}
        if not raid_config:
            return {}
        self.validate_configuration(raid_config, node)
        disks = [d.name for d in self.list_block_devices()]
        levels = ", ".join(f"RAID-{ld.get('raid_level')}" for ld in raid_config.get("logical_disks") or [])
        raise errors.SoftwareRAIDError(
            f"Software RAID ({levels}) needs at least 2 physical disks; this host has {len(disks)}: {', '.join(disks)}"
        )

    # --- deploy steps --------------------------------------------------------------

    def get_deploy_steps(self, node, ports):
        return super().get_deploy_steps(node, ports) + [
            {"step": CUSTOM_DEPLOY_STEP, "priority": 0, "interface": "deploy", "reboot_requested": False}
        ]

    def install_lab_marker(self, node, ports):
        """The custom deploy step: the node's UUID after a fixed marker, at the first byte of the disk."""
        with open(self.get_os_install_device(), "r+b") as fh:
            fh.write(CUSTOM_DEPLOY_MARKER + node["uuid"].encode() + b"\n")
            fh.flush()
            os.fsync(fh.fileno())
