"""Lab service "nodesim": the node simulator (lab/nodesim) as one background process.

``nodesim`` polls Ironic and the MAAS simulator and plays cloud-init, kubeadm
and the kubelet of every provisioned host; the workload API servers
(``nodesim-api-<host>-<port>``) and etcd members (``nodesim-etcd-<host>-<port>-<node>``)
it starts are lab processes of their own, stopped with it.
State: ``cfg.data("nodesim")/state.json``.  Control API: 127.0.0.1:ports.node_simulator.
"""

from __future__ import annotations

import os
import shutil
import sys

from lab import process
from lab.config import REPO, LabConfig
from lab.nodesim import agent, client, clusters, etcd

NAME = "nodesim"


def _url(cfg: LabConfig) -> str:
    return f"http://{cfg.host}:{cfg.ports.node_simulator}/status"


def up(cfg: LabConfig) -> dict:
    # each workload cluster runs its own etcd members and API server: the binaries must be there
    from lab.kube_build import build

    build.build(cfg)
    if process.pid_of(cfg, NAME) is None and process.port_open(cfg.host, cfg.ports.node_simulator):
        raise process.LabError(f"port {cfg.host}:{cfg.ports.node_simulator} is taken by something else")
    python = REPO / ".venv" / "bin" / "python"
    env = {"PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    process.start(
        cfg,
        NAME,
        [str(python) if python.exists() else sys.executable, "-m", "lab.nodesim"],
        env=env,
        cwd=REPO,
        ready=lambda: process.http_ok(_url(cfg)),
        timeout=30,
    )
    return {"control": _url(cfg), "state": str(cfg.data(NAME) / "state.json")}


def _workload_processes(cfg: LabConfig) -> list[str]:
    return clusters.running_names(cfg) + etcd.running_names(cfg) + agent.running_names(cfg)


def down(cfg: LabConfig) -> None:
    process.stop(cfg, NAME)
    for name in _workload_processes(cfg):
        process.stop(cfg, name)
    # the hosts' disks keep their files (what is written on them survives a lab restart, as on a host)
    agent.detach_disks(cfg)


def status(cfg: LabConfig) -> dict:
    pid = process.pid_of(cfg, NAME)
    out: dict = {
        "healthy": False,
        "pid": pid,
        "control": _url(cfg),
        "api_servers": clusters.running_names(cfg),
        "etcd_members": etcd.running_names(cfg),
    }
    if pid is None:
        return out
    try:
        st = client.status(cfg)
    except (OSError, client.ControlError) as exc:
        out["error"] = str(exc)
        return out
    out.update(healthy=True, clusters=sorted(st.get("clusters", {})), nodes=len(st.get("nodes", {})))
    return out


def reset(cfg: LabConfig) -> None:
    """Forget every host and cluster: API servers and etcd members stopped, their data dropped, state emptied."""
    was_running = process.pid_of(cfg, NAME) is not None
    process.stop(cfg, NAME)
    for name in _workload_processes(cfg):
        process.stop(cfg, name)
    agent.detach_disks(cfg, remove=True)
    shutil.rmtree(cfg.data(NAME), ignore_errors=True)
    for prefix in (clusters.PREFIX, etcd.PREFIX):
        for path in (cfg.root / "data").glob(prefix + "*"):
            shutil.rmtree(path, ignore_errors=True)
    if was_running:
        up(cfg)
