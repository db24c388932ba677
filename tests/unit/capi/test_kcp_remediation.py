"""KCP's remediation guards, rule by rule, against a real sqlite store with an injected clock."""

from __future__ import annotations

import datetime
import json

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.capi import control_plane
from ansible_collections.baremetal.capi.plugins.module_utils.capi import kcp_remediation as kr
from ansible_collections.baremetal.capi.plugins.module_utils.errors import CapiError, Invalid, NotFound
from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions, meta, names

NS = "rem"
T0 = datetime.datetime(2026, 3, 1, 12, 0, 0, tzinfo=datetime.UTC)


def at(seconds: float):
    return lambda: T0 + datetime.timedelta(seconds=seconds)


def _cluster(store, initialized=True):
    c = store.create(meta.new("Cluster", "c1", NS, spec={}))
    if initialized:
        c["status"] = {"initialization": {"controlPlaneInitialized": True}}
        c = store.update_status(c)
    return c


def _kcp(store, replicas=3, remediation=None):
    template = {"spec": {"infrastructureRef": {"name": "t"}}}
    spec = {"replicas": replicas, "version": "v1.34.1", "machineTemplate": template}
    if remediation is not None:
        spec["remediation"] = remediation
    return store.create(meta.new("KubeadmControlPlane", "c1-cp", NS, spec=spec))


def _machine(store, name, node=True, ready=True, unhealthy=False, annotations=None):
    m = meta.new(
        "Machine",
        name,
        NS,
        spec={"clusterName": "c1"},
        labels={names.CONTROL_PLANE_LABEL: "", names.CONTROL_PLANE_NAME_LABEL: "c1-cp", names.CLUSTER_NAME_LABEL: "c1"},
        annotations=annotations,
    )
    m = store.create(m)
    m["status"] = {}
    if node:
        m["status"]["nodeRef"] = {"name": f"node-{name}"}
        conditions.set_condition(m, names.NODE_READY, ready, "NodeReady" if ready else "NodeNotReady")
    if unhealthy:
        conditions.set_condition(m, names.HEALTH_CHECK_SUCCEEDED, False, "UnhealthyNode")
        conditions.set_condition(m, names.OWNER_REMEDIATED, False, "WaitingForRemediation")
    return store.update_status(m)


def _machines(store):
    return control_plane.control_plane_machines(store, store.get("KubeadmControlPlane", "c1-cp", NS))


def _run(store, clock=at(0), etcd_members=None, check=False):
    kcp = store.get("KubeadmControlPlane", "c1-cp", NS)
    cluster = store.get("Cluster", "c1", NS)
    return kr.reconcile_unhealthy_machines(
        store, kcp, cluster, _machines(store), etcd_members=etcd_members, clock=clock, check=check
    )


def _owner_remediated(store, name):
    return conditions.get(store.get("Machine", name, NS), names.OWNER_REMEDIATED)


def test_single_control_plane_of_an_initialized_cluster_is_never_deleted(store):
    _cluster(store)
    _kcp(store, replicas=1)
    _machine(store, "m1", ready=False, unhealthy=True)
    out = _run(store)
    assert out.step is None
    assert store.get("Machine", "m1", NS)  # still there
    cond = _owner_remediated(store, "m1")
    assert (cond["reason"], cond["message"]) == (names.KCP_CANNOT_BE_REMEDIATED_REASON, kr.MSG_REPLICAS)
    assert out.data["remediation"]["remediating"] is False
    assert names.REMEDIATION_IN_PROGRESS_ANNOTATION not in meta.annotations(
        store.get("KubeadmControlPlane", "c1-cp", NS)
    )


def test_first_control_plane_that_never_initialized_is_replaced(store):
    _cluster(store, initialized=False)
    _kcp(store, replicas=1)
    _machine(store, "m1", node=False, unhealthy=True)
    out = _run(store, clock=at(5))
    assert out.step is not None and out.step.data["deleted"] == "m1"
    with pytest.raises(NotFound):
        store.get("Machine", "m1", NS)
    kcp = store.get("KubeadmControlPlane", "c1-cp", NS)
    data = json.loads(meta.annotations(kcp)[names.REMEDIATION_IN_PROGRESS_ANNOTATION])
    assert data == {"machine": "m1", "timestamp": "2026-03-01T12:00:05Z", "retryCount": 0}
    assert kcp["status"]["lastRemediation"] == {"machine": "m1", "time": "2026-03-01T12:00:05Z", "retryCount": 0}


