"""Lab service "ironic": MariaDB, Redfish BMCs (sushy-tools + fault proxy), an image server, Ironic.

Brought up in this order, each a lab process stopped by PID on `down`:

ironic-mariadb    mariadbd (Debian's package) on 127.0.0.1:ports.mariadb, datadir under .lab/data/mariadb
ironic-sushy      sushy-emulator, fake system driver, BMCAPI_LAB_HOSTS systems (default 12) on ports.sushy
ironic-bmc-proxy  lab/ironic/bmc_proxy.py in front of it on ports.bmc_proxy: what Ironic talks to
ironic-vbmc-<h>   virtualbmc (lab/ironic/vbmc.py): the IPMI BMC of each IPMI host, UDP 127.A.11.N:ports.ipmi
ironic-images     an HTTP server for the boot ISO, test images and Ironic's http_root on ports.images
ironic            standalone Ironic (noauth, no RPC bus, redfish + fake-hardware) on ports.ironic

`up` also writes the lab inventory (.lab/inventory/ironic.json, clouds.yaml).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request

from lab import process
from lab.config import REPO, LabConfig
from lab.ironic import configs, faults, hosts, install, ipmi, iso, mariadb

SUSHY = "ironic-sushy"
PROXY = "ironic-bmc-proxy"
IMAGES = "ironic-images"
IRONIC = "ironic"
# start order; `down` goes backwards. The IPMI BMCs (one per IPMI host) come after the proxy they talk through.
PROCESSES = (mariadb.NAME, SUSHY, PROXY, IMAGES, IRONIC)


def processes(cfg: LabConfig) -> tuple[str, ...]:
    return (mariadb.NAME, SUSHY, PROXY, *ipmi.names(cfg), IMAGES, IRONIC)


def _ironic_url(cfg: LabConfig) -> str:
    return f"http://{cfg.host}:{cfg.ports.ironic}"


def _sushy_ok(cfg: LabConfig) -> bool:
    # the service root is the one path the emulator serves without credentials
    return process.http_ok(f"http://{cfg.host}:{cfg.ports.sushy}/redfish/v1")


def _checks(cfg: LabConfig) -> dict:
    images = f"http://{cfg.host}:{cfg.ports.images}"
    return {
        mariadb.NAME: lambda: mariadb.ready(cfg),
        SUSHY: lambda: _sushy_ok(cfg),
        PROXY: lambda: process.http_ok(f"http://{cfg.host}:{cfg.ports.bmc_proxy}/lab/faults"),
        IMAGES: lambda: process.http_ok(f"{images}/images/boot.iso"),
        IRONIC: lambda: process.http_ok(f"{_ironic_url(cfg)}/v1"),
        **{ipmi.name(h): (lambda h=h: ipmi.healthy(cfg, h)) for h in ipmi.ipmi_hosts(cfg)},
    }


def _restart_if_changed(cfg: LabConfig, name: str, path, write) -> bool:
    """Rewrite a config file; a process running with the old content is stopped, for the caller to start.

    True when the content changed."""
    before = path.read_text() if path.exists() else None
    write()
    changed = before is not None and path.read_text() != before
    if changed:
        process.stop(cfg, name)
    return changed


def _schema(cfg: LabConfig, venv, conf) -> None:
    tables = mariadb.sql(
        cfg, f"SELECT COUNT(*) FROM information_schema.tables WHERE table_schema='{configs.DB_NAME}'"
    ).strip()
    marker = cfg.data("ironic") / "schema-version"
    key = install.venv_key()
    if tables != "0" and marker.exists() and marker.read_text().strip() == key:
        return
    # an empty database gets the whole schema at once; an older one is migrated
    action = "create_schema" if tables == "0" else "upgrade"
    with open(cfg.logs / "ironic-dbsync.log", "ab") as out:
        rc = subprocess.run(
            [str(venv / "bin" / "ironic-dbsync"), "--config-file", str(conf), action],
            stdout=out,
            stderr=subprocess.STDOUT,
            check=False,
        ).returncode
    if rc != 0:
        raise process.LabError(f"ironic-dbsync {action} failed with {rc}; see {cfg.logs / 'ironic-dbsync.log'}")
    marker.write_text(key + "\n")


def _start_sushy(cfg: LabConfig, venv) -> int:
    conf = cfg.data("ironic") / "sushy.conf"
    return process.start(
        cfg,
        SUSHY,
        # sushy-emulator with BIOS attributes and firmware versions in its fake driver (lab/ironic/sushy_lab.py)
        [str(venv / "bin" / "python"), str(REPO / "lab" / "ironic" / "sushy_lab.py"), "--config", str(conf)],
        # virtual media downloads land in TMPDIR: keep them in the lab, where tests read them back
        env={"TMPDIR": str(configs.sushy_media_dir(cfg))},
        ready=lambda: _sushy_ok(cfg),
        timeout=60,
    )


def up(cfg: LabConfig) -> dict:
    t0 = time.monotonic()
    installed = install.ensure_debian_packages(cfg)
    venv = install.ensure_venv(cfg)
    install.ensure_ipa_venv(cfg)
    vbmc_venv = install.ensure_vbmc_venv(cfg)
    t_install = time.monotonic() - t0

    mariadb.up(cfg)

    sushy_conf = cfg.data("ironic") / "sushy.conf"
    if _restart_if_changed(cfg, SUSHY, sushy_conf, lambda: configs.sushy_conf(cfg, venv)):
        # another host list (BMCAPI_LAB_HOSTS): the emulator's saved state would keep the old systems
        _wipe_sushy_state(cfg)
    _start_sushy(cfg, venv)

    checks = _checks(cfg)
    process.start(
        cfg,
        PROXY,
        [
            sys.executable,
            "-m",
            "lab.ironic.bmc_proxy",
            "--listen",
            f"{cfg.host}:{cfg.ports.bmc_proxy}",
            "--upstream",
            f"http://{cfg.host}:{cfg.ports.sushy}",
        ],
        cwd=REPO,
        env={"PYTHONPATH": str(REPO)},
        ready=checks[PROXY],
    )
    ipmi.start_all(cfg, vbmc_venv)

    iso.make_images(cfg)
    process.start(
        cfg,
        IMAGES,
        [
            sys.executable,
            "-m",
            "http.server",
            str(cfg.ports.images),
            "--bind",
            cfg.host,
            "--directory",
            str(configs.http_root(cfg)),
        ],
        ready=checks[IMAGES],
    )

    conf = cfg.data("ironic") / "ironic.conf"
    _restart_if_changed(cfg, IRONIC, conf, lambda: configs.ironic_conf(cfg))
    _schema(cfg, venv, conf)
    t_ironic = time.monotonic()
    process.start(
        cfg,
        IRONIC,
        # Ironic's own service, its fake-hardware deploy and undeploy powering the node on and off as real deploy
        # interfaces do (lab/ironic/ironic_lab.py)
        [str(venv / "bin" / "python"), str(REPO / "lab" / "ironic" / "ironic_lab.py"), "--config-file", str(conf)],
        ready=checks[IRONIC],
        timeout=180,
    )
    inventory = hosts.write_inventory(cfg)
    return {
        "url": _ironic_url(cfg),
        "inventory": str(inventory),
        "hosts": hosts.host_count(),
        "apt_installed": installed,
        "install_s": round(t_install, 1),
        "ironic_start_s": round(time.monotonic() - t_ironic, 1),
    }


def down(cfg: LabConfig) -> None:
    for name in reversed(processes(cfg)):
        process.stop(cfg, name, timeout=30)


def status(cfg: LabConfig) -> dict:
    checks = _checks(cfg)
    services = {}
    for name in processes(cfg):
        pid = process.pid_of(cfg, name)
        pids = process.session_pids(pid) if pid else []
        services[name] = {
            "pid": pid,
            "pids": pids,
            "healthy": pid is not None and checks[name](),
            "rss_mib": process.rss_mib(pids),
        }
    return {
        "healthy": all(s["healthy"] for s in services.values()),
        "url": _ironic_url(cfg),
        "inventory": str(cfg.root / "inventory" / "ironic.json"),
        "services": services,
        "rss_mib": round(sum(s["rss_mib"] for s in services.values()), 1),
    }


def _api(cfg: LabConfig, method: str, path: str, body=None):
    req = urllib.request.Request(
        _ironic_url(cfg) + path,
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers={"Content-Type": "application/json", "X-OpenStack-Ironic-API-Version": "latest"},
    )
    with urllib.request.urlopen(req, timeout=30) as resp:
        data = resp.read()
    return json.loads(data) if data else None


def _delete_all_nodes(cfg: LabConfig, timeout: float = 180.0) -> None:
    for alloc in _api(cfg, "GET", "/v1/allocations")["allocations"]:
        try:
            _api(cfg, "DELETE", f"/v1/allocations/{alloc['uuid']}")
        except urllib.error.HTTPError:
            pass  # deleted with its node below
    deadline = time.monotonic() + timeout
    while True:
        nodes = _api(cfg, "GET", "/v1/nodes?fields=uuid,maintenance,provision_state")["nodes"]
        if not nodes:
            return
        busy = []
        for node in nodes:
            try:
                # maintenance lets Ironic delete a node in any stable state (active, deploy failed, ...)
                if not node["maintenance"]:
                    _api(cfg, "PUT", f"/v1/nodes/{node['uuid']}/maintenance", {"reason": "lab reset"})
                _api(cfg, "DELETE", f"/v1/nodes/{node['uuid']}")
            except urllib.error.HTTPError as exc:
                # 409: locked by a running task (deploying, power change); try again shortly
                busy.append(f"{node['uuid']} ({node['provision_state']}): HTTP {exc.code}")
        if busy and time.monotonic() > deadline:
            raise process.LabError(f"lab reset could not delete Ironic nodes: {'; '.join(busy)}")
        time.sleep(1)


def reset(cfg: LabConfig) -> None:
    """Hosts back to fresh: no Ironic nodes, every system off with empty virtual media, no faults."""
    if not status(cfg)["healthy"]:
        up(cfg)
    faults.clear(cfg)
    _delete_all_nodes(cfg)
    # the emulator keeps power and media state in SQLite under its state dir: a new one is a fresh rack
    process.stop(cfg, SUSHY)
    _wipe_sushy_state(cfg)
    _start_sushy(cfg, install.ensure_venv(cfg))


def _wipe_sushy_state(cfg: LabConfig) -> None:
    for folder in (configs.sushy_state_dir(cfg), configs.sushy_media_dir(cfg)):
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
