# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Ironic inspection inventory -> BareMetalHost status.hardware (baremetal-operator
pkg/provisioner/ironic/hardwaredetails/hardwaredetails.go GetHardwareDetails)."""

from __future__ import annotations


def _nics(inventory: dict, plugin_data: dict) -> list[dict]:
    pxe = {name: bool(v.get("pxe_enabled")) for name, v in (plugin_data.get("all_interfaces") or {}).items()}
    out = []
    for iface in inventory.get("interfaces") or []:
        base = {
            "name": iface.get("name"),
            "mac": iface.get("mac_address"),
            "model": f"{iface.get('vendor') or ''} {iface.get('product') or ''}".strip(),
            "speedGbps": int((iface.get("speed_mbps") or 0) / 1000),
            "pxe": pxe.get(iface.get("name"), False),
        }
        if iface.get("pci_address"):
            base["pciAddress"] = iface["pci_address"]
        ips = [ip for ip in (iface.get("ipv4_address"), iface.get("ipv6_address")) if ip]
        for ip in ips or [""]:
            nic = dict(base)
            nic["ip"] = ip
            out.append(nic)
    return out


def _storage(inventory: dict) -> list[dict]:
    out = []
    for disk in inventory.get("disks") or []:
        name = disk.get("by_path") or disk.get("name")
        rotational = bool(disk.get("rotational"))
        kind = "HDD" if rotational else ("NVME" if (disk.get("name") or "").startswith("/dev/nvme") else "SSD")
        item = {
            "name": name,
            "alternateNames": [n for n in (disk.get("name"), disk.get("by_path")) if n and n != name],
            "rotational": rotational,
            "type": kind,
            "sizeBytes": disk.get("size") or 0,
            "vendor": disk.get("vendor") or "",
            "model": disk.get("model") or "",
            "serialNumber": disk.get("serial") or "",
        }
        for src, dst in (
            ("wwn", "wwn"),
            ("wwn_with_extension", "wwnWithExtension"),
            ("wwn_vendor_extension", "wwnVendorExtension"),
            ("hctl", "hctl"),
        ):
            if disk.get(src):
                item[dst] = disk[src]
        out.append(item)
    return out


def from_inventory(data: dict) -> dict:
    """``GET /nodes/{id}/inventory`` (``{"inventory", "plugin_data"}``) -> status.hardware."""
    inventory = data.get("inventory") or {}
    plugin_data = data.get("plugin_data") or {}
    cpu = inventory.get("cpu") or {}
    vendor = inventory.get("system_vendor") or {}
    firmware = vendor.get("firmware") or {}
    hw = {
        "hostname": inventory.get("hostname") or "",
        "nics": _nics(inventory, plugin_data),
        "storage": _storage(inventory),
        "cpu": {
            "arch": cpu.get("architecture") or "",
            "model": cpu.get("model_name") or "",
            "clockMegahertz": round(float(cpu.get("frequency") or 0)),
            "count": int(cpu.get("count") or 0),
            "flags": sorted(cpu.get("flags") or []),
        },
        "ramMebibytes": int((inventory.get("memory") or {}).get("physical_mb") or 0),
        "systemVendor": {
            "manufacturer": vendor.get("manufacturer") or "",
            "productName": vendor.get("product_name") or "",
            "serialNumber": vendor.get("serial_number") or "",
        },
        "firmware": {
            "bios": {
                "vendor": firmware.get("vendor") or "",
                "version": firmware.get("version") or "",
                "date": firmware.get("build_date") or "",
            }
        },
    }
    return hw