def test_check_mode_deletes_nothing(store):
    _cluster(store, initialized=False)
    _kcp(store, replicas=1)
    _machine(store, "m1", node=False, unhealthy=True)
    before = store.get("KubeadmControlPlane", "c1-cp", NS)
    out = _run(store, check=True)
    assert out.step.changed and out.step.message.startswith("would be deleting m1")
    assert store.get("Machine", "m1", NS)
    # nothing written: the KubeadmControlPlane as it was (only the collection's marker from its creation)
    assert store.get("KubeadmControlPlane", "c1-cp", NS) == before
    assert names.REMEDIATION_IN_PROGRESS_ANNOTATION not in meta.annotations(before)


def test_three_machines_one_unhealthy_is_remediated_and_one_at_a_time(store):
    _cluster(store)
    _kcp(store, replicas=3)
    _machine(store, "m1", ready=False, unhealthy=True)
    _machine(store, "m2")
    _machine(store, "m3")
    real = lambda: datetime.datetime.now(datetime.UTC)  # noqa: E731 - compared with the store's creation times
    out = _run(store, clock=real)
    assert out.step.data["deleted"] == "m1"
    assert out.step.data["remediation"]["etcd"]["members_from"] == "store"
    # another one turns unhealthy before the replacement exists: it waits
    m2 = store.get("Machine", "m2", NS)
    conditions.set_condition(m2, names.OWNER_REMEDIATED, False, "WaitingForRemediation")
    store.update_status(m2)
    out = _run(store, clock=real)
    assert out.step is None and out.data["remediation"]["message"] == "another remediation is already in progress"
    assert store.get("Machine", "m2", NS)


def test_quorum_loss_is_refused_and_etcd_answer_decides_when_given(store):
    _cluster(store)
    _kcp(store, replicas=3)
    _machine(store, "m1", ready=False, unhealthy=True)
    _machine(store, "m2", ready=False)
    _machine(store, "m3")
    out = _run(store)
    assert out.step is None
    cond = _owner_remediated(store, "m1")
    assert (cond["reason"], cond["message"]) == (names.KCP_CANNOT_BE_REMEDIATED_REASON, kr.MSG_UNSAFE)
    etcd = out.data["remediation"]["etcd"]
    assert etcd["voting"] == 2 and etcd["quorum"] == 2 and etcd["unhealthy"] == ["node-m2 (m2)"]
    # etcd itself says m2's member is healthy (its Node is NotReady for another reason): remediation goes on
    members = [{"name": f"node-m{i}", "isLearner": False, "healthy": True} for i in (1, 2, 3)]
    out = _run(store, etcd_members=members)
    assert out.step.data["deleted"] == "m1" and out.step.data["remediation"]["etcd"]["members_from"] == "etcd"


def test_learner_or_empty_member_list_refuses(store):
    _cluster(store)
    _kcp(store, replicas=3)
    _machine(store, "m1", ready=False, unhealthy=True)
    _machine(store, "m2")
    _machine(store, "m3")
    learners = [{"name": "node-m1"}, {"name": "node-m2"}, {"name": "node-m3", "isLearner": True, "healthy": True}]
    assert _run(store, etcd_members=learners).step is None
    assert _owner_remediated(store, "m1")["message"] == kr.MSG_UNSAFE
    out = _run(store, etcd_members=[])
    assert out.step is None and "member list is empty" in out.data["remediation"]["etcd"]["why"]


def test_five_machines_tolerate_one_more_failure(store):
    _cluster(store)
    _kcp(store, replicas=5)
    _machine(store, "m1", ready=False, unhealthy=True)
    _machine(store, "m2", ready=False)
    for i in (3, 4, 5):
        _machine(store, f"m{i}")
    assert _run(store).step.data["deleted"] == "m1"  # 4 voting left, 3 healthy >= quorum 3


def test_healthy_machine_still_provisioning_defers(store):
    _cluster(store)
    _kcp(store, replicas=3)
    _machine(store, "m1", ready=False, unhealthy=True)
    _machine(store, "m2")
    _machine(store, "m3", node=False)
    assert _run(store).step is None
    cond = _owner_remediated(store, "m1")
    assert (cond["reason"], cond["message"]) == (names.KCP_REMEDIATION_DEFERRED_REASON, kr.MSG_PROVISIONING)


def test_deleting_machine_defers(store):
    _cluster(store)
    _kcp(store, replicas=3)
    _machine(store, "m1", ready=False, unhealthy=True)
    _machine(store, "m2")
    m3 = _machine(store, "m3")
    m3["metadata"]["finalizers"] = [names.MACHINE_FINALIZER]
    store.update(m3)
    store.delete("Machine", "m3", NS)
    assert _run(store).step is None
    assert _owner_remediated(store, "m1")["message"] == kr.MSG_DELETING


