"""Configuration files of the lab's MariaDB, sushy-tools and Ironic, all bound to loopback."""

from __future__ import annotations

import subprocess
from pathlib import Path

from lab.config import LabConfig
from lab.ironic import hosts

DB_NAME = "ironic"
DB_USER = "ironic"
DB_PASSWORD = "lab-ironic-db"


def mariadb_cnf(cfg: LabConfig) -> Path:
    data = cfg.data("mariadb")
    (data / "db").mkdir(exist_ok=True)
    (data / "run").mkdir(exist_ok=True)
    path = data / "my.cnf"
    # Debian's packaged service is never used: this is a private server under .lab/
    path.write_text(
        f"""[mysqld]
user = root
datadir = {data / "db"}
socket = {data / "run" / "mysqld.sock"}
pid-file = {data / "run" / "mysqld.pid"}
bind-address = {cfg.host}
port = {cfg.ports.mariadb}
skip-name-resolve
innodb_buffer_pool_size = 64M
innodb_log_file_size = 16M
# the lab's data is disposable; fewer fsyncs keep Ironic's many small writes cheap
innodb_flush_log_at_trx_commit = 2
max_connections = 200
character-set-server = utf8mb3
collation-server = utf8mb3_general_ci
log-error = {cfg.logs / "ironic-mariadb.err"}
"""
    )
    return path


def mariadb_socket(cfg: LabConfig) -> Path:
    return cfg.data("mariadb") / "run" / "mysqld.sock"


def sushy_htpasswd(cfg: LabConfig, venv: Path) -> Path:
    """Apache-style user file; sushy-tools accepts only bcrypt digests."""
    path = cfg.data("ironic") / "sushy-htpasswd"
    if path.exists() and path.read_text().startswith(hosts.BMC_USERNAME + ":"):
        return path
    # rounds=4: sushy checks the password on every request, so keep bcrypt cheap
    digest = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import bcrypt, sys; print(bcrypt.hashpw(sys.argv[1].encode(), bcrypt.gensalt(rounds=4)).decode())",
            hosts.BMC_PASSWORD,
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    path.write_text(f"{hosts.BMC_USERNAME}:{digest}\n")
    return path


def sushy_state_dir(cfg: LabConfig) -> Path:
    return cfg.data("ironic") / "sushy-state"


def sushy_media_dir(cfg: LabConfig) -> Path:
    """TMPDIR of the emulator: where each BMC keeps the virtual media images it downloaded."""
    return cfg.data("ironic") / "sushy-media"


def sushy_conf(cfg: LabConfig, venv: Path) -> Path:
    sushy_state_dir(cfg).mkdir(exist_ok=True)
    sushy_media_dir(cfg).mkdir(exist_ok=True)
    path = cfg.data("ironic") / "sushy.conf"
    # the file is Python (flask's from_pyfile); repr() of the list gives a valid literal
    path.write_text(
        f"""SUSHY_EMULATOR_LISTEN_IP = {cfg.host!r}
SUSHY_EMULATOR_LISTEN_PORT = {cfg.ports.sushy}
SUSHY_EMULATOR_FAKE_DRIVER = True
SUSHY_EMULATOR_STATE_DIR = {str(sushy_state_dir(cfg))!r}
SUSHY_EMULATOR_AUTH_FILE = {str(sushy_htpasswd(cfg, venv))!r}
SUSHY_EMULATOR_FAKE_SYSTEMS = {hosts.sushy_systems(net=cfg.net(1))!r}
"""
    )
    return path


def http_root(cfg: LabConfig) -> Path:
    path = cfg.data("ironic") / "httproot"
    path.mkdir(exist_ok=True)
    return path


