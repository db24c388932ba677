"""Client for the BMC proxy's fault endpoint (lab/ironic/bmc_proxy.py).

    from lab.ironic import faults
    faults.set_fault(cfg, host.uuid, unreachable=True)
    faults.clear(cfg)

A system is named by its UUID (what appears in its Redfish path) or by the lab host
name (``host-03``), which is looked up in the lab's host list.
"""

from __future__ import annotations

import json
import urllib.parse
import urllib.request

from lab.config import LabConfig
from lab.ironic import hosts


def _url(cfg: LabConfig, system: str | None = None) -> str:
    base = f"http://{cfg.host}:{cfg.ports.bmc_proxy}/lab/faults"
    return base if system is None else f"{base}/{urllib.parse.quote(_system_id(system), safe='')}"


def _system_id(system: str) -> str:
    for h in hosts.all_hosts():  # the IPMI host too: its BMC acts through the proxy
        if system == h.name:
            return h.uuid
    return system


def _call(method: str, url: str, body: dict | None = None) -> dict:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read() or b"{}")


def set_fault(
    cfg: LabConfig,
    system: str,
    *,
    unreachable: bool = False,
    delay: float = 0,
    power_delay: float = 0,
    fail_virtual_media: bool = False,
    fail_power: bool = False,
    refuse_graceful: bool = False,
) -> dict:
    """Replace the faults of one system (all off clears it)."""
    fault = {
        "unreachable": unreachable,
        "delay": delay,
        "power_delay": power_delay,
        "fail_virtual_media": fail_virtual_media,
        "fail_power": fail_power,
        "refuse_graceful": refuse_graceful,
    }
    return _call("PUT", _url(cfg, system), fault)


def resets(cfg: LabConfig, system: str) -> list[dict]:
    """The ComputerSystem.Reset requests the BMC of one system received, in order: ``{"reset_type" (ForceOff,
    GracefulShutdown, On, ForceRestart, ...), "status" (the HTTP status it answered), "time"}``."""
    url = f"http://{cfg.host}:{cfg.ports.bmc_proxy}/lab/resets/log/{urllib.parse.quote(_system_id(system), safe='')}"
    return _call("GET", url)  # type: ignore[return-value]


def get(cfg: LabConfig, system: str | None = None) -> dict:
    return _call("GET", _url(cfg, system))


def clear(cfg: LabConfig, system: str | None = None) -> None:
    _call("DELETE", _url(cfg, system))