def test_healthy_again_drops_the_pending_request(store):
    _cluster(store)
    _kcp(store, replicas=1)
    m = _machine(store, "m1", unhealthy=True)
    conditions.set_condition(m, names.HEALTH_CHECK_SUCCEEDED, True, "Succeeded")
    store.update_status(m)
    assert _run(store).step is None
    assert _owner_remediated(store, "m1") is None


def test_most_broken_machine_goes_first():
    old = {"metadata": {"name": "a", "creationTimestamp": "2026-01-01T00:00:00Z"}, "status": {"nodeRef": {"name": "a"}}}
    no_node = {"metadata": {"name": "b", "creationTimestamp": "2026-01-02T00:00:00Z"}, "status": {}}
    marked = {
        "metadata": {"name": "c", "creationTimestamp": "2026-01-03T00:00:00Z",
                     "annotations": {names.REMEDIATE_MACHINE_ANNOTATION: ""}},
        "status": {"nodeRef": {"name": "c"}},
    }  # fmt: skip
    assert kr.pick([old, no_node, marked]) is marked
    assert kr.pick([old, no_node]) is no_node
    etcd_bad = {
        "metadata": {"name": "d", "creationTimestamp": "2026-01-04T00:00:00Z"},
        "status": {"nodeRef": {"name": "d"}},
    }
    conditions.set_condition(etcd_bad, names.KCP_MACHINE_ETCD_MEMBER_HEALTHY, False, "x")
    conditions.set_condition(old, names.KCP_MACHINE_ETCD_MEMBER_HEALTHY, True, "x")
    assert kr.pick([old, etcd_bad]) is etcd_bad
    assert kr.pick([]) is None


# -- retries --------------------------------------------------------------------------------------------------


def _retry_setup(store, remediation, last_seconds_ago, retry_count, now=3600 * 10):
    _cluster(store, initialized=False)
    _kcp(store, replicas=1, remediation=remediation)
    last = {"machine": "m0", "timestamp": kr._fmt(T0 + datetime.timedelta(seconds=now - last_seconds_ago)),
            "retryCount": retry_count}  # fmt: skip
    _machine(store, "m1", node=False, unhealthy=True, annotations={names.REMEDIATION_FOR_ANNOTATION: json.dumps(last)})
    return at(now)


def test_retry_waits_for_the_retry_period(store):
    clock = _retry_setup(store, {"retryPeriodSeconds": 600}, last_seconds_ago=300, retry_count=1)
    assert _run(store, clock=clock).step is None
    cond = _owner_remediated(store, "m1")
    assert cond["reason"] == names.KCP_REMEDIATION_DEFERRED_REASON
    assert cond["message"] == (
        "KubeadmControlPlane can't remediate this machine because the operation already failed in the latest 600s "
        "(RetryPeriodSeconds)"
    )


def test_retry_after_the_retry_period_counts_up(store):
    clock = _retry_setup(store, {"retryPeriodSeconds": 600}, last_seconds_ago=900, retry_count=1)
    out = _run(store, clock=clock)
    assert out.step.data["remediation"]["retryCount"] == 2
    kcp = store.get("KubeadmControlPlane", "c1-cp", NS)
    assert json.loads(meta.annotations(kcp)[names.REMEDIATION_IN_PROGRESS_ANNOTATION])["retryCount"] == 2


def test_max_retry_stops_remediation(store):
    clock = _retry_setup(store, {"maxRetry": 2}, last_seconds_ago=60, retry_count=2)
    assert _run(store, clock=clock).step is None
    cond = _owner_remediated(store, "m1")
    assert cond["reason"] == names.KCP_CANNOT_BE_REMEDIATED_REASON
    assert (
        cond["message"]
        == "KubeadmControlPlane can't remediate this machine because the operation already failed 2 times (MaxRetry)"
    )
    assert store.get("Machine", "m1", NS)


def test_healthy_longer_than_min_healthy_period_starts_a_new_sequence(store):
    clock = _retry_setup(store, {"maxRetry": 2, "minHealthyPeriodSeconds": 1800}, last_seconds_ago=3600, retry_count=2)
    out = _run(store, clock=clock)
    assert out.step.data["remediation"]["retryCount"] == 0


def test_default_min_healthy_period_is_an_hour(store):
    clock = _retry_setup(store, {"maxRetry": 1}, last_seconds_ago=3500, retry_count=1)
    assert _run(store, clock=clock).step is None  # within the hour: the second retry is refused


