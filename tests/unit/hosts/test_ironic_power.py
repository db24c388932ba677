"""Power and the reboot.metal3.io annotations as baremetal-operator drives them (baremetal-operator
pkg/provisioner/ironic/ironic.go PowerOn, PowerOff): soft by
default, hard on request, a refused soft power-off recorded with BMO's message and retried hard, the suffixless
annotation dropped once the host is off, suffixed ones left to their owners."""

from __future__ import annotations

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.hosts.ironic import power as ironic_power
from ansible_collections.baremetal.capi.plugins.module_utils.model import names as S
from tests.unit.hosts import fake_ironic
from tests.unit.hosts import ironic_hosts as ih

REBOOT = S.REBOOT_ANNOTATION


@pytest.fixture
def lab(tmp_path):
    drv, bm = fake_ironic.driver()
    st = ih.store(tmp_path)
    node = ih.provisioned(st, bm)
    ih.settle(drv, st)
    bm.calls.clear()
    return drv, bm, st, node


def power_calls(bm) -> list:
    return [c for c in bm.calls if c[0] in ("power", "put")]


def test_a_reboot_annotation_powers_off_softly_drops_the_annotation_and_powers_on(lab):
    drv, bm, st, node = lab
    ih.annotate(st, {REBOOT: ""})
    ih.settle(drv, st)
    assert power_calls(bm) == [
        ("put", f"/nodes/{node.id}/states/power", "soft power off", 180),
        ("power", "power on"),
    ]
    host = ih.bmh(st)
    assert REBOOT not in host["metadata"]["annotations"]
    assert host["status"]["poweredOn"] is True and not host["status"].get("errorType")


def test_hard_mode_powers_off_hard(lab):
    drv, bm, st, _node = lab
    ih.annotate(st, {REBOOT: '{"mode": "hard"}'})
    ih.settle(drv, st)
    assert power_calls(bm) == [("power", "power off"), ("power", "power on")]


def test_any_hard_annotation_wins(lab):
    drv, bm, st, _node = lab
    ih.annotate(st, {REBOOT: "", REBOOT + "/remediation": '{"mode":"hard"}'})
    drv.reconcile(st, ih.KEY)
    assert power_calls(bm) == [("power", "power off")]


def test_a_refused_soft_power_off_is_bmos_power_error_and_the_next_try_is_hard(lab):
    drv, bm, st, node = lab
    bm.soft_fails = True  # Ironic accepts it; the BMC refuses it: power stays on, last_error set
    ih.annotate(st, {REBOOT: '{"mode": "soft"}'})
    drv.reconcile(st, ih.KEY)
    status = ih.bmh(st)["status"]
    assert status.get("errorType") is None  # not known yet: Ironic works on it
    step = drv.reconcile(st, ih.KEY)
    status = ih.bmh(st)["status"]
    assert status["errorType"] == S.BMH_ERROR_POWER and status["errorCount"] == 1
    assert status["errorMessage"] == (
        "Continuing with hard poweroff after soft poweroff fails. More details: "
        "Redfish exception occurred. Error: GracefulShutdown refused"
    )
    assert not step.done
    # forced: last_error ignored, hard power off; the error clears once the host is off, then it is powered on
    ih.settle(drv, st)
    assert power_calls(bm) == [
        ("put", f"/nodes/{node.id}/states/power", "soft power off", 180),
        ("power", "power off"),
        ("power", "power on"),
    ]
    host = ih.bmh(st)
    assert not host["status"].get("errorType") and host["status"]["poweredOn"] is True
    assert REBOOT not in host["metadata"]["annotations"]


def test_soft_power_off_not_supported_falls_back_to_hard_at_once(lab):
    drv, bm, st, node = lab
    bm.soft_unsupported = True
    ih.annotate(st, {REBOOT: ""})
    drv.reconcile(st, ih.KEY)
    assert power_calls(bm) == [("put", f"/nodes/{node.id}/states/power", "soft power off", 180), ("power", "power off")]
    assert not ih.bmh(st)["status"].get("errorType")


def test_a_failed_hard_power_off_has_no_soft_prefix(lab):
    drv, bm, st, node = lab
    ih.annotate(st, {REBOOT: '{"mode": "hard"}'})
    bm.nodes_by_id[node.id].last_error = "Failed to set power state: BMC unreachable"
    drv.reconcile(st, ih.KEY)
    assert ih.bmh(st)["status"]["errorMessage"] == "Failed to set power state: BMC unreachable"


def test_a_suffixed_annotation_keeps_the_host_off_until_its_owner_removes_it(lab):
    drv, bm, st, _node = lab
    key = REBOOT + "/capm3-remediation"
    ih.annotate(st, {key: '{"mode": "hard"}'})
    ih.settle(drv, st)
    host = ih.bmh(st)
    assert host["status"]["poweredOn"] is False and key in host["metadata"]["annotations"]
    bm.calls.clear()
    assert drv.reconcile(st, ih.KEY).done and power_calls(bm) == []
    ih.annotate(st, {key: None})
    ih.settle(drv, st)
    assert power_calls(bm) == [("power", "power on")]


def test_the_suffixless_annotation_goes_whenever_the_host_is_off(lab):
    drv, bm, st, node = lab
    host = ih.bmh(st)
    host["spec"]["online"] = False
    st.update(host)
    ih.settle(drv, st)
    ih.annotate(st, {REBOOT: ""})
    bm.calls.clear()
    ih.settle(drv, st)
    assert REBOOT not in ih.bmh(st)["metadata"]["annotations"] and power_calls(bm) == []


def test_a_completed_deprovision_clears_every_reboot_annotation(lab):
    drv, bm, st, _node = lab
    key = REBOOT + "/owner"
    ih.annotate(st, {key: ""})
    host = ih.bmh(st)
    host["spec"].pop("image")
    st.update(host)
    for _ in range(20):
        drv.reconcile(st, ih.KEY)
        if ih.bmh(st)["status"]["provisioning"]["state"] == S.BMH_STATE_AVAILABLE:
            break
    assert not any(ironic_power.is_reboot_annotation(k) for k in ih.bmh(st)["metadata"]["annotations"])


def test_disable_power_off_reboots_softly_or_hard(lab):
    drv, bm, st, _node = lab
    host = ih.bmh(st)
    host["spec"]["disablePowerOff"] = True
    st.update(host)
    ih.annotate(st, {REBOOT: ""})
    drv.reconcile(st, ih.KEY)
    ih.annotate(st, {REBOOT: '{"mode": "hard"}'})
    drv.reconcile(st, ih.KEY)
    assert power_calls(bm) == [("power", "soft rebooting"), ("power", "rebooting")]


def test_a_step_that_asked_ironic_something_is_not_the_last_one(lab):
    drv, bm, st, node = lab
    # the node is on and the host should be: but a step that had to unset maintenance first goes on
    bm.nodes_by_id[node.id].is_maintenance = True
    step = drv.reconcile(st, ih.KEY)
    assert ("unset_maintenance",) in bm.calls and not step.done
    assert drv.reconcile(st, ih.KEY).done
