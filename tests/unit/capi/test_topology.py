from __future__ import annotations

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.capi import control_plane
from ansible_collections.baremetal.capi.plugins.module_utils.capi import deployment as md_controller
from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
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


def test_deployment_makes_a_machine_set_and_machines_and_scales(store, cluster):
    md = deployment(store, replicas=2)
    step = md_controller.reconcile_deployment(store, md, cluster)
    ms_name = step.data["machineSet"]
    assert ms_name.startswith("c1-md-0-")
    created = step.data["created"]
    assert len(created) == 2 and all(n.startswith(ms_name + "-") for n in created)
    m = store.get("Machine", created[0], NS)
    assert m["metadata"]["labels"] == {
        "pool": "a",
        names.SET_NAME_LABEL: ms_name,
        names.DEPLOYMENT_NAME_LABEL: "c1-md-0",
        names.CLUSTER_NAME_LABEL: "c1",
    }
    assert store.get("KubeadmConfig", created[0], NS)["spec"] == {"joinConfiguration": {}}
    assert store.get("Metal3Machine", created[0], NS)["metadata"]["ownerReferences"][0]["kind"] == "MachineSet"
    for n in created:
        give_node(store, n)
    assert md_controller.reconcile_deployment(store, md, cluster).done

    md["spec"]["replicas"] = 3
    md = store.update(md)
    grown = md_controller.reconcile_deployment(store, md, cluster)
    assert len(grown.data["created"]) == 1 and grown.data["machineSet"] == ms_name
    give_node(store, grown.data["created"][0])

    md["spec"]["replicas"] = 1
    md = store.update(md)
    # Oldest first: the two created first go (ties broken by name within one timestamp second).
    stamps = {n: store.get("Machine", n, NS)["metadata"]["creationTimestamp"] for n in created + grown.data["created"]}
    oldest = sorted(stamps, key=lambda n: (stamps[n], n))
    shrunk = md_controller.reconcile_deployment(store, md, cluster)
    assert sorted(shrunk.data["deleted"]) == sorted(oldest[:2])


def test_machine_without_node_goes_first_on_scale_down(store, cluster):
    md = deployment(store, replicas=2, order="Random")
    created = md_controller.reconcile_deployment(store, md, cluster).data["created"]
    give_node(store, created[1])
    md["spec"]["replicas"] = 1
    md = store.update(md)
    assert md_controller.reconcile_deployment(store, md, cluster).data["deleted"] == [created[0]]


def test_template_change_rolls_to_a_new_machine_set(store, cluster):
    md = deployment(store, replicas=1)
    first = md_controller.reconcile_deployment(store, md, cluster)
    give_node(store, first.data["created"][0])
    m3mt(store, "tmpl-v2")
    md["spec"]["template"]["spec"]["infrastructureRef"]["name"] = "tmpl-v2"
    md = store.update(md)
    step = md_controller.reconcile_deployment(store, md, cluster)
    assert step.data["machineSet"] != first.data["machineSet"]
    new_machine = step.data["created"][0]
    assert (
        store.get("Metal3Machine", new_machine, NS)["metadata"]["annotations"][names.CLONED_FROM_NAME_ANNOTATION]
        == "tmpl-v2"
    )
    give_node(store, new_machine)
    # The old set shrinks only once the new machine has its Node, then goes away.
    for _ in range(4):
        step = md_controller.reconcile_deployment(store, md, cluster)
    sets = store.list("MachineSet", NS)
    assert [meta.name(s) for s in sets] == [step.data["machineSet"]]
    assert [meta.name(m) for m in store.list("Machine", NS)] == [new_machine]
    assert step.done


def test_check_mode_creates_nothing(store, cluster):
    k = kcp(store)
    md = deployment(store)
    assert control_plane.reconcile_control_plane(store, k, cluster, check=True).changed
    assert md_controller.reconcile_deployment(store, md, cluster, check=True).changed
    assert store.list("Machine", NS) == [] and store.list("MachineSet", NS) == []
