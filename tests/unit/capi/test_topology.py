from __future__ import annotations

import datetime

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.capi import control_plane
from ansible_collections.baremetal.capi.plugins.module_utils.capi import deployment as md_controller
from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid, NotFound
from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions, meta, names

NS = "topo"


@pytest.fixture
def cluster(store):
    c = store.create(meta.new("Cluster", "c1", NS, spec={}))
    c["status"] = {"failureDomains": [{"name": "fd-a", "controlPlane": True}, {"name": "fd-b", "controlPlane": True}]}
    return store.update_status(c)


def m3mt(store, name="tmpl"):
    return store.create(
        meta.new(
            "Metal3MachineTemplate",
            name,
            NS,
            spec={"template": {"metadata": {"labels": {"t": "1"}}, "spec": {"image": {"url": "http://i/x.img"}}}},
        )
    )


def kcp(store, replicas=3):
    m3mt(store)
    return store.create(
        meta.new(
            "KubeadmControlPlane",
            "c1-cp",
            NS,
            spec={
                "replicas": replicas,
                "version": "v1.34.1",
                "machineTemplate": {
                    "spec": {
                        "infrastructureRef": {
                            "apiGroup": "infrastructure.cluster.x-k8s.io",
                            "kind": "Metal3MachineTemplate",
                            "name": "tmpl",
                        }
                    }
                },
                "kubeadmConfigSpec": {"initConfiguration": {"a": 1}, "joinConfiguration": {"b": 2}},
            },
        )
    )


def give_node(store, name):
    m = store.get("Machine", name, NS)
    m.setdefault("status", {})["nodeRef"] = {"name": name}
    store.update_status(m)


def test_control_plane_inits_first_then_joins_one_at_a_time(store, cluster):
    k = kcp(store)
    step = control_plane.reconcile_control_plane(store, k, cluster)
    first = step.data["created"]
    assert first.startswith("c1-cp-") and len(first) == len("c1-cp-") + 5
    machine = store.get("Machine", first, NS)
    assert machine["metadata"]["labels"] == {
        names.CONTROL_PLANE_LABEL: "",
        names.CONTROL_PLANE_NAME_LABEL: "c1-cp",
        names.CLUSTER_NAME_LABEL: "c1",
    }
    assert machine["spec"]["version"] == "v1.34.1"
    assert machine["spec"]["failureDomain"] == "fd-a"
    assert machine["spec"]["infrastructureRef"] == {
        "apiGroup": "infrastructure.cluster.x-k8s.io",
        "kind": "Metal3Machine",
        "name": first,
    }
    assert machine["metadata"]["ownerReferences"][0]["kind"] == "KubeadmControlPlane"
    infra = store.get("Metal3Machine", first, NS)
    assert infra["spec"] == {"image": {"url": "http://i/x.img"}}
    assert infra["metadata"]["annotations"][names.CLONED_FROM_NAME_ANNOTATION] == "tmpl"
    assert (
        infra["metadata"]["annotations"][names.CLONED_FROM_GROUPKIND_ANNOTATION]
        == "Metal3MachineTemplate.infrastructure.cluster.x-k8s.io"
    )
    assert infra["metadata"]["labels"]["t"] == "1"
    config = store.get("KubeadmConfig", first, NS)
    assert config["spec"] == {"initConfiguration": {"a": 1}}

    waiting = control_plane.reconcile_control_plane(store, k, cluster)
    assert not waiting.changed and "one operation at a time" in waiting.message

    give_node(store, first)
    second = control_plane.reconcile_control_plane(store, k, cluster).data["created"]
    assert store.get("KubeadmConfig", second, NS)["spec"] == {"joinConfiguration": {"b": 2, "controlPlane": {}}}
    assert store.get("Machine", second, NS)["spec"]["failureDomain"] == "fd-b"
    give_node(store, second)
    third = control_plane.reconcile_control_plane(store, k, cluster).data["created"]
    give_node(store, third)
    done = control_plane.reconcile_control_plane(store, k, cluster)
    assert done.done and not done.changed
    assert len(control_plane.control_plane_machines(store, k)) == 3


