"""Start processes in the background, remember their PID, stop them by PID.

A PID file holds ``<pid> <start-time>`` (the start time from /proc, so a
recycled PID is never mistaken for ours).  Nothing is ever stopped by name.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Callable, Mapping, Sequence

from lab.config import LabConfig


class LabError(RuntimeError):
    pass


def _start_time(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            stat = fh.read()
    except OSError:
        return None
    # field 22 (starttime); the command name in field 2 may hold spaces
    return stat.rsplit(")", 1)[1].split()[19]


def _pidfile(cfg: LabConfig, name: str) -> Path:
    return cfg.run / f"{name}.pid"


def pid_of(cfg: LabConfig, name: str) -> int | None:
    """The PID of a running lab process, or None (stale PID files are removed)."""
    path = _pidfile(cfg, name)
    try:
        pid_s, started = path.read_text().split()
        pid = int(pid_s)
    except (OSError, ValueError):
        return None
    if _start_time(pid) != started:
        path.unlink(missing_ok=True)
        return None
    return pid


def start(
    cfg: LabConfig,
    name: str,
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike | None = None,
    ready: Callable[[], bool] | None = None,
    timeout: float = 60.0,
) -> int:
    """Start ``argv`` as lab process ``name`` unless it already runs; wait for ``ready``."""
    pid = pid_of(cfg, name)
    if pid is not None:
        return pid
    cfg.ensure()
    log = open(cfg.logs / f"{name}.log", "ab")
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    proc = subprocess.Popen(
        list(argv),
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env=full_env,
        cwd=cwd,
        start_new_session=True,
    )
    log.close()
    started = _start_time(proc.pid)
    _pidfile(cfg, name).write_text(f"{proc.pid} {started}\n")
    if ready is not None:
        deadline = time.monotonic() + timeout
        while not ready():
            if proc.poll() is not None:
                _pidfile(cfg, name).unlink(missing_ok=True)
                raise LabError(
                    f"{name} exited with {proc.returncode} during start-up; "
                    f"see {cfg.logs / (name + '.log')}: {tail(cfg, name)}"
                )
            if time.monotonic() > deadline:
                stop(cfg, name)
                raise LabError(
                    f"{name} not ready after {timeout:.0f}s; see {cfg.logs / (name + '.log')}: {tail(cfg, name)}"
                )
            time.sleep(0.2)
    return proc.pid


def stop(cfg: LabConfig, name: str, timeout: float = 15.0) -> bool:
    """Stop lab process ``name`` (its whole process group) by PID. True if it was running."""
    pid = pid_of(cfg, name)
    if pid is None:
        return False
    started = _start_time(pid)
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            break
        except PermissionError:
            os.kill(pid, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
            if _start_time(pid) != started:
                break
            time.sleep(0.1)
        else:
            continue
        break
    _pidfile(cfg, name).unlink(missing_ok=True)
    return True


def running(cfg: LabConfig) -> dict[str, int]:
    """Every lab process with a live PID file."""
    out = {}
    for path in sorted(cfg.run.glob("*.pid")):
        pid = pid_of(cfg, path.stem)
        if pid is not None:
            out[path.stem] = pid
    return out


def session_pids(pid: int) -> list[int]:
    """The PIDs of the session ``pid`` leads (a lab process, or any command started with start_new_session)."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[3]) == pid:  # field 6, the session id
            out.append(int(entry.name))
    return out


def tree_pids(pid: int) -> list[int]:
    """``pid`` and all its descendants, by parent PID (a command whose children start sessions of their own, as
    ansible-playbook's workers do)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        out.append(todo.pop())
        todo += children.get(out[-1], [])
    return out


def rss_mib(pids: list[int]) -> float:
    """Resident memory of these processes together (MiB, from /proc; gone ones count 0)."""
    total = 0
    for pid in pids:
        try:
            for line in open(f"/proc/{pid}/status", encoding="ascii"):
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return round(total / 1024, 1)


def tail(cfg: LabConfig, name: str, lines: int = 15) -> str:
    try:
        return "\n".join((cfg.logs / f"{name}.log").read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _session(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return int(fh.read().rsplit(")", 1)[1].split()[3])  # field 6: the session id
    except (OSError, ValueError, IndexError):
        return None


def _listening(ports: set[int]) -> dict[str, int]:
    """socket inode -> port of every TCP socket listening on one of ``ports`` (any address; this netns)."""
    out = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, encoding="ascii") as fh:
                rows = fh.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            f = row.split()
            port = int(f[1].rsplit(":", 1)[1], 16)
            if f[3] == "0A" and port in ports:  # 0A: LISTEN
                out[f[9]] = port
    return out


def foreign_listeners(cfg: LabConfig, fields: Sequence[str]) -> list[str]:
    """The lab's ports (``Ports`` field names) that a process of another lab, or of anything else, listens on.

    Every lab process leads its own session (``start``), so a listener is this lab's when its session is one of
    this lab's running PIDs. A lab that started beside another on the same ports would otherwise find the other's
    service answering its readiness check and talk to it."""
    wanted = {getattr(cfg.ports, f): f for f in fields}
    inodes = _listening(set(wanted))
    if not inodes:
        return []
    owners: dict[str, set[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            fds = os.scandir(f"/proc/{entry.name}/fd")
        except OSError:
            continue
        with fds:
            for fd in fds:
                try:
                    link = os.readlink(fd.path)
                except OSError:
                    continue
                if link.startswith("socket:[") and link[8:-1] in inodes:
                    owners.setdefault(link[8:-1], set()).add(int(entry.name))
    ours = set(running(cfg).values())
    out = []
    for inode, port in sorted(inodes.items(), key=lambda kv: kv[1]):
        pids = owners.get(inode, set())
        if pids and all(pid in ours or _session(pid) in ours for pid in pids):
            continue
        who = ", ".join(f"pid {pid} ({_comm(pid)})" for pid in sorted(pids)) or "a process this lab cannot see"
        out.append(f"{port} ({wanted[port]}): {who}")
    return out


def refuse_foreign_ports(cfg: LabConfig, service: str) -> None:
    """LabError naming the ports of ``service`` (``SERVICE_PORTS``) that something outside this lab listens on."""
    from lab.config import SERVICE_PORTS

    busy = foreign_listeners(cfg, SERVICE_PORTS.get(service, ()))
    if busy:
        raise LabError(
            f"port(s) of the lab in {cfg.root} taken by a process it did not start: {'; '.join(busy)}. Another lab "
            "on the same ports? Give each lab dir its own BMCAPI_LAB_PORT_BASE and BMCAPI_LAB_LOOPBACK (docs/lab.md)."
        )


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8") as fh:
            return fh.read().strip()
    except OSError:
        return "?"


def port_open(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def http_ok(url: str, timeout: float = 2.0, context=None, headers: Mapping[str, str] | None = None) -> bool:
    req = urllib.request.Request(url, headers=dict(headers or {}))
    try:
        with urllib.request.urlopen(req, timeout=timeout, context=context) as resp:
            return 200 <= resp.status < 300
    except (urllib.error.URLError, OSError, ValueError):
        return False
