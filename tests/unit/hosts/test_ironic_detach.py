"""The baremetalhost.metal3.io/detached annotation as baremetal-operator handles it (baremetal-operator
pkg/provisioner/ironic/ironic.go Detach): the node
leaves Ironic without the machine being touched, nothing more is asked of Ironic, the annotation's removal
registers and adopts the host again, and a detached host is deleted without power-off or deprovisioning."""

from __future__ import annotations

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.model import names as S
from tests.unit.hosts import fake_ironic
from tests.unit.hosts import ironic_hosts as ih

DETACHED = S.BMH_DETACHED_ANNOTATION


@pytest.fixture
def lab(tmp_path):
    drv, bm = fake_ironic.driver()
    return drv, bm, ih.store(tmp_path)


def test_a_provisioned_host_is_detached_without_touching_the_machine(lab):
    drv, bm, st = lab
    node = ih.provisioned(st, bm, annotations={DETACHED: ""})
    ih.settle(drv, st)
    status = ih.bmh(st)["status"]
    assert status["operationalStatus"] == S.BMH_OPERATIONAL_DETACHED
    assert status["provisioning"]["state"] == S.BMH_STATE_PROVISIONED and status["poweredOn"] is True
    # BMO's Detach is its Delete: maintenance (an active node), then DELETE - no power or provision change
    assert bm.writes() == [("maintenance", S.IRONIC_FORCED_DELETE_REASON), ("delete_node", "ns~h")]
    assert node.id not in bm.nodes_by_id
    # detached: later steps ask Ironic nothing and say done
    bm.calls.clear()
    step = drv.reconcile(st, ih.KEY)
    assert step.done and bm.writes() == []
    assert step.requeue_after is None


def test_no_ironic_action_while_detached_even_when_the_spec_changes(lab):
    drv, bm, st = lab
    ih.provisioned(st, bm, annotations={DETACHED: '{"deleteAction": "delete"}'})
    ih.settle(drv, st)
    host = ih.bmh(st)
    host["spec"]["online"] = False
    st.update(host)
    bm.calls.clear()
    assert drv.reconcile(st, ih.KEY).done
    assert bm.writes() == [] and bm.nodes_by_id == {}
    assert ih.bmh(st)["status"]["poweredOn"] is True


def test_a_host_in_another_state_is_detached_only_once_it_gets_there_or_when_forced(lab):
    drv, bm, st = lab
    node = ih.provisioned(st, bm, annotations={DETACHED: ""})
    host = ih.bmh(st)
    host["status"]["provisioning"]["state"] = S.BMH_STATE_PROVISIONING
    host["status"]["provisioning"].pop("image")
    st.update_status(host)
    bm.nodes_by_id[node.id].provision_state = "deploy wait"
    drv.reconcile(st, ih.KEY)
    assert node.id in bm.nodes_by_id and ih.bmh(st)["status"]["operationalStatus"] == S.BMH_OPERATIONAL_OK
    assert ("delete_node", "ns~h") not in bm.calls
    # forced: the wait is aborted (API 1.110), then the node removed
    ih.annotate(st, {DETACHED: '{"force": true}'})
    ih.settle(drv, st)
    assert ("provision", "abort") in bm.calls and ("delete_node", "ns~h") in bm.calls
    assert ih.bmh(st)["status"]["operationalStatus"] == S.BMH_OPERATIONAL_DETACHED


def test_a_forced_detach_below_api_1_110_undeploys_a_deploy_wait(tmp_path):
    drv, bm = fake_ironic.driver(fake_ironic.FakeBaremetal(max_microversion="1.95"))
    st = ih.store(tmp_path)
    node = ih.provisioned(st, bm, annotations={DETACHED: '{"force": true}'})
    host = ih.bmh(st)
    host["status"]["provisioning"]["state"] = S.BMH_STATE_PROVISIONING
    st.update_status(host)
    bm.nodes_by_id[node.id].provision_state = "deploy wait"
    drv.reconcile(st, ih.KEY)
    assert ("provision", "deleted") in bm.calls and ("provision", "abort") not in bm.calls