def test_control_plane_scale_down_prefers_marked_then_biggest_domain_oldest(store, cluster):
    k = kcp(store, replicas=3)
    made = []
    for _ in range(3):
        made.append(control_plane.reconcile_control_plane(store, k, cluster).data["created"])
        give_node(store, made[-1])
    k = store.get("KubeadmControlPlane", "c1-cp", NS)  # KCP wrote its status meanwhile
    k["spec"]["replicas"] = 1
    k = store.update(k)
    # fd-a holds the first and third machines: the oldest of them goes (ties within a second: by name).
    in_fd_a = [store.get("Machine", n, NS) for n in (made[0], made[2])]
    expected = meta.name(min(in_fd_a, key=lambda m: (m["metadata"]["creationTimestamp"], meta.name(m))))
    victim = control_plane.reconcile_control_plane(store, k, cluster).data["deleted"]
    assert victim == expected
    made.remove(victim)
    # The victim has the machine finalizer in real flows; here it is gone at once.
    marked = store.get("Machine", made[1], NS)
    marked["metadata"].setdefault("annotations", {})[names.DELETE_MACHINE_ANNOTATION] = ""
    store.update(marked)
    assert control_plane.reconcile_control_plane(store, k, cluster).data["deleted"] == made[1]
    assert control_plane.reconcile_control_plane(store, k, cluster).done


def test_remediated_control_plane_machine_is_replaced(store, cluster):
    k = kcp(store, replicas=1)
    first = control_plane.reconcile_control_plane(store, k, cluster).data["created"]
    give_node(store, first)
    m = store.get("Machine", first, NS)
    conditions.set_condition(m, names.OWNER_REMEDIATED, False, "WaitingForRemediation")
    store.update_status(m)
    assert control_plane.reconcile_control_plane(store, k, cluster).data["deleted"] == first
    replacement = control_plane.reconcile_control_plane(store, k, cluster).data["created"]
    assert replacement != first


def test_even_replicas_with_stacked_etcd_is_refused(store, cluster):
    k = kcp(store, replicas=2)
    with pytest.raises(Invalid, match="spec.replicas: replicas must be odd"):
        control_plane.reconcile_control_plane(store, k, cluster)


def test_a_control_plane_of_no_machine_is_refused(store, cluster):
    k = kcp(store, replicas=0)
    with pytest.raises(Invalid, match="spec.replicas: replicas cannot be less than or equal to 0"):
        control_plane.reconcile_control_plane(store, k, cluster)


def deployment(store, replicas=2, order="Oldest"):
    if not store.list("Metal3MachineTemplate", NS):
        m3mt(store)
    store.create(
        meta.new("KubeadmConfigTemplate", "workers", NS, spec={"template": {"spec": {"joinConfiguration": {}}}})
    )
    return store.create(
        meta.new(
            "MachineDeployment",
            "c1-md-0",
            NS,
            spec={
                "clusterName": "c1",
                "replicas": replicas,
                "deletion": {"order": order},
                "template": {
                    "metadata": {"labels": {"pool": "a"}},
                    "spec": {
                        "clusterName": "c1",
                        "version": "v1.34.1",
                        "bootstrap": {
                            "configRef": {
                                "apiGroup": "bootstrap.cluster.x-k8s.io",
                                "kind": "KubeadmConfigTemplate",
                                "name": "workers",
                            }
                        },
                        "infrastructureRef": {
                            "apiGroup": "infrastructure.cluster.x-k8s.io",
                            "kind": "Metal3MachineTemplate",
                            "name": "tmpl",
                        },
                    },
                },
            },
        )
    )


def test_check_mode_creates_nothing(store, cluster):
    k = kcp(store)
    md = deployment(store)
    assert control_plane.reconcile_control_plane(store, k, cluster, check=True).changed
    assert md_controller.reconcile_deployment(store, md, cluster, check=True).changed
    assert store.list("Machine", NS) == [] and store.list("MachineSet", NS) == []


# --- KCP rollouts, upgrades and etcd membership ------------------------------------------------------------


def ready_node(store, name):
    m = store.get("Machine", name, NS)
    m.setdefault("status", {})["nodeRef"] = {"name": name}
    conditions.set_condition(m, names.NODE_READY, True, names.NODE_READY_REASON)
    conditions.set_condition(m, names.READY, True, names.READY_REASON)
    store.update_status(m)


def up(store, k, cluster, n=3):
    made = []
    for _ in range(n):
        made.append(control_plane.reconcile_control_plane(store, k, cluster).data["created"])
        ready_node(store, made[-1])
    assert control_plane.reconcile_control_plane(store, k, cluster).done
    return made


