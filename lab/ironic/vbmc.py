"""The IPMI BMC of a lab host: virtualbmc's VirtualBMC, acting on the lab's emulated machine instead of libvirt.

``<vbmc venv>/bin/python -m lab.ironic.vbmc --config <file>`` (lab/ironic/ipmi.py starts it as a lab process).

virtualbmc (PyPI) answers IPMI 2.0 (RMCP+, what ``ipmitool -I lanplus`` and so Ironic's ``ipmi`` hardware type
speak) through pyghmi, and drives a libvirt domain. A lab host is no libvirt domain: its power and boot device
are the state the lab's other views of the same machine use - the sushy-tools fake system of that host, which
the node simulator reads to decide what the host boots (lab/nodesim/agent.py) and which its Redfish BMC would
show. So this subclass keeps virtualbmc's IPMI side and its answers (completion codes, boot-device maps) and
replaces each libvirt call with the matching Redfish request to that system, through the lab's BMC proxy (its
faults apply to the IPMI BMC too, and it counts the resets that start a new boot).

Every command the BMC carries out is appended to an events file (JSON lines: time, command, argument,
result) so that a test can see what the BMC was asked, not only what Ironic reports.

Config (JSON, mode 0600): address, port, username, password (the IPMI user), system_url, redfish_username,
redfish_password, events, name.
"""

from __future__ import annotations

import argparse
import base64
import json
import logging
import sys
import time
import urllib.error
import urllib.request

from virtualbmc import exception
from virtualbmc import vbmc as upstream

LOG = logging.getLogger("lab.vbmc")

# Redfish BootSourceOverrideTarget for virtualbmc's boot devices (its SET_BOOT_DEVICES_MAP values) and back
_TO_REDFISH = {"network": "Pxe", "hd": "Hdd", "cdrom": "Cd"}
_FROM_REDFISH = {v: k for k, v in _TO_REDFISH.items()}


class RedfishError(RuntimeError):
    pass


class LabVirtualBMC(upstream.VirtualBMC):
    """virtualbmc's BMC whose machine is a Redfish system of the lab's emulator."""

    def __init__(self, conf: dict):
        super().__init__(
            conf["username"],
            conf["password"],
            port=int(conf["port"]),
            address=conf["address"],
            domain_name=conf["name"],
            libvirt_uri="lab:///" + conf["name"],  # never opened: no libvirt call is left
        )
        self.system_url = conf["system_url"].rstrip("/")
        token = base64.b64encode(f"{conf['redfish_username']}:{conf['redfish_password']}".encode()).decode()
        self._auth = {"Authorization": "Basic " + token}
        self.events = conf["events"]

    # -- the machine, through its Redfish system --------------------------------------------------------------
    def _redfish(self, method: str, path: str = "", body: dict | None = None) -> dict:
        req = urllib.request.Request(
            self.system_url + path,
            data=None if body is None else json.dumps(body).encode(),
            method=method,
            headers={**self._auth, "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, timeout=20) as resp:
                data = resp.read()
        except (urllib.error.URLError, OSError) as exc:
            raise RedfishError(f"{method} {self.system_url}{path}: {exc}") from exc
        return json.loads(data) if data else {}

    def _system(self) -> dict:
        return self._redfish("GET")

    def _reset(self, reset_type: str) -> None:
        self._redfish("POST", "/Actions/ComputerSystem.Reset", {"ResetType": reset_type})

    def _record(self, command: str, argument=None, result=None) -> None:
        event = {"time": round(time.time(), 3), "command": command, "argument": argument, "result": result}
        LOG.info("%s %s -> %s", command, argument if argument is not None else "", result)
        try:
            with open(self.events, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(event) + "\n")
        except OSError as exc:  # the record is the lab's; the BMC answers regardless
            LOG.warning("events file %s: %s", self.events, exc)

    def _action(self, command: str, run, argument=None):
        """Run one machine action; a failure is virtualbmc's answer to a libvirt failure: busy, try again."""
        try:
            result = run()
        except Exception as exc:  # noqa: BLE001 - any failure of the machine's side is "busy" to the IPMI client
            LOG.error("%s failed: %s", command, exc)
            self._record(command, argument, f"error: {exc}")
            return upstream.IPMI_COMMAND_NODE_BUSY
        self._record(command, argument, result if result is not None else "ok")
        return None

    # -- virtualbmc's libvirt operations ----------------------------------------------------------------------
    def get_boot_device(self):
        try:
            target = (self._system().get("Boot") or {}).get("BootSourceOverrideTarget")
        except RedfishError as exc:
            LOG.error("get boot device: %s", exc)
            return 0
        return upstream.GET_BOOT_DEVICES_MAP.get(_FROM_REDFISH.get(target), 0)

    def set_boot_device(self, bootdevice):
        device = upstream.SET_BOOT_DEVICES_MAP.get(bootdevice)
        if device is None:
            self._record("set_boot_device", bootdevice, "invalid")
            return upstream.IPMI_INVALID_DATA
        # persistent, as virtualbmc's rewrite of the domain's <os><boot dev=.../> is
        target = _TO_REDFISH[device]

        def run():
            boot = {"BootSourceOverrideTarget": target, "BootSourceOverrideEnabled": "Continuous"}
            self._redfish("PATCH", "", {"Boot": boot})
            return target

        return self._action("set_boot_device", run, device)

    def get_power_state(self):
        try:
            on = self._system().get("PowerState") == "On"
        except RedfishError as exc:
            msg = f"Error getting the power state of {self.domain_name}. Error: {exc}"
            LOG.error(msg)
            raise exception.VirtualBMCError(message=msg) from exc
        return upstream.POWERON if on else upstream.POWEROFF

    def _when(self, on: bool, reset_type: str):
        """The Redfish reset, only when the machine is (on) or is not (not on) running, as virtualbmc's
        ``if domain.isActive()`` guards; returns what was done."""

        def run():
            if (self._system().get("PowerState") == "On") != on:
                return "nothing to do"
            self._reset(reset_type)
            return reset_type

        return run

    def power_on(self):
        return self._action("power_on", self._when(False, "On"))

    def power_off(self):
        return self._action("power_off", self._when(True, "ForceOff"))

    def power_shutdown(self):
        return self._action("power_shutdown", self._when(True, "GracefulShutdown"))

    def power_reset(self):
        return self._action("power_reset", self._when(True, "ForceRestart"))

    def pulse_diag(self):
        # an NMI: the emulated machine has no OS to interrupt; accepted and recorded, as on a running domain
        return self._action("pulse_diag", lambda: "no effect")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True)
    args = parser.parse_args(argv)
    with open(args.config, encoding="utf-8") as fh:
        conf = json.load(fh)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    bmc = LabVirtualBMC(conf)
    LOG.info("%s: IPMI BMC on %s:%s (udp), machine %s", conf["name"], conf["address"], conf["port"], bmc.system_url)
    sys.stdout.flush()
    # virtualbmc's vbmc_runner: listen until the process is stopped
    bmc.listen(timeout=conf.get("session_timeout", 30))
    return 0


if __name__ == "__main__":
    sys.exit(main())
