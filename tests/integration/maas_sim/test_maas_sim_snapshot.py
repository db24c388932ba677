"""State survives a restart when the simulator is given a snapshot file.

This runs its own simulator process (not the lab's) on a free loopback port,
started and stopped by its PID.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import requests

from lab.config import REPO

KEY = "snapck:snaptk:snapts"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(port: int, snapshot) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-m", "lab.maas_sim", "--port", str(port), "--api-key", KEY, "--snapshot", str(snapshot),
         "--machines", "3", "--timings", '{"power": 0}'],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while True:
        try:
            if requests.get(f"http://127.0.0.1:{port}/MAAS/api/2.0/version/", timeout=1).ok:
                return proc
        except requests.ConnectionError:
            pass
        assert proc.poll() is None, "simulator exited during start-up"
        assert time.monotonic() < deadline, "simulator not ready"
        time.sleep(0.1)


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    proc.wait(timeout=15)


def _auth(sim) -> dict:
    return {"Authorization": sim.auth_header(KEY)}  # a fresh nonce each request: MAAS refuses a replay


def test_snapshot_keeps_state_across_restart(tmp_path, sim):
    port, snapshot = _free_port(), tmp_path / "maas.json"
    api = f"http://127.0.0.1:{port}/MAAS/api/2.0/"
    proc = _start(port, snapshot)
    try:
        m = requests.post(api + "machines/", params={"op": "allocate"}, headers=_auth(sim), timeout=30).json()
        dns = requests.post(api + "dnsresources/", data={"fqdn": "keep.maas", "ip_addresses": "10.1.1.1"},
                            headers=_auth(sim), timeout=30).json()  # fmt: skip
    finally:
        _stop(proc)
    assert snapshot.exists()
    proc = _start(port, snapshot)
    try:
        again = requests.get(api + f"machines/{m['system_id']}/", headers=_auth(sim), timeout=30).json()
        assert (again["status_name"], again["owner"]) == ("Allocated", "admin")
        listed = requests.get(api + "machines/", headers=_auth(sim), timeout=30).json()
        assert len(listed) == 3  # loaded, not seeded again
        kept = requests.get(api + f"dnsresources/{dns['id']}/", headers=_auth(sim), timeout=30).json()
        assert [a["ip"] for a in kept["ip_addresses"]] == ["10.1.1.1"]
    finally:
        _stop(proc)
