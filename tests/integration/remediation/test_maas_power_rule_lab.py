"""MAAS remediation's power rule on the MAAS simulator (CAPMAAS PR #379, issue 17): a machine is powered on only
when MAAS reports it "off". A BMC in "error" or "unknown" may hide a host that is up; IPMI power_on would
power-cycle it. The remediation target (remediation/targets.py MaasTarget), driven against the simulator
through the collection's MAAS client, for a Deployed machine whose remediation wants it back on:

* "error" and "unknown": no power call (the simulator records no pending power change and the state stays);
* "off": one power_on, and the machine comes on;
* while the remediation wants it off, "error" does not stop a power_off (off is always safe to ask for).
"""

from __future__ import annotations

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.maas.client import Client
from ansible_collections.baremetal.capi.plugins.module_utils.remediation import common
from ansible_collections.baremetal.capi.plugins.module_utils.remediation.targets import MaasTarget

from .conftest import eventually

pytestmark = pytest.mark.timeout(300)


def _infra(name: str, want_off: bool) -> dict:
    annotations = {f"{common.MAAS_POWER_OFF_PREFIX}rem-{name}": common.POWER_OFF_VALUE} if want_off else {}
    return {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "MaasMachine",
            "metadata": {"name": name, "namespace": "default", "annotations": annotations}}  # fmt: skip


def test_power_on_only_a_machine_maas_reports_off(sim, tag, lab):
    maas = lab.info["maas"]
    client = Client(maas["url"], maas["api_key"])
    target_kind = MaasTarget(store=None, client=client)
    (m,) = sim.seed({"zone": "az-1", "cpu_count": 2, "memory": 4096}, tag=tag)
    sid = m["system_id"]
    sim.ctl("PATCH", f"machines/{sid}", {"status": "Deployed", "owner": "admin"})

    def target(want_off: bool) -> dict:
        return {"infra": _infra("w-0", want_off), "maas": client.read_machine(sid), "name": m["hostname"],
                "system_id": sid}  # fmt: skip

    for state in ("error", "unknown"):
        sim.ctl("PATCH", f"machines/{sid}", {"power_state": state})
        t = target(want_off=False)
        assert t["maas"]["power_state"] == state
        assert target_kind.drive(t) == "", state  # nothing asked of MAAS
        seen = sim.machine(sid)
        assert seen["power_state"] == state and seen["power_pending"] is None, seen
        assert target_kind.powered(t) is None  # neither on nor off: remediation waits

    sim.ctl("PATCH", f"machines/{sid}", {"power_state": "off"})
    msg = target_kind.drive(target(want_off=False))
    assert msg.startswith("asked MAAS to power") and msg.endswith(" on"), msg
    eventually(lambda: sim.machine(sid)["power_state"] == "on", "the machine powered on", patience=60)
    assert target_kind.drive(target(want_off=False)) == ""  # on: nothing more

    # wanting it off, an "error" reading is not a reason to hold back a power_off
    sim.ctl("PATCH", f"machines/{sid}", {"power_state": "error"})
    msg = target_kind.drive(target(want_off=True))
    assert msg.endswith(" off"), msg
    eventually(lambda: sim.machine(sid)["power_state"] == "off", "the machine powered off", patience=60)
