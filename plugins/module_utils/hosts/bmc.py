# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""BareMetalHost spec.bmc.address -> Ironic driver, interfaces and driver_info, as BMO maps it.

baremetal-operator pkg/hardwareutils/bmc/*.go (``NewAccessDetails``).  Every scheme ``X`` is
also accepted as ``X+http`` and ``X+https``; the suffix is the Redfish URL
scheme (default https).  A bare ``host[:port]`` or ``ipmi:host`` means ipmi.

``fake://<anything>`` is **lab-only** and not a BMO scheme: it makes an Ironic
``fake-hardware`` node (every interface fake, no BMC at all), so tests and
benchmarks can move hosts through the whole state machine in a second.  Never
use it for real machines.
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass, field

from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid

FAKE_SCHEME = "fake"


@dataclass(frozen=True)
class _Type:
    driver: str
    boot: str = ""
    vendor_mgmt: str = ""  # power, management, vendor and bios interfaces ("" = Ironic's default)
    raid: str = ""
    firmware: str = ""
    fast_inspect: str = ""
    family: str = "redfish"  # which driver_info keys
    virtual_media: bool = False  # virtual media / HTTP boot: no provisioning network, ISO ramdisk
    secure_boot: bool = True
    needs_mac: bool = False
    always_system_id: bool = False


_IPMI = _Type("ipmi", boot="ipxe", raid="no-raid", family="ipmi", secure_boot=False)
_TYPES: dict[str, _Type] = {
    "ipmi": _IPMI,
    "libvirt": _Type("ipmi", boot="ipxe", raid="no-raid", family="ipmi", secure_boot=False, needs_mac=True),
    "redfish": _Type("redfish", boot="ipxe", raid="redfish", firmware="redfish", fast_inspect="redfish"),
    "ilo5-redfish": _Type("redfish", boot="ipxe", raid="redfish", firmware="redfish", fast_inspect="redfish"),
    "idrac-redfish": _Type(
        "idrac",
        boot="ipxe",
        vendor_mgmt="idrac-redfish",
        raid="idrac-redfish",
        firmware="redfish",
        fast_inspect="redfish",
    ),
    "redfish-virtualmedia": _Type(
        "redfish",
        boot="redfish-virtual-media",
        raid="redfish",
        firmware="redfish",
        fast_inspect="redfish",
        virtual_media=True,
    ),
    "ilo5-virtualmedia": _Type(
        "redfish",
        boot="redfish-virtual-media",
        raid="redfish",
        firmware="redfish",
        fast_inspect="redfish",
        virtual_media=True,
    ),
    "idrac-virtualmedia": _Type(
        "idrac",
        boot="idrac-redfish-virtual-media",
        vendor_mgmt="idrac-redfish",
        raid="idrac-redfish",
        firmware="redfish",
        fast_inspect="redfish",
        virtual_media=True,
    ),
    "redfish-uefihttp": _Type(
        "redfish",
        boot="redfish-https",
        raid="redfish",
        firmware="redfish",
        fast_inspect="redfish",
        virtual_media=True,
        always_system_id=True,
    ),
    FAKE_SCHEME: _Type("fake-hardware", family="fake", virtual_media=True),
}


@dataclass(frozen=True)
class Access:
    """What Ironic needs to reach one BMC."""

    scheme: str  # as written, e.g. "redfish-virtualmedia+http"
    bmc_type: str  # without the +http(s) suffix
    driver: str
    interfaces: dict = field(default_factory=dict)  # node fields, only the non-default ones
    driver_info: dict = field(default_factory=dict)  # without credentials
    fast_inspect_interface: str = ""
    virtual_media: bool = False
    secure_boot: bool = True
    needs_mac: bool = False
    fake: bool = False

    @property
    def address_key(self) -> str:
        """The driver_info key BMO compares to decide whether driver_info must be re-sent."""
        return {"ipmi": "ipmi_address", "fake-hardware": ""}.get(self.driver, "redfish_address")

    def credentials(self, username: str, password: str) -> dict:
        if self.fake:
            return {}
        prefix = "ipmi" if self.driver == "ipmi" else "redfish"
        return {f"{prefix}_username": username, f"{prefix}_password": password}


def schemes() -> list[str]:
    return sorted(_TYPES)


def parse(address: str, disable_certificate_verification: bool = False) -> Access:
    """Map a BMC address to an Access; Invalid (BMO's ``registration error``) when it cannot be used."""
    if not isinstance(address, str) or not address.strip():
        raise Invalid("BMC address is required", field="spec.bmc.address")
    address = address.strip()
    if "://" not in address:
        # BMO: "ipmi:host" and a bare "host[:port]" both mean IPMI
        rest = address[len("ipmi:") :] if address.startswith("ipmi:") else address
        address = "ipmi://" + rest
    try:
        url = urllib.parse.urlsplit(address)
        port = url.port
    except ValueError as exc:
        raise Invalid(f"failed to parse BMC address information: {exc}", field="spec.bmc.address") from exc
    scheme = url.scheme.lower()
    bmc_type, _sep, transport = scheme.partition("+")
    if bmc_type not in _TYPES or transport not in ("", "http", "https"):
        raise Invalid(
            f"Unknown BMC type '{scheme}' for address {address}; known: {', '.join(schemes())} (+http, +https)",
            field="spec.bmc.address",
        )
    t = _TYPES[bmc_type]
    if t.family == "fake":
        return Access(scheme, bmc_type, t.driver, virtual_media=True, secure_boot=True, fake=True)
    if not url.hostname:
        raise Invalid(f"missing host in BMC address {address}", field="spec.bmc.address")
    interfaces = {"boot_interface": t.boot}
    for name in ("power_interface", "management_interface", "vendor_interface", "bios_interface"):
        interfaces[name] = t.vendor_mgmt
    interfaces["raid_interface"] = t.raid
    interfaces["firmware_interface"] = t.firmware
    interfaces = {k: v for k, v in interfaces.items() if v}
    if t.family == "ipmi":
        query = urllib.parse.parse_qs(url.query)
        info = {
            "ipmi_address": url.hostname,
            "ipmi_port": str(port or 623),
            "ipmi_priv_level": (query.get("privilegelevel") or ["ADMINISTRATOR"])[0],
        }
        if disable_certificate_verification:
            info["ipmi_verify_ca"] = False
    else:
        info = {"redfish_address": f"{transport or 'https'}://{url.netloc.rsplit('@', 1)[-1]}"}
        path = url.path
        if t.always_system_id or path.strip("/") not in ("", "redfish/v1"):
            info["redfish_system_id"] = path
        if disable_certificate_verification:
            info["redfish_verify_ca"] = False
    return Access(
        scheme,
        bmc_type,
        t.driver,
        interfaces=interfaces,
        driver_info=info,
        fast_inspect_interface=t.fast_inspect,
        virtual_media=t.virtual_media,
        secure_boot=t.secure_boot,
        needs_mac=t.needs_mac,
    )
