"""The agent ramdisk of the lab's Redfish hosts: ironic-python-agent, started when a host boots it.

A host "boots the agent" when the emulated BMC has it powered on with its boot override on
the virtual CD and the inserted image is the lab's agent ISO (lab.ironic.iso.make_ipa_iso):
the simulator then starts ironic-python-agent (the lab's IPA venv) as lab process
``ipa-<host>`` with the ``ipa-*`` kernel parameters of that ISO's boot loader config as
its configuration, bound to the host's own loopback address, with the lab's hardware
manager (lab/ipa/bmcapi_lab_ipa.py) presenting the host: its NIC (the BMC's MAC), CPU,
memory and one disk, a loop device over ``<lab>/data/hosts/<host>/disk.img``.

A boot lasts until the host is powered off or reset: the BMC proxy counts every accepted
ComputerSystem.Reset (``GET /lab/resets``), so a restart the emulator applies within one
poll is still a new boot. Then the agent is stopped by PID, as power loss ends a ramdisk.
The agent's own ``poweroff`` / ``reboot`` (what IPA runs for Ironic's power_off and
reboot commands) are shims that ask the host's BMC to do it, as the host's OS would make
its own hardware do: running the real ones would act on the machine the lab runs on.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import urllib.request
from pathlib import Path

from lab import process
from lab.config import LabConfig

LOG = logging.getLogger("nodesim.agent")
PREFIX = "ipa-"
AGENT_PORT = 9999  # IPA's default listen port

_SHIM = '''#!{python}
"""ironic-python-agent's {command} on a lab host: ask the host's BMC (see lab/nodesim/agent.py)."""
import base64, json, os, urllib.request
host = json.load(open(os.environ["BMCAPI_LAB_IPA_HOST"]))
bmc = host["bmc"]
token = base64.b64encode(f"{{bmc['username']}}:{{bmc['password']}}".encode()).decode()
req = urllib.request.Request(
    bmc["system_url"] + "/Actions/ComputerSystem.Reset",
    data=json.dumps({{"ResetType": "{reset}"}}).encode(),
    method="POST",
    headers={{"Authorization": "Basic " + token, "Content-Type": "application/json"}},
)
urllib.request.urlopen(req, timeout=30).read()
'''

# fuser (IPA's "is the disk in use" check before it wipes or writes one) stats every process's open
# files; this machine's sandbox refuses even root a look at PID 1's (`Cannot stat file /proc/1/fd/N:
# Permission denied`), and IPA takes any stderr as "busy". The shim runs the real fuser and drops only
# those refusals (docs/lab.md, "The agent path").
_FUSER = """#!{python}
import re, subprocess, sys
proc = subprocess.run([{fuser!r}, *sys.argv[1:]], capture_output=True, text=True)
refused = re.compile(r"^Cannot stat file /proc/\\d+/fd/\\d+: Permission denied$")
sys.stdout.write(proc.stdout)
sys.stderr.write("".join(line for line in proc.stderr.splitlines(True) if not refused.match(line.strip())))
sys.exit(proc.returncode)
"""


def running_names(cfg: LabConfig) -> list[str]:
    return sorted(p.stem for p in cfg.run.glob(PREFIX + "*.pid") if process.pid_of(cfg, p.stem) is not None)


# --- disks ------------------------------------------------------------------------------


def disk_file(cfg: LabConfig, name: str) -> Path:
    return cfg.data("hosts") / name / "disk.img"


def loop_of(path: Path) -> str | None:
    """The loop device attached to ``path``, if any (``losetup -j``)."""
    out = subprocess.run(["losetup", "-j", str(path)], capture_output=True, text=True, check=False).stdout
    for line in out.splitlines():
        return line.split(":", 1)[0]
    return None


def ensure_disk(cfg: LabConfig, name: str, size: int) -> str:
    """The host's disk: a sparse file, attached to a loop device with partition scanning."""
    path = disk_file(cfg, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        with open(path, "wb") as fh:
            fh.truncate(size)
    dev = loop_of(path)
    if dev is None:
        dev = subprocess.run(
            ["losetup", "--partscan", "--show", "-f", str(path)], capture_output=True, text=True, check=True
        ).stdout.strip()
    return dev


def detach_disks(cfg: LabConfig, remove: bool = False) -> list[str]:
    """Detach every host disk of this lab (and delete the files with ``remove``)."""
    out = []
    for path in sorted((cfg.root / "data" / "hosts").glob("*/disk.img")):
        dev = loop_of(path)
        if dev:
            subprocess.run(["losetup", "-d", dev], check=False)
            out.append(dev)
        if remove:
            path.unlink(missing_ok=True)
    return out


def partitions(dev: str) -> list[str]:
    name = os.path.basename(dev)
    folder = Path("/sys/block") / name
    if not folder.is_dir():
        return []
    return sorted(f"/dev/{p.name}" for p in folder.iterdir() if p.name.startswith(name + "p"))


def config_drive_partition(dev: str) -> str | None:
    """The partition of the host's disk that holds a config drive (ISO9660 volume config-2)."""
    from lab.ironic import iso

    for part in partitions(dev):
        try:
            if iso.iso_volume_id(part) == "config-2":
                return part
        except subprocess.CalledProcessError:
            continue
    return None


# --- the BMC's view -------------------------------------------------------------------------


def _resets(cfg: LabConfig) -> dict[str, int]:
    with urllib.request.urlopen(f"http://{cfg.host}:{cfg.ports.bmc_proxy}/lab/resets", timeout=10) as resp:
        return json.load(resp)


def _agent_params(cfg: LabConfig, host, system: dict, netboots: dict | None = None) -> dict | None:
    """The agent's kernel parameters when this system boots it now, else None: from the agent ISO in the virtual
    CD (boot override ``Cd``), or from Ironic's iPXE scripts (boot override ``Pxe``: lab.nodesim.netboot)."""
    from lab.ironic import iso

    target = (system.get("Boot") or {}).get("BootSourceOverrideTarget")
    if target == "Pxe":
        return _netboot(cfg, host, netboots)
    if target != "Cd":
        return None
    device = iso.virtual_media(cfg, host.uuid).get("Cd") or {}
    try:
        path = iso.media_file(cfg, device)
    except LookupError:
        return None
    return iso.ipa_params_of(path)


def _netboot(cfg: LabConfig, host, netboots: dict | None) -> dict | None:
    from lab.nodesim import netboot

    outcome = netboot.Firmware([host.mac]).boot(netboot.boot_url(cfg))
    params = netboot.agent_params(outcome)
    what = {"kind": outcome.kind, "reason": outcome.reason, "kernel": outcome.kernel_url, "agent": params is not None}
    if outcome.kind == "sanboot":
        what["sanboot"] = outcome.sanboot_url or "local disk"
    LOG.info("%s: network boot: %s", host.name, what)
    if outcome.kind == "failed":
        LOG.warning("%s: network boot failed: %s (console: %s)", host.name, outcome.reason, outcome.console[-3:])
    if netboots is not None:
        netboots[host.name] = what
    return params


# --- the agents ------------------------------------------------------------------------------


class Agents:
    def __init__(self, cfg: LabConfig):
        self.cfg = cfg
        self.boots: dict[str, int] = {}  # process name -> the reset count it was started in
        self.not_agent: dict[str, int] = {}  # process name -> a boot found not to be the agent's
        self.netboots: dict[str, dict] = {}  # host name -> what its last network boot came to

    def step(self, system_uuids: dict[str, bool]) -> dict:
        """Start or stop the agent of every lab host whose Ironic node is a redfish one.

        ``system_uuids``: system -> whether Ironic's conductor holds its node now. A host's ramdisk is up
        only once the conductor's power-on task is over: a real host spends that time (and more) in its
        firmware and booting the kernel; an agent that answered first would post its inspection data
        before Ironic waits for it (a 404 the agent does not retry) and the inspection would time out.
        """
        from lab.ironic import hosts, iso

        if not system_uuids and not running_names(self.cfg):
            return {}
        resets = _resets(self.cfg)
        by_uuid = {h.uuid: h for h in hosts.all_hosts(net=self.cfg.net(1))}
        out = {}
        for uuid in sorted(set(system_uuids) | {h.uuid for h in by_uuid.values() if self._name(h) in self.boots}):
            host = by_uuid.get(uuid)
            if host is None:
                continue
            name = self._name(host)
            system = iso.bmc_get(self.cfg, f"/redfish/v1/Systems/{uuid}")
            on = system.get("PowerState") == "On"
            boot = resets.get(uuid, 0)
            running = process.pid_of(self.cfg, name) is not None
            if running and (not on or self.boots.get(name) != boot):
                LOG.info("%s: powered off or reset: agent stopped", host.name)
                process.stop(self.cfg, name, timeout=10)
                self.boots.pop(name, None)
                running = False
            if on and not running and self.boots.get(name) == boot:
                # the agent of this boot exited on its own (see its log): a ramdisk that crashed stays down
                # until the host is power-cycled; starting it again would be a second agent in one boot,
                # which Ironic refuses (the agent token of the boot is already handed out)
                out[host.name] = {"agent": False, "boot": boot, "exited": True}
                continue
            if on and not running and self.not_agent.get(name) != boot and not system_uuids.get(uuid, False):
                params = _agent_params(self.cfg, host, system, self.netboots)
                if params is None:
                    self.not_agent[name] = boot  # booted from disk or another ISO: nothing to run
                else:
                    self._start(host, params)
                    self.boots[name] = boot
                    running = True
            if not on:
                self.not_agent.pop(name, None)
                self.boots.pop(name, None)
            out[host.name] = {"agent": running, "boot": boot}
            if host.name in self.netboots:
                out[host.name]["netboot"] = self.netboots[host.name]
        return out

    @staticmethod
    def _name(host) -> str:
        return PREFIX + host.name

    def _start(self, host, params: dict) -> None:
        from lab.ironic import hosts, install

        cfg = self.cfg
        venv = install.ipa_venv_path(cfg)
        if not (venv / ".complete").exists():
            raise process.LabError(f"no ironic-python-agent venv at {venv}: `python -m lab up ironic` builds it")
        install.install_ipa_plugin(venv)
        dev = ensure_disk(cfg, host.name, hosts.DISK_BYTES)
        folder = cfg.data("nodesim") / "ipa" / host.name
        folder.mkdir(parents=True, exist_ok=True)
        proxy = f"http://{cfg.host}:{cfg.ports.bmc_proxy}"
        desc = {
            "name": host.name,
            "system_uuid": host.uuid,
            "nics": [
                {
                    "name": hosts.NIC_NAME,
                    "mac": host.mac,
                    "ip": host.ip,
                    "vendor": "0x1af4",
                    "product": "0x0001",
                    "speed_mbps": 10000,
                    "driver": "virtio_net",
                }
            ],
            "cpu": hosts.CPU,
            "memory_mib": hosts.MEMORY_MIB,
            "disk": {
                "device": dev,
                "size": hosts.DISK_BYTES,
                "model": hosts.DISK_MODEL,
                "vendor": hosts.DISK_VENDOR,
                "serial": hosts.disk_serial(host.index),
            },
            "vendor": dict(hosts.SYSTEM_VENDOR, serial=host.uuid),
            "boot_mode": "uefi",
            "bmc": {
                "system_url": f"{proxy}/redfish/v1/Systems/{host.uuid}",
                "username": hosts.BMC_USERNAME,
                "password": hosts.BMC_PASSWORD,
            },
        }
        host_json = folder / "host.json"
        host_json.write_text(json.dumps(desc, indent=1))
        host_json.chmod(0o600)
        shims = folder / "bin"
        shims.mkdir(exist_ok=True)
        python = os.path.realpath(_python())
        for command, reset in (("poweroff", "ForceOff"), ("reboot", "ForceRestart")):
            shim = shims / command
            shim.write_text(_SHIM.format(python=python, command=command, reset=reset))
            shim.chmod(0o755)
        fuser = shutil.which("fuser", path="/usr/bin:/bin:/usr/sbin:/sbin")
        if fuser:
            (shims / "fuser").write_text(_FUSER.format(python=python, fuser=fuser))
            (shims / "fuser").chmod(0o755)
        # the kernel command line's ipa-* parameters are IPA's options of the same name
        options = {k[len("ipa-") :].replace("-", "_"): v for k, v in params.items()}
        options.update(
            listen_host=host.ip,
            listen_port=str(AGENT_PORT),
            advertise_host=host.ip,
            advertise_port=str(AGENT_PORT),
            # the hardware manager names the disk at once; no waiting for udev
            disk_wait_attempts="1",
            # IPA counts a checksum mismatch as a failed download and tries 10 times 10 s apart (its
            # defaults, for flaky networks); the lab's image server is local, so one retry 2 s later
            image_download_connection_retries="1",
            image_download_connection_retry_interval="2",
        )
        conf = folder / "ipa.conf"
        conf.write_text("[DEFAULT]\n" + "".join(f"{k} = {v}\n" for k, v in options.items()))
        env = {
            "BMCAPI_LAB_IPA_HOST": str(host_json),
            "PATH": f"{shims}{os.pathsep}{os.environ.get('PATH', os.defpath)}{os.pathsep}/usr/sbin:/sbin",
            # IPA's temporary files (downloaded images, config drives) stay in the lab
            "TMPDIR": str(folder),
        }
        LOG.info("%s: boots the agent: ironic-python-agent on %s:%s, disk %s", host.name, host.ip, AGENT_PORT, dev)
        process.start(
            cfg,
            self._name(host),
            [str(venv / "bin" / "ironic-python-agent"), "--config-file", str(conf)],
            env=env,
            cwd=str(folder),
        )

    def stop_all(self) -> None:
        for name in running_names(self.cfg):
            process.stop(self.cfg, name, timeout=10)
        self.boots.clear()


def _python() -> str:
    import sys

    return sys.executable