def test_removing_the_annotation_registers_and_adopts_the_host_again(lab):
    drv, bm, st = lab
    ih.provisioned(st, bm, annotations={DETACHED: ""})
    ih.settle(drv, st)
    ih.annotate(st, {DETACHED: None})
    bm.calls.clear()
    ih.settle(drv, st)
    status = ih.bmh(st)["status"]
    assert status["operationalStatus"] == S.BMH_OPERATIONAL_OK
    assert status["provisioning"]["state"] == S.BMH_STATE_PROVISIONED
    (node,) = bm.nodes_by_id.values()
    assert node.name == "ns~h" and node.provision_state == "active" and status["provisioning"]["ID"] == node.id
    verbs = [c[1] for c in bm.calls if c[0] == "provision"]
    # a fresh node: manage, then adopt with the image it runs - never deployed again
    assert verbs == ["manage", "adopt"], bm.calls
    assert node.instance_info["image_source"] == ih.IMAGE["url"]
    assert not any(c[0] in ("power", "put") for c in bm.calls)


def test_a_wait_does_not_end_while_the_new_node_is_verifying(lab):
    drv, bm, st = lab
    ih.provisioned(st, bm, annotations={DETACHED: ""})
    ih.settle(drv, st)
    ih.annotate(st, {DETACHED: None})
    bm.hold["manage"] = "verifying"
    # the host's status already looks as its spec asks (provisioned, on): Ironic is still verifying the node
    assert not any(drv.reconcile(st, ih.KEY).done for _ in range(5))
    (node,) = bm.nodes_by_id.values()
    assert node.provision_state == "verifying"
    node.provision_state = "manageable"
    ih.settle(drv, st)
    assert node.provision_state == "active"


def test_deleting_a_detached_host_skips_power_off_and_deprovisioning(lab):
    drv, bm, st = lab
    ih.provisioned(st, bm, annotations={DETACHED: ""})
    ih.settle(drv, st)
    bm.calls.clear()
    step = drv.delete(st, ih.KEY)
    assert step.done and _gone(st)
    assert bm.writes() == []


def _gone(st) -> bool:
    from ansible_collections.baremetal.capi.plugins.module_utils.errors import NotFound

    try:
        st.get("BareMetalHost", "h", "ns")
    except NotFound:
        return True
    return False


def test_delete_action_delay_holds_the_deletion_of_a_detached_host(lab):
    drv, bm, st = lab
    ih.provisioned(st, bm, annotations={DETACHED: '{"deleteAction": "delay"}'})
    ih.settle(drv, st)
    step = drv.delete(st, ih.KEY)
    assert not step.done and not _gone(st)
    assert ih.bmh(st)["status"]["provisioning"]["state"] == S.BMH_STATE_PROVISIONED
    bm.calls.clear()
    assert not drv.delete(st, ih.KEY).done and bm.writes() == []
    # the annotation removed: attached again, then deleted as any provisioned host.  Its node went with the
    # detach, and this driver's deprovisioning of a deleted host whose node is gone goes straight to deleting
    # (BMO would register a node again and deprovision it)
    ih.annotate(st, {DETACHED: None})
    for _ in range(30):
        if drv.delete(st, ih.KEY).done:
            break
    assert _gone(st)


def test_a_detach_error_is_cleared(lab):
    drv, bm, st = lab
    ih.provisioned(st, bm)
    host = ih.bmh(st)
    host["status"].update(errorType=S.BMH_ERROR_DETACH, errorMessage="old", errorCount=2, operationalStatus="error")
    st.update_status(host)
    ih.settle(drv, st)
    status = ih.bmh(st)["status"]
    assert not status.get("errorType") and status["errorCount"] == 0 and status["operationalStatus"] == "OK"