def test_in_progress_annotation_moves_to_the_replacement(store):
    _cluster(store, initialized=False)
    _kcp(store, replicas=1)
    _machine(store, "m1", node=False, unhealthy=True)
    # remediated a few seconds ago (creation times have a one-second resolution); then the replacement comes
    assert _run(store, clock=lambda: datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=5)).step
    _machine(store, "m2", node=False)
    assert _run(store).step is None
    kcp = store.get("KubeadmControlPlane", "c1-cp", NS)
    assert names.REMEDIATION_IN_PROGRESS_ANNOTATION not in meta.annotations(kcp)
    carried = json.loads(meta.annotations(store.get("Machine", "m2", NS))[names.REMEDIATION_FOR_ANNOTATION])
    assert carried["machine"] == "m1" and carried["retryCount"] == 0


def test_strategy_reads_v1beta2_and_v1beta1_and_rejects_bad_values():
    assert kr.strategy({"spec": {}}) == {"maxRetry": None, "retryPeriodSeconds": 0, "minHealthyPeriodSeconds": 3600}
    old = {"spec": {"remediationStrategy": {"maxRetry": 3, "retryPeriod": "20m", "minHealthyPeriod": "2h"}}}
    assert kr.strategy(old) == {"maxRetry": 3, "retryPeriodSeconds": 1200, "minHealthyPeriodSeconds": 7200}
    with pytest.raises(Invalid, match="spec.remediation.maxRetry"):
        kr.strategy({"metadata": {"name": "k", "namespace": NS}, "kind": "KubeadmControlPlane",
                     "spec": {"remediation": {"maxRetry": -1}}})  # fmt: skip


def test_through_the_kcp_step_a_single_control_plane_stays(store):
    """What reconcile_control_plane does with the guard in place: nothing deleted, the reason in data."""
    cluster = _cluster(store)
    kcp = _kcp(store, replicas=1)
    _machine(store, "m1", ready=False, unhealthy=True)
    # check mode: the fixture's Machine has no infrastructure to roll, only the remediation decision matters
    step = control_plane.reconcile_control_plane(store, kcp, cluster, check=True)
    assert "deleted" not in step.data and step.data["remediation"]["message"] == kr.MSG_REPLICAS
    assert store.get("Machine", "m1", NS)


def test_an_etcd_health_object_plugs_in():
    class Member:
        def __init__(self, i, learner=False):
            self.id, self.name, self.is_learner = str(i), f"node-m{i}", learner

    class Health:
        members = [Member(1), Member(2), Member(3)]
        healthy = {"1", "3"}

    assert kr.members_from_health(None) is None
    assert kr.members_from_health(Health()) == [
        {"name": "node-m1", "id": "1", "isLearner": False, "healthy": True},
        {"name": "node-m2", "id": "2", "isLearner": False, "healthy": False},
        {"name": "node-m3", "id": "3", "isLearner": False, "healthy": True},
    ]
    machines = [
        {"metadata": {"name": f"m{i}"}, "status": {"nodeRef": {"name": f"node-m{i}"}}, "spec": {}} for i in (1, 2, 3)
    ]
    for m in machines:
        conditions.set_condition(m, names.NODE_READY, True, "NodeReady")
    kcp = {"spec": {}}
    # m2's member is unhealthy per etcd: removing m1 would leave 1 healthy of 2 voters
    safe, detail = kr.can_safely_remediate(kcp, machines, machines[0], Health())
    assert not safe and detail["members_from"] == "etcd" and detail["unhealthy"] == ["node-m2 (m2)"]
    safe, _ = kr.can_safely_remediate(kcp, machines, machines[1], Health())
    assert safe
    asked = []
    safe, _ = kr.can_safely_remediate(kcp, machines, machines[1], lambda: asked.append(1) or Health())
    assert safe and asked == [1]  # a callable is asked when the quorum check needs it


def test_etcd_asked_and_not_answering_refuses_remediation():
    """A cluster that lost quorum answers nothing: the store's last-known NodeReady must not stand in for etcd."""
    machines = [
        {"metadata": {"name": f"m{i}"}, "status": {"nodeRef": {"name": f"node-m{i}"}}, "spec": {}} for i in (1, 2, 3)
    ]
    for m in machines:
        conditions.set_condition(m, names.NODE_READY, True, "NodeReady")
    kcp = {"spec": {}}
    assert kr.can_safely_remediate(kcp, machines, machines[0], None)[0]  # no etcd to ask: the store's view
    safe, detail = kr.can_safely_remediate(kcp, machines, machines[0], lambda: None)
    assert not safe and detail["why"] == "cannot check etcd cluster health before remediation: no member answers"

    def no_leader():
        raise CapiError("etcd https://10.0.0.1:2379/v3/cluster/member/list: etcdserver: no leader")

    safe, detail = kr.can_safely_remediate(kcp, machines, machines[0], no_leader)
    assert not safe and "etcdserver: no leader" in detail["why"]