def edit_kcp(store, fn):
    k = store.get("KubeadmControlPlane", "c1-cp", NS)
    fn(k["spec"])
    return store.update(k)


def outdated(store, k):
    k = store.get("KubeadmControlPlane", "c1-cp", NS)
    live = control_plane.control_plane_machines(store, k)
    return control_plane.outdated_machines(store, k, live, control_plane._now())


def test_what_makes_a_control_plane_machine_outdated(store, cluster):
    k = kcp(store)
    made = up(store, k, cluster)
    assert outdated(store, k) == {}
    # What CABPK fills in (discovery) and KCP adds (joinConfiguration.controlPlane) is not a difference.
    cfg = store.get("KubeadmConfig", made[1], NS)
    cfg["spec"]["joinConfiguration"]["discovery"] = {"bootstrapToken": {"token": "abcdef.0123456789abcdef"}}
    store.update(cfg)
    # Neither are the machine template's labels (in place upstream).
    edit_kcp(store, lambda s: s["machineTemplate"].setdefault("metadata", {}).update(labels={"x": "y"}))
    assert outdated(store, k) == {}

    edit_kcp(store, lambda s: s.update(version="v1.35.0"))
    found = outdated(store, k)
    assert sorted(found) == sorted(made) and found[made[0]] == ["Version v1.34.1, v1.35.0 required"]
    edit_kcp(store, lambda s: s.update(version="v1.34.1"))

    m3mt(store, "tmpl-v2")
    edit_kcp(store, lambda s: s["machineTemplate"]["spec"]["infrastructureRef"].update(name="tmpl-v2"))
    assert "Metal3MachineTemplate is not up-to-date (cloned from tmpl, tmpl-v2 required)" in outdated(store, k)[made[0]]
    edit_kcp(store, lambda s: s["machineTemplate"]["spec"]["infrastructureRef"].update(name="tmpl"))

    # The join part matters to the joined machines only, the init part to the first one only.
    edit_kcp(store, lambda s: s["kubeadmConfigSpec"]["joinConfiguration"].update(b=3))
    assert sorted(outdated(store, k)) == sorted(made[1:])
    edit_kcp(store, lambda s: s["kubeadmConfigSpec"]["joinConfiguration"].update(b=2))
    edit_kcp(store, lambda s: s["kubeadmConfigSpec"].update(preKubeadmCommands=["echo hi"]))
    assert sorted(outdated(store, k)) == sorted(made)
    edit_kcp(store, lambda s: s["kubeadmConfigSpec"].pop("preKubeadmCommands"))
    assert outdated(store, k) == {}


