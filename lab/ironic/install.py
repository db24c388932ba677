"""Install what the lab's Ironic needs: Debian packages and a venv of its own.

The venv is keyed by a hash of its requirements and the Python version and lives in
the user's cache dir, so every clone (and CI's fresh clone) on a machine shares it.
It is never the collection's venv: Ironic pins its own oslo/SQLAlchemy/eventlet stack.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from lab.config import LabConfig
from lab.process import LabError

# Versions proven together on this machine (docs/lab.md, "Ironic and BMCs").
REQUIREMENTS = (
    "ironic==39.0.0",
    "sushy-tools==2.2.0",
    "PyMySQL==1.2.4",
)

# command -> Debian package. genisoimage builds Ironic's config drive ISO (without it a
# redfish deploy fails with an empty last_error) and brings isoinfo to read it back.
DEBIAN = {
    "mariadbd": "mariadb-server",
    "mariadb-install-db": "mariadb-server",
    "mariadb": "mariadb-client",
    "genisoimage": "genisoimage",
    "isoinfo": "genisoimage",
    # ironic-python-agent's own disk code on the hosts' loop devices: the config-drive
    # partition (parted on MBR disks; sgdisk, from gdisk, on GPT) and image inspection
    "parted": "parted",
    "sgdisk": "gdisk",
    "qemu-img": "qemu-utils",
    # IPA waits for udev after every partition change; without udevd running `settle` returns at once
    "udevadm": "udev",
    # the IPMI host: Ironic's ipmi hardware type shells out to ipmitool
    "ipmitool": "ipmitool",
    # virtualbmc's libvirt-python has no wheel: pip builds it against Debian's libvirt (a path: a file, not a command)
    "gcc": "gcc",
    "pkg-config": "pkg-config",
    "/usr/include/libvirt/libvirt.h": "libvirt-dev",
}

# ironic-python-agent, the hosts' ramdisk on the agent path: a venv of its own (it pins a
# different oslo stack from Ironic's), with the lab's hardware manager installed beside it.
IPA_REQUIREMENTS = ("ironic-python-agent==13.0.0",)
IPA_PLUGIN = Path(__file__).resolve().parent.parent / "ipa" / "bmcapi_lab_ipa.py"
IPA_PLUGIN_DIST = "bmcapi_lab_ipa-1.0.dist-info"

# virtualbmc, the IPMI BMC of the lab's IPMI host (lab/ironic/vbmc.py): a venv of its own; libvirt-python pinned to
# Debian 12's libvirt (9.0.0), which it is built against
VBMC_REQUIREMENTS = ("virtualbmc==3.3.0", "libvirt-python==9.0.0")

_SBIN = ("/usr/local/sbin", "/usr/sbin", "/sbin")


def which(cmd: str) -> str | None:
    """shutil.which that also looks in the sbin folders (mariadbd lives in /usr/sbin)."""
    path = os.environ.get("PATH", os.defpath) + os.pathsep + os.pathsep.join(_SBIN)
    return shutil.which(cmd, path=path)


def _missing(cmd: str) -> bool:
    return not os.path.exists(cmd) if cmd.startswith("/") else which(cmd) is None


def tool(cmd: str) -> str:
    found = which(cmd)
    if found is None:
        raise LabError(f"{cmd} not found (Debian package {DEBIAN.get(cmd, '?')})")
    return found


def ensure_debian_packages(cfg: LabConfig) -> list[str]:
    """apt-get install the packages whose commands are missing; returns what was installed."""
    if not any(_missing(cmd) for cmd in DEBIAN):
        return []
    log = cfg.logs / "ironic-apt.log"
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    # Two labs coming up at once take turns (and the second finds the packages there); apt's own locks, held by
    # anyone else, are waited for (DPkg::Lock::Timeout) rather than failed on.
    cfg.cache.mkdir(parents=True, exist_ok=True)
    with open(cfg.cache / "apt.lock", "w") as lock, open(log, "ab") as out:
        fcntl.flock(lock, fcntl.LOCK_EX)
        missing = sorted({pkg for cmd, pkg in DEBIAN.items() if _missing(cmd)})
        if not missing:
            return []
        wait = ["-o", "DPkg::Lock::Timeout=600"]
        for argv in (
            ["apt-get", *wait, "update"],
            ["apt-get", *wait, "install", "-y", "--no-install-recommends", *missing],
        ):
            for attempt in range(10):  # the lists lock of apt-get update is not covered by the timeout everywhere
                out.flush()
                start = log.stat().st_size
                rc = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, env=env, check=False).returncode
                if rc == 0 or attempt == 9 or b"Could not get lock" not in log.read_bytes()[start:]:
                    break
                time.sleep(15)
            if rc != 0:
                raise LabError(f"{' '.join(argv)} failed with {rc}; see {log}")
    still = sorted(cmd for cmd in DEBIAN if _missing(cmd))
    if still:
        raise LabError(f"still missing after apt-get install {' '.join(missing)}: {', '.join(still)}")
    return missing


def venv_key(requirements: tuple[str, ...] = REQUIREMENTS) -> str:
    text = "\n".join((f"python {sys.version_info.major}.{sys.version_info.minor}", *requirements))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def venv_path(cfg: LabConfig) -> Path:
    return cfg.cache / "venvs" / f"ironic-{venv_key()}"


def ipa_venv_path(cfg: LabConfig) -> Path:
    return cfg.cache / "venvs" / f"ipa-{venv_key(IPA_REQUIREMENTS)}"


def vbmc_venv_path(cfg: LabConfig) -> Path:
    return cfg.cache / "venvs" / f"vbmc-{venv_key(VBMC_REQUIREMENTS)}"


def ensure_vbmc_venv(cfg: LabConfig) -> Path:
    """virtualbmc's venv (built once, shared by clones); it runs lab/ironic/vbmc.py from the work tree."""
    return _ensure_venv(cfg, vbmc_venv_path(cfg), VBMC_REQUIREMENTS, "vbmc-pip.log")


