"""Images the lab serves, and reading what a BMC has on its virtual media.

The boot ISO is a tiny non-bootable ISO9660 file: with the `ramdisk` deploy interface
Ironic only needs a URL it can hand to the BMC's virtual CD, and the emulated BMC only
downloads it. Config drives are ISO9660 too (volume `config-2`, `openstack/latest/...`);
isoinfo (Debian's genisoimage package) reads them back.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import subprocess
import tempfile
import urllib.request
import uuid as uuid_mod
from pathlib import Path

from lab.config import LabConfig
from lab.ironic import configs, hosts, mariadb
from lab.ironic.install import tool


def make_images(cfg: LabConfig) -> dict[str, Path]:
    """Create the served images once: images/boot.iso and images/test-image.raw (+ .sha256)."""
    folder = configs.http_root(cfg) / "images"
    folder.mkdir(exist_ok=True)
    boot = folder / "boot.iso"
    if not boot.exists():
        with tempfile.TemporaryDirectory() as src:
            Path(src, "README.TXT").write_text("baremetal.capi lab boot ISO for Ironic's ramdisk deploy\n")
            tmp = boot.with_suffix(".tmp")
            subprocess.run(
                [tool("genisoimage"), "-quiet", "-o", str(tmp), "-V", "LABBOOT", "-J", "-r", src],
                check=True,
            )
            tmp.replace(boot)
    raw = folder / "test-image.raw"
    if not raw.exists():
        # 1 MiB of a fixed pattern: an image_source with a real checksum for fake-hardware deploys
        tmp = raw.with_suffix(".tmp")
        tmp.write_bytes(b"baremetal.capi lab test image\n".ljust(4096, b"\0") * 256)
        tmp.replace(raw)
    digest = raw.with_name(raw.name + ".sha256")
    if not digest.exists():
        digest.write_text(f"{hashlib.sha256(raw.read_bytes()).hexdigest()}  {raw.name}\n")
    agent_image = _agent_image(folder)
    kernel, ramdisk = make_ipa_kernel_ramdisk(cfg)
    return {
        "boot_iso": boot,
        "test_image": raw,
        "agent_image": agent_image,
        "ipa_iso": make_ipa_iso(cfg),
        "ipa_kernel": kernel,
        "ipa_ramdisk": ramdisk,
    }


# The agent's boot ISO stands for an IPA ramdisk ISO (ironic-python-agent-builder's): what a
# host "boots" from it is the kernel command line in its boot loader config, which carries the
# agent's ipa-* parameters as Metal3's ramdisk images do (Ironic hands a prebuilt deploy_iso to
# the BMC unchanged). The node simulator starts ironic-python-agent with them.
IPA_VOLUME_ID = "LABIPA"
IPA_GRUB_CFG = "/boot/grub/grub.cfg"


def ipa_kernel_params(cfg: LabConfig) -> dict[str, str]:
    ironic = f"http://{cfg.host}:{cfg.ports.ironic}"
    return {
        "ipa-api-url": ironic,
        # Ironic's built-in inspection (the agent inspect interface) takes the inventory here
        "ipa-inspection-callback-url": f"{ironic}/v1/continue_inspection",
        "ipa-inspection-collectors": "default",
        "ipa-insecure": "1",
    }


def make_ipa_iso(cfg: LabConfig) -> Path:
    folder = configs.http_root(cfg) / "images"
    folder.mkdir(exist_ok=True)
    path = folder / "ipa.iso"
    params = " ".join(f"{k}={v}" for k, v in ipa_kernel_params(cfg).items())
    grub = (
        f'menuentry "ironic-python-agent (baremetal.capi lab)" {{\n  linux /vmlinuz {params}\n  initrd /initramfs\n}}\n'
    )
    stamp = path.with_suffix(".cfg")
    if path.exists() and stamp.exists() and stamp.read_text() == grub:
        return path
    with tempfile.TemporaryDirectory() as src:
        Path(src, "boot", "grub").mkdir(parents=True)
        Path(src, "boot", "grub", "grub.cfg").write_text(grub)
        # stand-ins: the simulator runs the agent from the lab's venv, not from this kernel
        Path(src, "vmlinuz").write_text("baremetal.capi lab: ironic-python-agent kernel stand-in\n")
        Path(src, "initramfs").write_text("baremetal.capi lab: ironic-python-agent ramdisk stand-in\n")
        tmp = path.with_suffix(".tmp")
        subprocess.run(
            [tool("genisoimage"), "-quiet", "-o", str(tmp), "-V", IPA_VOLUME_ID, "-J", "-r", src], check=True
        )
        tmp.replace(path)
    stamp.write_text(grub)
    return path


# The agent as a kernel and an initramfs, for hosts that network-boot it (the IPMI host: BMO's DEPLOY_KERNEL_URL and
# DEPLOY_RAMDISK_URL, Ironic's driver_info deploy_kernel / deploy_ramdisk). Stand-ins too: a host's firmware
# (lab/nodesim/netboot.py) recognises them by their first line; unlike the ISO they carry no parameters - Ironic's
# iPXE script gives the kernel its command line (ipa-api-url, the inspection callback, ...), as for a real IPA.
IPA_KERNEL_MAGIC = b"baremetal.capi lab: ironic-python-agent kernel\n"
IPA_RAMDISK_MAGIC = b"baremetal.capi lab: ironic-python-agent initramfs\n"


def make_ipa_kernel_ramdisk(cfg: LabConfig) -> tuple[Path, Path]:
    folder = configs.http_root(cfg) / "images"
    folder.mkdir(exist_ok=True)
    out = []
    for name, magic in (("ipa.kernel", IPA_KERNEL_MAGIC), ("ipa.initramfs", IPA_RAMDISK_MAGIC)):
        path = folder / name
        # a few KiB, so that Ironic's image cache and the firmware's download have something to move
        content = magic + b"(the node simulator runs the agent from the lab's venv)\n".ljust(4096, b"\0")
        if not path.exists() or path.read_bytes() != content:
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_bytes(content)
            tmp.replace(path)
        out.append(path)
    return out[0], out[1]


def ipa_params_of(path: str | Path) -> dict[str, str] | None:
    """The ipa-* kernel parameters of an agent ISO, or None when the ISO is not one."""
    if iso_volume_id(path) != IPA_VOLUME_ID:
        return None
    text = iso_read(path, IPA_GRUB_CFG).decode()
    for line in text.splitlines():
        words = line.split()
        if words and words[0] == "linux":
            return dict(w.split("=", 1) for w in words[2:] if w.startswith("ipa-") and "=" in w)
    return {}


AGENT_IMAGE_MIB = 16


def _agent_image(folder: Path) -> Path:
    """A whole-disk image for the agent path: GPT, one partition holding a fixed pattern.

    A partition table is what IPA needs to add the config-drive partition after the image.
    """
    path = folder / "agent-image.raw"
    if not path.exists():
        tmp = path.with_suffix(".tmp")
        with open(tmp, "wb") as fh:
            fh.truncate(AGENT_IMAGE_MIB * 1024 * 1024)
        subprocess.run(
            [tool("sgdisk"), "-n", "1:2048:0", "-t", "1:8300", "-c", "1:lab-root", str(tmp)],
            check=True,
            capture_output=True,
        )
        with open(tmp, "r+b") as fh:
            fh.seek(2048 * 512)
            fh.write(b"baremetal.capi lab agent image\n".ljust(4096, b"\0") * 256)
        tmp.replace(path)
    for algo in ("sha256", "md5"):
        digest = path.with_name(f"{path.name}.{algo}")
        if not digest.exists():
            digest.write_text(f"{hashlib.new(algo, path.read_bytes()).hexdigest()}  {path.name}\n")
    return path


def iso_volume_id(path: str | Path) -> str:
    out = subprocess.run([tool("isoinfo"), "-d", "-i", str(path)], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.startswith("Volume id:"):
            return line.split(":", 1)[1].strip()
    return ""


def iso_files(path: str | Path) -> list[str]:
    out = subprocess.run(
        [tool("isoinfo"), "-R", "-f", "-i", str(path)], check=True, capture_output=True, text=True
    ).stdout
    return sorted(line.strip() for line in out.splitlines() if line.strip())


def iso_read(path: str | Path, name: str) -> bytes:
    return subprocess.run([tool("isoinfo"), "-R", "-x", name, "-i", str(path)], check=True, capture_output=True).stdout


def read_config_drive(path: str | Path) -> dict:
    """meta_data and network_data parsed, user_data as bytes, from a config-2 ISO."""
    files = iso_files(path)
    out: dict = {"volume_id": iso_volume_id(path), "files": files}
    for key, name in (("meta_data", "meta_data.json"), ("network_data", "network_data.json")):
        member = f"/openstack/latest/{name}"
        out[key] = json.loads(iso_read(path, member)) if member in files else None
    member = "/openstack/latest/user_data"
    out["user_data"] = iso_read(path, member) if member in files else None
    return out


def bmc_get(cfg: LabConfig, path: str) -> dict:
    """GET a Redfish resource from the emulator itself (not through the proxy, whose faults must not
    disturb what a test reads back), with the lab BMC credentials."""
    token = base64.b64encode(f"{hosts.BMC_USERNAME}:{hosts.BMC_PASSWORD}".encode()).decode()
    req = urllib.request.Request(
        f"http://{cfg.host}:{cfg.ports.sushy}{path}", headers={"Authorization": f"Basic {token}"}
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())


def virtual_media(cfg: LabConfig, system_uuid: str) -> dict[str, dict]:
    """The emulated BMC's virtual media devices of one system: device id -> Redfish resource."""
    coll = bmc_get(cfg, f"/redfish/v1/Systems/{system_uuid}/VirtualMedia")
    return {m["@odata.id"].rstrip("/").rsplit("/", 1)[1]: bmc_get(cfg, m["@odata.id"]) for m in coll["Members"]}


