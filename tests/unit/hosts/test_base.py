"""The driver contract helpers and the external driver, with a real sqlite store."""

from __future__ import annotations

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.hosts import base, drivers
from ansible_collections.baremetal.capi.plugins.module_utils.store.sqlite import SqliteStore

IMAGE = {"url": "http://x/i.raw", "checksum": "c", "checksumType": "sha256", "format": "raw"}


def bmh(state="available", online=True, annotations=None, image=None, powered=None, **status):
    obj = {
        "apiVersion": "metal3.io/v1alpha1",
        "kind": "BareMetalHost",
        "metadata": {"name": "h", "namespace": "ns", "annotations": annotations or {}},
        "spec": {"online": online},
        "status": {"provisioning": {"state": state}, "poweredOn": powered, **status},
    }
    if image:
        obj["spec"]["image"] = image
    return obj


def test_reboot_annotation_values():
    ann = {
        "reboot.metal3.io": "",
        "reboot.metal3.io/a": '{"mode":"hard"}',
        "reboot.metal3.io/b": '{"mode":"soft","force":true}',
        "reboot.metal3.io/c": "not json",
        "reboot.metal3.iox": "",
        "other": "",
    }
    assert base.reboot_annotations(bmh(annotations=ann)) == {
        "reboot.metal3.io": {"mode": "soft", "force": False},
        "reboot.metal3.io/a": {"mode": "hard", "force": False},
        "reboot.metal3.io/b": {"mode": "soft", "force": True},
        "reboot.metal3.io/c": {"mode": "soft", "force": False},
    }


def test_desired_power():
    assert base.desired_power(bmh("provisioned"))
    assert not base.desired_power(bmh("provisioned", online=False))
    assert not base.desired_power(bmh("provisioned", annotations={"reboot.metal3.io/x": ""}))
    # in available only forced reboots count (BMO ctrl:1748)
    assert base.desired_power(bmh("available", annotations={"reboot.metal3.io/x": ""}))
    assert not base.desired_power(bmh("available", annotations={"reboot.metal3.io/x": '{"force":true}'}))


def test_goal_and_reached():
    assert base.goal(bmh()) == "available"
    assert base.goal(bmh(image=IMAGE)) == "provisioned"
    assert base.goal(bmh(image=IMAGE, online=False)) == "available"
    assert base.goal(bmh("provisioned", image=IMAGE, online=False)) == "provisioned"
    assert base.reached(bmh("available", powered=True))
    assert not base.reached(bmh("available", powered=False))
    assert not base.reached(bmh("available", powered=None))
    assert not base.reached(bmh("provisioned", image=IMAGE, powered=True))  # status has no image yet
    done = bmh("provisioned", image=IMAGE, powered=True)
    done["status"]["provisioning"]["image"] = dict(IMAGE)
    assert base.reached(done)
    done["status"]["errorType"] = "provisioning error"
    assert not base.reached(done) and base.failed(done)


def test_unknown_driver():
    with pytest.raises(Invalid, match="unknown host driver"):
        drivers.get_driver("maas")


def test_ironic_driver_needs_an_endpoint(monkeypatch):
    monkeypatch.delenv("OS_CLOUD", raising=False)
    with pytest.raises(Invalid, match="cloud"):
        drivers.get_driver("ironic", {})
    with pytest.raises(Invalid, match="unknown ironic driver option"):
        drivers.get_driver("ironic", {"ironic_url": "http://x", "bogus": 1})
    monkeypatch.setenv("OS_CLOUD", "mycloud")
    assert drivers.get_driver("ironic", {}).cloud == "mycloud"


def test_external_driver_reads_status_only(tmp_path):
    store = SqliteStore(str(tmp_path / "s.db"))
    obj = bmh(image=IMAGE)
    del obj["status"]
    created = store.create(obj)
    drv = drivers.get_driver("external", {"poll": 1})
    step = drv.reconcile(store, created)
    assert not step.done and step.requeue_after == 1 and step.data["host"]["goal"] == "provisioned"
    assert (
        store.get("BareMetalHost", "h", "ns")["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    )
    created["status"] = {"provisioning": {"state": "provisioned", "image": dict(IMAGE)}, "poweredOn": True}
    store.update_status(created)
    assert drv.reconcile(store, ("ns", "h")).done
    # delete waits for whoever holds the finalizer
    held = store.get("BareMetalHost", "h", "ns")
    held["metadata"]["finalizers"] = ["baremetalhost.metal3.io"]
    store.update(held)
    assert not drv.delete(store, ("ns", "h")).done
    held = store.get("BareMetalHost", "h", "ns")
    held["metadata"]["finalizers"] = []
    store.update(held)
    assert drv.delete(store, ("ns", "h")).done
    store.close()


def test_new_errors_a_count_back_at_zero_is_none_but_a_failure_after_it_is():
    errors = base.NewErrors()
    k, msg = ("ns", "h0"), "Image provisioning failed (url: u, checksum: c): checksum mismatch"
    errors.start(k, {"errorCount": 1, "errorMessage": msg})  # the run starts with an earlier failure
    assert not errors.is_new(k, {"errorCount": 1, "errorMessage": msg})  # BMO's backoff, then its retry
    assert not errors.is_new(k, {"errorCount": 0, "errorMessage": msg})  # deprovisioned: the message stays
    assert errors.is_new(k, {"errorCount": 1, "errorMessage": msg})  # the retry failed the same way
    assert not errors.is_new(k, {"errorCount": 0, "errorMessage": ""})  # provisioned: no error


def test_new_errors_another_message_or_a_higher_count_is_new():
    errors = base.NewErrors()
    errors.start("a", {"errorCount": 2, "errorMessage": "x"})
    assert errors.is_new("a", {"errorCount": 3, "errorMessage": "x"})
    errors.start("b", {"errorCount": 2, "errorMessage": "x"})
    assert errors.is_new("b", {"errorCount": 2, "errorMessage": "y"})
    assert errors.is_new("c", {"errorCount": 1, "errorMessage": "z"}) is False  # first seen: what the run starts with