def _base_python() -> str:
    # a venv made from inside another venv should still point at the real interpreter
    return getattr(sys, "_base_executable", None) or sys.executable


def ensure_venv(cfg: LabConfig) -> Path:
    """Create the venv once; a marker written last says it is complete."""
    return _ensure_venv(cfg, venv_path(cfg), REQUIREMENTS, "ironic-pip.log")


def ensure_ipa_venv(cfg: LabConfig) -> Path:
    """The agent's venv (built once, shared by clones) with this tree's hardware manager in it."""
    path = _ensure_venv(cfg, ipa_venv_path(cfg), IPA_REQUIREMENTS, "ipa-pip.log")
    install_ipa_plugin(path)
    return path


def install_ipa_plugin(venv: Path) -> None:
    """The hardware manager as a distribution IPA's stevedore finds by its entry point.

    Written as files (module, METADATA, entry_points.txt, RECORD): no build backend to
    fetch, so a lab inside a network namespace without internet can refresh it.
    """
    site = next(venv.glob("lib/python3*/site-packages"))
    module = IPA_PLUGIN.read_text()
    dist = site / IPA_PLUGIN_DIST
    files = {
        site / IPA_PLUGIN.name: module,
        dist / "METADATA": "Metadata-Version: 2.1\nName: bmcapi-lab-ipa\nVersion: 1.0\n",
        dist / "entry_points.txt": (
            "[ironic_python_agent.hardware_managers]\nbmcapi_lab = bmcapi_lab_ipa:LabHardwareManager\n"
        ),
        dist / "RECORD": f"{IPA_PLUGIN.name},,\n{IPA_PLUGIN_DIST}/METADATA,,\n"
        f"{IPA_PLUGIN_DIST}/entry_points.txt,,\n{IPA_PLUGIN_DIST}/RECORD,,\n",
    }
    dist.mkdir(exist_ok=True)
    for path, text in files.items():
        if not path.exists() or path.read_text() != text:
            path.write_text(text)


def _ensure_venv(cfg: LabConfig, path: Path, requirements: tuple[str, ...], log_name: str) -> Path:
    marker = path / ".complete"
    if marker.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    # two clones starting their labs at once must not build into the same folder
    with open(path.parent / f"{path.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.exists():
            return path
        shutil.rmtree(path, ignore_errors=True)
        log = cfg.logs / log_name
        with open(log, "ab") as out:
            for argv in (
                [_base_python(), "-m", "venv", str(path)],
                [str(path / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", *requirements],
            ):
                rc = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, check=False).returncode
                if rc != 0:
                    raise LabError(f"{' '.join(argv[:4])} ... failed with {rc}; see {log}")
        marker.write_text("\n".join(requirements) + "\n")
    return path
