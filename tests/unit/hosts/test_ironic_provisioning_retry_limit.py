"""BMO's provisioning retry limit (--max-provisioning-retries): provisioningFailCount counts the failed deploys of
one image across deprovision cycles; at the limit the host is not provisioned again until its image changes."""

from __future__ import annotations

import tempfile
from types import SimpleNamespace

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.hosts.ironic import actions
from ansible_collections.baremetal.capi.plugins.module_utils.hosts.ironic import configdrive as cd
from ansible_collections.baremetal.capi.plugins.module_utils.hosts.ironic.context import NOW, Ctx
from ansible_collections.baremetal.capi.plugins.module_utils.hosts.ironic.driver import IronicDriver
from ansible_collections.baremetal.capi.plugins.module_utils.model import names as S
from ansible_collections.baremetal.capi.plugins.module_utils.store.sqlite import SqliteStore

BAD = {"url": "http://images/img.raw", "checksum": "0" * 64, "checksumType": "sha256", "format": "raw"}
GOOD = dict(BAD, checksum="1" * 64)


def _ctx(state: str, image: dict, limit: int = 5, **status) -> Ctx:
    host = {
        "metadata": {"name": "h0", "namespace": "ns", "uid": "u-1"},
        "spec": {"online": True, "image": dict(image)},
        # an available host has been through preparing: its root device hints are recorded
        "status": {"provisioning": {"ID": "n-1", "state": state, "rootDeviceHints": cd.DEFAULT_ROOT_DEVICE}, **status},
    }
    driver = SimpleNamespace(poll=1.0, boot_iso=None, max_provisioning_retries=limit, backoff=lambda n: float(2**n))
    store = SqliteStore(tempfile.mkdtemp(prefix="bmcapi-retry-") + "/s.db")  # no HostFirmwareSettings in it
    return Ctx(driver, store=store, host=host, conn=SimpleNamespace(baremetal=SimpleNamespace()))


def _deploy_failed(ctx: Ctx) -> None:
    info, _ = cd.instance_info(ctx.view(), hints=None)
    ctx.node = SimpleNamespace(
        id="n-1", provision_state="deploy failed", instance_info=info, last_error="Image checksum mismatch"
    )


def test_a_failed_deploy_counts_and_records_the_image_it_tried():
    ctx = _ctx(S.BMH_STATE_PROVISIONING, BAD, provisioningFailCount=2, lastAttemptedImage=BAD)
    _deploy_failed(ctx)
    actions._provisioning(ctx)
    assert ctx.state == S.BMH_STATE_DEPROVISIONING
    assert ctx.status["provisioningFailCount"] == 3 and ctx.status["lastAttemptedImage"] == BAD
    assert ctx.status["errorCount"] == 1  # errorCount counts this attempt only


def test_below_the_limit_the_same_image_is_provisioned_again():
    ctx = _ctx(S.BMH_STATE_AVAILABLE, BAD, provisioningFailCount=4, lastAttemptedImage=BAD)
    assert actions._available(ctx) == NOW
    assert ctx.state == S.BMH_STATE_PROVISIONING and ctx.status["provisioningFailCount"] == 4


def test_at_the_limit_the_same_image_is_not_provisioned_again():
    ctx = _ctx(S.BMH_STATE_AVAILABLE, BAD, provisioningFailCount=5, lastAttemptedImage=BAD)
    actions._available(ctx)
    assert ctx.state == S.BMH_STATE_AVAILABLE
    assert ctx.status["errorType"] == S.BMH_ERROR_PROVISIONING
    assert ctx.status["errorMessage"].startswith("provisioning failed 5 times (the limit is 5) with image "), ctx.status
    assert ctx.status["provisioningFailCount"] == 5


def test_no_limit_when_it_is_zero():
    ctx = _ctx(S.BMH_STATE_AVAILABLE, BAD, limit=0, provisioningFailCount=50, lastAttemptedImage=BAD)
    actions._available(ctx)
    assert ctx.state == S.BMH_STATE_PROVISIONING


def test_a_new_image_resets_the_count_and_is_provisioned():
    ctx = _ctx(S.BMH_STATE_AVAILABLE, GOOD, provisioningFailCount=5, lastAttemptedImage=BAD)
    actions._available(ctx)
    assert ctx.state == S.BMH_STATE_PROVISIONING
    assert "provisioningFailCount" not in ctx.status and "lastAttemptedImage" not in ctx.status


def test_a_removed_image_resets_the_count():
    ctx = _ctx(S.BMH_STATE_AVAILABLE, {}, provisioningFailCount=5, lastAttemptedImage=BAD)
    ctx.host["spec"]["online"] = False
    actions._reset_fail_count_on_new_image(ctx)
    assert "provisioningFailCount" not in ctx.status and "lastAttemptedImage" not in ctx.status


def test_a_successful_deploy_resets_the_count():
    ctx = _ctx(S.BMH_STATE_PROVISIONING, GOOD, provisioningFailCount=3, lastAttemptedImage=GOOD)
    ctx.node = SimpleNamespace(id="n-1", provision_state="active", power_state="power on", instance_info={})
    actions._provisioning(ctx)
    assert ctx.state == S.BMH_STATE_PROVISIONED
    assert "provisioningFailCount" not in ctx.status and "lastAttemptedImage" not in ctx.status


def test_the_driver_option_defaults_to_bmo_and_refuses_a_negative_limit():
    assert IronicDriver(ironic_url="http://ironic").max_provisioning_retries == S.BMH_MAX_PROVISIONING_RETRIES == 5
    assert IronicDriver(ironic_url="http://ironic", max_provisioning_retries=0).max_provisioning_retries == 0
    with pytest.raises(Invalid, match="max_provisioning_retries"):
        IronicDriver(ironic_url="http://ironic", max_provisioning_retries=-1)


class _RefusingIronic:
    """Ironic's validation refuses the deploy interface (as for an image it cannot fetch)."""

    def patch_node(self, node, ops):
        return node

    def validate_node(self, node, required=()):
        ok = SimpleNamespace(result=True, reason=None)
        return {"boot": ok, "deploy": SimpleNamespace(result=False, reason="image_source is not reachable")}


def test_a_validation_error_counts_as_a_failed_attempt_and_deprovisions():
    # BMO: any error of a provisioning attempt sends the host to deprovisioning and counts towards the limit
    ctx = _ctx(S.BMH_STATE_PROVISIONING, BAD, provisioningFailCount=1, lastAttemptedImage=BAD)
    ctx.conn = SimpleNamespace(baremetal=_RefusingIronic())
    info, _ = cd.instance_info(ctx.view(), hints=None)
    ctx.node = SimpleNamespace(
        id="n-1",
        provision_state="available",
        driver="redfish",
        instance_info=info,
        instance_id="u-1",
        deploy_interface="direct",
    )
    ctx.store = SimpleNamespace(get=lambda *a: {"data": {}})
    actions._provisioning(ctx)
    assert ctx.status["errorType"] == S.BMH_ERROR_PROVISIONING
    assert ctx.status["errorMessage"] == "host validation error: deploy: image_source is not reachable"
    assert ctx.state == S.BMH_STATE_DEPROVISIONING
    assert ctx.status["provisioningFailCount"] == 2 and ctx.status["lastAttemptedImage"] == BAD


def test_the_baremetalhost_module_passes_the_limit_to_the_driver():
    from ansible_collections.baremetal.capi.plugins.module_utils.module import host_argument_spec

    assert host_argument_spec()["max_provisioning_retries"] == {"type": "int"}
