"""The lab's Redfish BMC emulator: sushy-tools' ``sushy-emulator`` whose fake system driver also keeps BIOS
attributes and firmware versions.

Run with the Ironic venv's Python (it imports sushy-tools only, nothing of the lab):
``python lab/ironic/sushy_lab.py --config sushy.conf`` takes sushy-emulator's own options.

sushy-tools 2.2.0 serves the whole Redfish side of BIOS and firmware for every system driver:
``Systems/<id>/BIOS`` and ``BIOS/Settings`` (GET, PATCH), ``Bios.ResetBios``, the BIOS attribute registry
(``Registries/BiosAttributeRegistry.v1_0_0`` -> ``Systems/Bios/BiosRegistry``), ``BiosVersion`` in the
ComputerSystem, and ``UpdateService.SimpleUpdate`` (which raises the BIOS version's minor number).  It asks
the system driver to store them: the libvirt driver keeps them in the domain's XML metadata, the fake driver
the lab uses raises NotSupportedError for all six calls (no BIOS link in the system, SimpleUpdate answers
500).  The driver below keeps them in the fake driver's persisted system record instead, with the libvirt
driver's defaults; like the libvirt driver, a BIOS change is effective at once (a real BIOS applies pending
settings at the next boot; Ironic reboots the host after ``apply_configuration`` either way).

Storage (``Systems/<id>/Storage``, drives, volumes) stays as sushy-tools has it: static collections from its
configuration, and volume creation goes to the system driver, which the fake driver does not support; the lab
configures no storage, so a hardware RAID request fails in Ironic as it would on a BMC without a RAID
controller.
"""

from __future__ import annotations

import copy
import sys

from sushy_tools.emulator import main as emulator
from sushy_tools.emulator.resources.systems import fakedriver

# sushy-tools' libvirt driver defaults (DEFAULT_BIOS_ATTRIBUTES / DEFAULT_FIRMWARE_VERSIONS): the attributes
# its BIOS attribute registry describes
DEFAULT_BIOS_ATTRIBUTES = {
    "BootMode": "Uefi",
    "EmbeddedSata": "Raid",
    "L2Cache": "10x256 KB",
    "NicBoot1": "NetworkBoot",
    "NumCores": "10",
    "QuietBoot": "true",
    "ProcTurboMode": "Enabled",
    "SecureBootStatus": "Enabled",
    "SerialNumber": "QPX12345",
    "SysPassword": "",
}
DEFAULT_FIRMWARE_VERSIONS = {"BiosVersion": "1.0.0"}


class LabFakeDriver(fakedriver.FakeDriver):
    """The fake driver, with BIOS attributes and firmware versions kept in each system's record."""

    def _record(self, identity, key: str, default: dict) -> dict:
        system = self._get(identity)
        return copy.deepcopy(system.get(key) or default)

    def get_bios(self, identity):
        return self._record(identity, "bios", DEFAULT_BIOS_ATTRIBUTES)

    def set_bios(self, identity, attributes):
        bios = self.get_bios(identity)
        bios.update(attributes or {})
        self._update(self._get(identity), bios=bios)

    def reset_bios(self, identity):
        self._update(self._get(identity), bios=dict(DEFAULT_BIOS_ATTRIBUTES))

    def get_versions(self, identity):
        return self._record(identity, "versions", DEFAULT_FIRMWARE_VERSIONS)

    def set_versions(self, identity, firmware_versions):
        versions = self.get_versions(identity)
        versions.update(firmware_versions or {})
        self._update(self._get(identity), versions=versions)

    def reset_versions(self, identity):
        self._update(self._get(identity), versions=dict(DEFAULT_FIRMWARE_VERSIONS))


# main.py looks the driver class up in the module when it makes the systems resource
fakedriver.FakeDriver = LabFakeDriver

if __name__ == "__main__":
    sys.argv[0] = "sushy-emulator"
    sys.exit(emulator.main())