def ironic_conf(cfg: LabConfig) -> Path:
    data = cfg.data("ironic")
    for sub in ("state", "tmp", "locks", "tftpboot"):
        (data / sub).mkdir(exist_ok=True)
    ironic = f"http://{cfg.host}:{cfg.ports.ironic}"
    path = data / "ironic.conf"
    path.write_text(
        f"""[DEFAULT]
auth_strategy = noauth
# no message bus: one all-in-one `ironic` process is API and conductor
rpc_transport = none
host = lab-conductor
my_ip = {cfg.host}
debug = false
use_stderr = true
state_path = {data / "state"}
tempdir = {data / "tmp"}
# ipmi: the lab's IPMI host behind virtualbmc (lab/ironic/vbmc.py), through the real ipmitool
enabled_hardware_types = fake-hardware,redfish,ipmi
enabled_bios_interfaces = no-bios,fake,redfish
# ipxe: hosts without virtual media network-boot the agent (lab/nodesim/netboot.py plays their iPXE firmware)
enabled_boot_interfaces = fake,redfish-virtual-media,ipxe
# `direct` and `custom-agent` drive the hosts' ironic-python-agent (lab.nodesim.agent starts it when a
# host boots the agent ISO); `ramdisk` boots a live ISO (and the fast boot_iso path of most tests)
enabled_deploy_interfaces = fake,ramdisk,direct,custom-agent
enabled_firmware_interfaces = no-firmware,fake,redfish
# `agent`: Ironic's built-in inspection, the inventory the agent posts to /v1/continue_inspection
enabled_inspect_interfaces = no-inspect,fake,redfish,agent
enabled_management_interfaces = fake,redfish,ipmitool
enabled_network_interfaces = noop
enabled_power_interfaces = fake,redfish,ipmitool
enabled_raid_interfaces = no-raid,fake,redfish,agent
enabled_vendor_interfaces = no-vendor,fake,redfish
default_network_interface = noop

[api]
host_ip = {cfg.host}
port = {cfg.ports.ironic}
api_workers = 1
# the agent heartbeats every 30-60 % of this: Ironic moves on from a finished agent command at the
# next heartbeat, and 300 s (the default) would make every step of a lab deploy wait minutes
ramdisk_heartbeat_timeout = 30

[conductor]
# cleaning needs an agent; BareMetalHost automatedCleaningMode is honoured per node anyway
automated_clean = false

[database]
connection = mysql+pymysql://{DB_USER}:{DB_PASSWORD}@{cfg.host}:{cfg.ports.mariadb}/{DB_NAME}?charset=utf8

[agent]
# a failed deploy would otherwise make the agent tar the lab machine's own /var/log and journal
deploy_logs_collect = never
# (the default) an http image_source goes to the agent as is: it downloads it and checks the checksum
image_download_source = http

[deploy]
# Metal3's ironic-image: automated cleaning is metadata only (disks are not shredded)
erase_devices_priority = 0
erase_devices_metadata_priority = 10
fast_track = false
http_root = {http_root(cfg)}
http_url = http://{cfg.host}:{cfg.ports.images}

[dhcp]
dhcp_provider = none

[pxe]
# the ipxe boot interface writes boot.ipxe, pxelinux.cfg/<MAC> and <node>/config (+ deploy_kernel, deploy_ramdisk)
# under [deploy]http_root; its TFTP side (unused: no DHCP, no TFTP server) stays in the lab too
tftp_root = {data / "tftpboot"}
tftp_master_path = {data / "tftpboot" / "master_images"}

[oslo_concurrency]
lock_path = {data / "locks"}

[oslo_messaging_notifications]
driver = noop

[redfish]
use_swift = false
# sushy itself retries a connection error 10 x 3 s; Ironic repeating that 5 times would make an
# unreachable BMC (a lab fault) take minutes to surface
connection_attempts = 1
connection_retry_interval = 1

[ipmi]
# Ironic waits this long between two ipmitool commands to one BMC (default 5 s, for slow BMC firmware); the lab's
# virtualbmc answers at once, and every boot-device change and power action of an IPMI host paid it twice
min_command_interval = 1

[nova]
send_power_notifications = false

[service_catalog]
endpoint_override = {ironic}
"""
    )
    return path
