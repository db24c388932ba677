"""What tests and playbooks call: the node simulator's control API (lab/nodesim/__main__.py)."""

from __future__ import annotations

import json
import time
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


def _switch(cfg: LabConfig, path: str, body: dict, settle: float) -> dict:
    """Stop or start a Node's kubelet or etcd member.  The simulator finds it in the state its last pass
    saved, which can trail the cluster itself by a pass (a Node Ready in the API before the pass that made it
    has ended): a 404 is asked again for up to ``settle`` seconds before it is final."""
    deadline = time.monotonic() + settle
    while True:
        try:
            return _call(cfg, "POST", path, body)
        except ControlError as exc:
            if "HTTP 404" not in str(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(0.5)


def status(cfg: LabConfig) -> dict:
    return _call(cfg, "GET", "/status")


def set_timings(cfg: LabConfig, **seconds: float) -> dict:
    """e.g. ``set_timings(cfg, grace=3, lease_renew=1)``: a Node goes Unknown 3 s after its last heartbeat."""
    return _call(cfg, "POST", "/timings", seconds)


def stop_kubelet(cfg: LabConfig, node: str, cluster: str | None = None, settle: float = 30) -> dict:
    return _switch(cfg, "/kubelet", {"node": node, "cluster": cluster, "running": False}, settle)


def start_kubelet(cfg: LabConfig, node: str, cluster: str | None = None, settle: float = 30) -> dict:
    return _switch(cfg, "/kubelet", {"node": node, "cluster": cluster, "running": True}, settle)


def stop_etcd(cfg: LabConfig, node: str, cluster: str | None = None, settle: float = 30) -> dict:
    """Stop the etcd member of control-plane Node ``node`` while its host stays up; it stays down until started."""
    return _switch(cfg, "/etcd", {"node": node, "cluster": cluster, "running": False}, settle)


def start_etcd(cfg: LabConfig, node: str, cluster: str | None = None, settle: float = 30) -> dict:
    return _switch(cfg, "/etcd", {"node": node, "cluster": cluster, "running": True}, settle)


def host(cfg: LabConfig, key: str) -> dict | None:
    """What the simulator made of one host (``ironic/<uuid>`` or ``maas/<system_id>``): phase, error, node."""
    return status(cfg).get("hosts", {}).get(key)
