"""errorCount as baremetal-operator keeps it: counted once per failure, zeroed by a completed deprovision."""

from __future__ import annotations

from types import SimpleNamespace

from ansible_collections.baremetal.capi.plugins.module_utils.hosts.ironic import delete
from ansible_collections.baremetal.capi.plugins.module_utils.hosts.ironic.context import Ctx
from ansible_collections.baremetal.capi.plugins.module_utils.model import names as S

BAD = "Image provisioning failed (url: http://i/img, checksum: 000): checksum mismatch"


def _ctx(status: dict | None = None, node=None) -> Ctx:
    host = {
        "metadata": {"name": "h0", "namespace": "ns"},
        "spec": {"online": True},
        "status": {"provisioning": {"ID": "n-1", "state": S.BMH_STATE_PROVISIONING}, **(status or {})},
    }
    driver = SimpleNamespace(poll=1.0, backoff=lambda count: float(2**count))
    ctx = Ctx(driver, store=None, host=host, conn=SimpleNamespace(baremetal=SimpleNamespace()))
    ctx.node = node
    return ctx


def test_the_same_error_seen_again_is_not_counted_again():
    ctx = _ctx()
    assert ctx.set_error(S.BMH_ERROR_PROVISIONING, BAD) == 2.0
    assert ctx.set_error(S.BMH_ERROR_PROVISIONING, BAD) == 2.0  # a later poll of the same failed deploy
    assert ctx.status["errorCount"] == 1
    ctx.set_error(S.BMH_ERROR_PROVISIONING, "Cleaning failed: disk gone")
    assert ctx.status["errorCount"] == 2


def test_a_completed_deprovision_zeroes_the_count_and_keeps_the_message():
    ctx = _ctx(
        {"errorType": S.BMH_ERROR_PROVISIONING, "errorMessage": BAD, "errorCount": 3},
        node=SimpleNamespace(id="n-1", provision_state="available"),
    )
    ctx.status["provisioning"]["state"] = S.BMH_STATE_DEPROVISIONING
    delete.deprovisioning(ctx)
    assert ctx.state == S.BMH_STATE_AVAILABLE
    assert ctx.status["errorCount"] == 0
    assert ctx.status["errorMessage"] == BAD


def test_the_retry_failing_the_same_way_counts_from_one_again():
    ctx = _ctx({"errorType": S.BMH_ERROR_PROVISIONING, "errorMessage": BAD, "errorCount": 0})
    assert ctx.set_error(S.BMH_ERROR_PROVISIONING, BAD) == 2.0
    assert ctx.status["errorCount"] == 1