def test_rollout_after_and_certificate_expiry(store, cluster):
    k = kcp(store, replicas=1)
    (first,) = up(store, k, cluster, n=1)
    now = control_plane._now()
    future = (now + datetime.timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    past = (now - datetime.timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    edit_kcp(store, lambda s: s.update(rollout={"after": future}))
    assert outdated(store, k) == {}
    # rollout.after passed, and the machine is older than it
    edit_kcp(store, lambda s: s.update(rollout={"after": past}))
    m = store.get("Machine", first, NS)
    if m["metadata"]["creationTimestamp"] < past:
        assert outdated(store, k)[first] == [f"rollout.after {past} has passed"]
    edit_kcp(store, lambda s: s.update(rollout={"before": {"certificatesExpiryDays": 30}}))
    assert outdated(store, k) == {}
    cfg = store.get("KubeadmConfig", first, NS)
    soon = (now + datetime.timedelta(days=10)).strftime("%Y-%m-%dT%H:%M:%SZ")
    cfg["metadata"].setdefault("annotations", {})[names.CERTIFICATES_EXPIRY_ANNOTATION] = soon
    store.update(cfg)
    assert outdated(store, k)[first] == [f"certificates expire at {soon}, within 30 days"]


def test_rolling_update_max_surge_1_one_machine_at_a_time(store, cluster):
    k = kcp(store)
    made = up(store, k, cluster)
    k = edit_kcp(store, lambda s: s.update(version="v1.35.0"))
    # check mode: the plan, nothing written
    plan = control_plane.reconcile_control_plane(store, k, cluster, check=True)
    assert plan.changed and "would replace 3 machine(s) one at a time, in this order:" in plan.message
    assert sorted(plan.data["plan"]) == sorted(made) and len(store.list("Machine", NS)) == 3
    replaced = []
    for _ in range(3):
        step = control_plane.reconcile_control_plane(store, k, cluster)
        new = step.data["created"]
        assert store.get("Machine", new, NS)["spec"]["version"] == "v1.35.0"
        assert names.KCP_CLEANUP_HOOK in meta.annotations(store.get("Machine", new, NS))
        assert len(control_plane.control_plane_machines(store, k)) == 4  # replicas + maxSurge
        waiting = control_plane.reconcile_control_plane(store, k, cluster)
        assert not waiting.changed and f"waiting for {new} to have a Node" in waiting.message
        give_node(store, new)
        waiting = control_plane.reconcile_control_plane(store, k, cluster)
        assert not waiting.changed and f"waiting for the Node of {new} to be Ready" in waiting.message
        ready_node(store, new)
        step = control_plane.reconcile_control_plane(store, k, cluster)
        replaced.append(step.data["deleted"])
        assert step.data["deleted"] in made
    assert replaced == plan.data["plan"]
    done = control_plane.reconcile_control_plane(store, k, cluster)
    assert done.done
    machines = control_plane.control_plane_machines(store, k)
    assert {m["spec"]["version"] for m in machines} == {"v1.35.0"} and len(machines) == 3
    status = store.get("KubeadmControlPlane", "c1-cp", NS)["status"]
    assert status["version"] == "v1.35.0" and status["upToDateReplicas"] == 3 and status["replicas"] == 3
    assert status["readyReplicas"] == 3 and status["deprecated"]["v1beta1"]["updatedReplicas"] == 3
    assert all(conditions.is_true(m, names.UP_TO_DATE) for m in machines)


def test_rolling_update_max_surge_0_removes_first(store, cluster):
    k = kcp(store)
    made = up(store, k, cluster)
    k = edit_kcp(
        store,
        lambda s: s.update(version="v1.35.0", rollout={"strategy": {"rollingUpdate": {"maxSurge": 0}}}),
    )
    deleted = []
    for i in range(3):
        step = control_plane.reconcile_control_plane(store, k, cluster)
        assert step.data["maxSurge"] == 0 and step.data["deleted"] in made
        deleted.append(step.data["deleted"])
        assert len(control_plane.control_plane_machines(store, k)) == 2  # removed before a new one comes
        if i == 0:
            m = store.get("Machine", next(n for n in made if n not in deleted), NS)
            assert conditions.get(m, names.UP_TO_DATE)["message"] == "* Version v1.34.1, v1.35.0 required"
        new = control_plane.reconcile_control_plane(store, k, cluster).data["created"]
        ready_node(store, new)
    assert sorted(deleted) == sorted(made)
    assert control_plane.reconcile_control_plane(store, k, cluster).done


def test_max_surge_is_validated(store, cluster):
    k = kcp(store, replicas=1)
    k = edit_kcp(store, lambda s: s.update(rollout={"strategy": {"rollingUpdate": {"maxSurge": 0}}}))
    with pytest.raises(Invalid, match="maxSurge 0 needs at least 3 replicas"):
        control_plane.reconcile_control_plane(store, k, cluster)
    k = edit_kcp(store, lambda s: s.update(rollout={"strategy": {"rollingUpdate": {"maxSurge": 2}}}))
    with pytest.raises(Invalid, match="rollingUpdate.maxSurge: maxSurge must be 0 or 1"):
        control_plane.reconcile_control_plane(store, k, cluster)


def deleting_with_hook(store, name):
    m = store.get("Machine", name, NS)
    meta.add_finalizer(m, names.MACHINE_FINALIZER)
    store.update(m)
    store.delete("Machine", name, NS)
    m = store.get("Machine", name, NS)
    conditions.set_condition(
        m, names.DELETING, True, names.DELETING_WAITING_FOR_PRE_TERMINATE_HOOK_REASON, "waiting for hook(s)"
    )
    return store.update_status(m)


def test_the_kcp_cleanup_hook_waits_for_etcd_with_more_than_one_machine(store, cluster):
    k = kcp(store)
    made = up(store, k, cluster)
    victim = made[0]
    assert names.KCP_CLEANUP_HOOK in meta.annotations(store.get("Machine", victim, NS))
    deleting_with_hook(store, victim)
    # no <cluster>-etcd Secret and no addresses: etcd cannot be reached, the member cannot go, the hook stays
    step = control_plane.reconcile_control_plane(store, k, cluster)
    assert not step.done and "etcd does not answer" in step.message
    assert names.KCP_CLEANUP_HOOK in meta.annotations(store.get("Machine", victim, NS))
    # nothing else happens meanwhile (one operation at a time)
    assert len(control_plane.control_plane_machines(store, k)) == 3


def test_the_last_control_plane_machine_only_loses_its_hook(store, cluster):
    k = kcp(store, replicas=1)
    (only,) = up(store, k, cluster, n=1)
    deleting_with_hook(store, only)
    step = control_plane.reconcile_control_plane(store, k, cluster)
    assert step.changed and step.data["released"] == only
    assert names.KCP_CLEANUP_HOOK not in meta.annotations(store.get("Machine", only, NS))


def test_the_hook_waits_until_the_machine_waits_on_it(store, cluster):
    k = kcp(store, replicas=1)
    (only,) = up(store, k, cluster, n=1)
    m = store.get("Machine", only, NS)
    meta.add_finalizer(m, names.MACHINE_FINALIZER)
    store.update(m)
    store.delete("Machine", only, NS)  # still draining: no WaitingForPreTerminateHook yet
    step = control_plane.reconcile_control_plane(store, k, cluster)
    assert not step.changed and "to wait on the kcp-cleanup hook" in step.message
    assert names.KCP_CLEANUP_HOOK in meta.annotations(store.get("Machine", only, NS))


def test_workers_wait_for_the_control_plane_version(store, cluster):
    c = store.get("Cluster", "c1", NS)
    c["spec"]["controlPlaneRef"] = {
        "apiGroup": "controlplane.cluster.x-k8s.io",
        "kind": "KubeadmControlPlane",
        "name": "c1-cp",
    }
    cluster = store.update(c)
    k = kcp(store)
    made = up(store, k, cluster)
    md = deployment(store)
    assert control_plane.deployment_version_hold(store, cluster, md) is None
    md["spec"]["template"]["spec"]["version"] = "v1.35.0"
    hold = control_plane.deployment_version_hold(store, cluster, md)
    assert hold.startswith("waiting for the control plane to be at v1.35.0") and all(n in hold for n in made)
    for name in made[:2]:
        m = store.get("Machine", name, NS)
        m["spec"]["version"] = "v1.35.0"
        store.update(m)
    assert made[2] in control_plane.deployment_version_hold(store, cluster, md)
    m = store.get("Machine", made[2], NS)
    m["spec"]["version"] = "v1.35.0"
    store.update(m)
    assert control_plane.deployment_version_hold(store, cluster, md) is None
    # an older worker version is never held
    md["spec"]["template"]["spec"]["version"] = "v1.34.1"
    assert control_plane.deployment_version_hold(store, cluster, md) is None


def test_control_plane_info_plans_an_upgrade_without_writing(run, store, cluster):
    from ansible_collections.baremetal.capi.plugins.modules import control_plane_info

    c = store.get("Cluster", "c1", NS)
    c["spec"]["controlPlaneRef"] = {
        "apiGroup": "controlplane.cluster.x-k8s.io",
        "kind": "KubeadmControlPlane",
        "name": "c1-cp",
    }
    store.update(c)
    k = kcp(store)
    made = up(store, k, c)
    md = deployment(store)
    md_controller.reconcile_deployment(store, md, c)
    stored = run(control_plane_info, {"cluster": "c1", "namespace": NS})
    assert not stored["changed"] and stored["replace"] == [] and stored["steps"] == []
    assert stored["version"] == stored["target_version"] == "v1.34.1"

    desired = store.get("KubeadmControlPlane", "c1-cp", NS)
    desired["spec"]["version"] = "v1.35.0"
    new_md = store.get("MachineDeployment", "c1-md-0", NS)
    new_md["spec"]["template"]["spec"]["version"] = "v1.35.0"
    out = run(control_plane_info, {"cluster": "c1", "namespace": NS, "definition": desired, "deployments": [new_md]})
    assert sorted(out["replace"]) == sorted(made) and len(out["steps"]) == 4
    assert out["steps"][0] == f"control plane: a new v1.35.0 machine, then {out['replace'][0]} removed"
    assert out["steps"][-1] == "workers: MachineDeployment c1-md-0 rolled to v1.35.0"
    assert all(r["reasons"] == ["Version v1.34.1, v1.35.0 required"] for r in out["machines"])
    assert store.get("KubeadmControlPlane", "c1-cp", NS)["spec"]["version"] == "v1.34.1"


def held(store, name):
    """A Machine as the Machine controller keeps it: its finalizer until its deletion is through."""
    m = store.get("Machine", name, NS)
    meta.add_finalizer(m, names.MACHINE_FINALIZER)
    store.update(m)


def release(store, name):
    m = store.get("Machine", name, NS)
    meta.remove_finalizer(m, names.MACHINE_FINALIZER)
    store.update(m)


def test_kcp_deletion_waits_for_the_workers_then_deletes_every_machine_at_once(store, cluster):
    k = kcp(store)
    made = up(store, k, cluster)
    assert names.KCP_FINALIZER in store.get("KubeadmControlPlane", "c1-cp", NS)["metadata"]["finalizers"]
    for name in made:
        held(store, name)
    worker = store.create(
        meta.new("Machine", "w1", NS, labels={names.CLUSTER_NAME_LABEL: "c1"}, spec={"clusterName": "c1"})
    )
    held(store, meta.name(worker))
    store.delete("KubeadmControlPlane", "c1-cp", NS)
    k = store.get("KubeadmControlPlane", "c1-cp", NS)  # its finalizer holds it

    step = control_plane.reconcile_control_plane(store, k, cluster)
    assert not step.done and not step.changed and "w1" in step.message
    cond = conditions.get(store.get("KubeadmControlPlane", "c1-cp", NS), names.DELETING)
    assert cond["reason"] == "WaitingForWorkersDeletion" and cond["message"].endswith("* Machines: w1")
    assert not any(meta.is_deleting(store.get("Machine", n, NS)) for n in made)

    store.delete("Machine", "w1", NS)
    release(store, "w1")  # the worker is gone
    step = control_plane.reconcile_control_plane(store, store.get("KubeadmControlPlane", "c1-cp", NS), cluster)
    assert step.changed and not step.done
    for name in made:  # all at once, no etcd member moved or removed: the whole etcd goes
        m = store.get("Machine", name, NS)
        assert meta.is_deleting(m) and names.KCP_CLEANUP_HOOK not in meta.annotations(m)
    cond = conditions.get(store.get("KubeadmControlPlane", "c1-cp", NS), names.DELETING)
    assert (cond["reason"], cond["message"]) == ("WaitingForMachineDeletion", "Deleting 3 Machines")
    again = control_plane.reconcile_control_plane(store, store.get("KubeadmControlPlane", "c1-cp", NS), cluster)
    assert not again.changed and not again.done

    for name in made:
        release(store, name)
    step = control_plane.reconcile_control_plane(store, store.get("KubeadmControlPlane", "c1-cp", NS), cluster)
    assert step.done and step.message == "deletion completed"
    with pytest.raises(NotFound):
        store.get("KubeadmControlPlane", "c1-cp", NS)


def test_hooks_of_a_control_plane_deleted_without_its_finalizer_are_released(store, cluster):
    """A KubeadmControlPlane written before it had its finalizer goes at once; its Machines' hooks still go."""
    k = kcp(store, replicas=1)
    (only,) = up(store, k, cluster, n=1)
    held(store, only)
    k = store.get("KubeadmControlPlane", "c1-cp", NS)
    meta.remove_finalizer(k, names.KCP_FINALIZER)
    store.update(k)
    store.delete("KubeadmControlPlane", "c1-cp", NS)  # gone, and its Machine with it (garbage collection)
    assert meta.is_deleting(store.get("Machine", only, NS))
    assert control_plane.release_orphaned_hooks(store, cluster, check=True)
    assert names.KCP_CLEANUP_HOOK in meta.annotations(store.get("Machine", only, NS))
    assert control_plane.release_orphaned_hooks(store, cluster)
    assert names.KCP_CLEANUP_HOOK not in meta.annotations(store.get("Machine", only, NS))
    assert not control_plane.release_orphaned_hooks(store, cluster)