def media_file(cfg: LabConfig, device: dict) -> Path:
    """The copy of an inserted image that the emulated BMC downloaded when it was inserted.

    The emulator stores it as <its TMPDIR>/<random dir>/<ImageName>; the newest match wins.
    """
    name = device.get("ImageName")
    if not device.get("Inserted") or not name:
        raise LookupError(f"no image inserted in virtual media {device.get('Id')}")
    found = sorted(configs.sushy_media_dir(cfg).glob(f"*/{name}"), key=lambda p: p.stat().st_mtime)
    if not found:
        raise LookupError(f"the emulator holds no downloaded copy of {name}")
    return found[-1]


def stored_config_drive(cfg: LabConfig, node_uuid: str) -> dict | None:
    """The config drive Ironic holds for a node, as the lab (not the API, which masks it) sees it.

    For a fake-hardware node this is the only place the data exists: the fake deploy
    interface builds no image. Ironic keeps a dict as given, and a built image as
    gzipped base64 ISO (or a URL to one).
    """
    # the lab owns Ironic's database; the uuid is checked before it goes into SQL
    node_uuid = str(uuid_mod.UUID(node_uuid))
    row = mariadb.sql(cfg, f"SELECT instance_info FROM {configs.DB_NAME}.nodes WHERE uuid='{node_uuid}'").strip()
    if not row or row == "NULL":
        return None
    drive = json.loads(row).get("configdrive")
    if drive is None:
        return None
    if isinstance(drive, dict):
        user_data = drive.get("user_data")
        if isinstance(user_data, str):
            user_data = user_data.encode()
        return {
            "meta_data": drive.get("meta_data"),
            "network_data": drive.get("network_data"),
            "user_data": user_data,
        }
    if drive.startswith(("http://", "https://")):
        with urllib.request.urlopen(drive, timeout=30) as resp:
            image = resp.read()
    else:
        image = gzip.decompress(base64.b64decode(drive))
    with tempfile.NamedTemporaryFile(suffix=".iso") as tmp:
        tmp.write(image)
        tmp.flush()
        return read_config_drive(tmp.name)
