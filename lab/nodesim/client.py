"""What tests and playbooks call: the node simulator's control API (lab/nodesim/__main__.py)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

from lab.config import LabConfig


class ControlError(RuntimeError):
    pass


def _call(cfg: LabConfig, method: str, path: str, body: dict | None = None) -> dict:
    req = urllib.request.Request(
        f"http://{cfg.host}:{cfg.ports.node_simulator}{path}",
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.load(resp)
    except urllib.error.HTTPError as exc:
        raise ControlError(f"node simulator {method} {path}: HTTP {exc.code}: {exc.read().decode()}") from None


def status(cfg: LabConfig) -> dict:
    return _call(cfg, "GET", "/status")


def set_timings(cfg: LabConfig, **seconds: float) -> dict:
    """e.g. ``set_timings(cfg, grace=3, lease_renew=1)``: a Node goes Unknown 3 s after its last heartbeat."""
    return _call(cfg, "POST", "/timings", seconds)


def stop_kubelet(cfg: LabConfig, node: str, cluster: str | None = None) -> dict:
    return _call(cfg, "POST", "/kubelet", {"node": node, "cluster": cluster, "running": False})


def start_kubelet(cfg: LabConfig, node: str, cluster: str | None = None) -> dict:
    return _call(cfg, "POST", "/kubelet", {"node": node, "cluster": cluster, "running": True})


def stop_etcd(cfg: LabConfig, node: str, cluster: str | None = None) -> dict:
    """Stop the etcd member of control-plane Node ``node`` while its host stays up; it stays down until started."""
    return _call(cfg, "POST", "/etcd", {"node": node, "cluster": cluster, "running": False})


def start_etcd(cfg: LabConfig, node: str, cluster: str | None = None) -> dict:
    return _call(cfg, "POST", "/etcd", {"node": node, "cluster": cluster, "running": True})


def host(cfg: LabConfig, key: str) -> dict | None:
    """What the simulator made of one host (``ironic/<uuid>`` or ``maas/<system_id>``): phase, error, node."""
    return status(cfg).get("hosts", {}).get(key)
