"""Failure domains: the Cluster's mirror of its infrastructure cluster, and KCP's placement and scale-down."""

from __future__ import annotations

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.capi import cluster as capi_cluster
from ansible_collections.baremetal.capi.plugins.module_utils.capi import control_plane
from ansible_collections.baremetal.capi.plugins.module_utils.capi import failure_domains as fd
from ansible_collections.baremetal.capi.plugins.module_utils.metal3 import cluster as m3_cluster
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta

NS = "fd"
INFRA = "infrastructure.cluster.x-k8s.io"


def _machine(name, domain=None, created="2026-01-01T00:00:00Z", deleting=False):
    m = {"metadata": {"name": name, "creationTimestamp": created}, "spec": {}}
    if domain:
        m["spec"]["failureDomain"] = domain
    if deleting:
        m["metadata"]["deletionTimestamp"] = "2026-01-02T00:00:00Z"
    return m


def _cluster(*domains, non_cp=()):
    fds = [{"name": d, "controlPlane": True} for d in domains] + [{"name": d, "controlPlane": False} for d in non_cp]
    return {"status": {"failureDomains": fds}}


# -- reading the infrastructure cluster ------------------------------------------------------------------------


def test_list_form_defaults_control_plane_to_false_and_sorts():
    infra = {
        "status": {"failureDomains": [{"name": "b", "controlPlane": True}, {"name": "a", "attributes": {"r": "1"}}]}
    }
    assert fd.from_infra_cluster(infra) == [
        {"name": "a", "controlPlane": False, "attributes": {"r": "1"}},
        {"name": "b", "controlPlane": True},
    ]


def test_v1beta1_map_form_becomes_the_list():
    infra = {"status": {"failureDomains": {"z2": {"controlPlane": True}, "z1": {}}}}
    assert fd.from_infra_cluster(infra) == [{"name": "z1", "controlPlane": False}, {"name": "z2", "controlPlane": True}]


def test_absent_field_is_none_and_mirrors_to_nothing():
    assert fd.from_infra_cluster({"status": {}}) is None
    cluster = {"status": {"failureDomains": [{"name": "old", "controlPlane": True}]}}
    assert fd.mirror(cluster, {"status": {}})
    assert "failureDomains" not in cluster["status"]
    assert not fd.mirror(cluster, {"status": {}})


def test_deleting_infra_cluster_is_not_mirrored():
    cluster = {"status": {}}
    infra = {
        "metadata": {"deletionTimestamp": "x"},
        "status": {"failureDomains": [{"name": "a", "controlPlane": True}]},
    }
    assert not fd.mirror(cluster, infra)
    assert "failureDomains" not in cluster["status"]


def _provisioned_metal3_cluster(store, domains):
    cluster = store.create(
        meta.new(
            "Cluster", "c1", NS, spec={"infrastructureRef": {"apiGroup": INFRA, "kind": "Metal3Cluster", "name": "c1"}}
        )
    )
    spec = {"controlPlaneEndpoint": {"host": "192.0.2.1", "port": 6443}}
    if domains is not None:
        spec["failureDomains"] = domains
    m3_cluster.apply(store, {"apiVersion": f"{INFRA}/v1beta2", "kind": "Metal3Cluster",
                             "metadata": {"name": "c1", "namespace": NS}, "spec": spec})  # fmt: skip
    m3_cluster.reconcile(store, "c1", NS)
    return store.get("Cluster", meta.name(cluster), NS)


def test_metal3_cluster_failure_domains_reach_the_cluster_status(store):
    domains = [{"name": "rack-2", "controlPlane": True}, {"name": "rack-1", "controlPlane": True},
               {"name": "rack-9"}]  # fmt: skip
    cluster = _provisioned_metal3_cluster(store, domains)
    assert cluster["status"]["failureDomains"] == [
        {"name": "rack-1", "controlPlane": True},
        {"name": "rack-2", "controlPlane": True},
        {"name": "rack-9", "controlPlane": False},
    ]
    assert fd.control_plane_domains(cluster) == ["rack-1", "rack-2"]
    # removed from the Metal3Cluster's spec: gone from its status (CAPM3) and then from the Cluster's (CAPI)
    m3c = store.get("Metal3Cluster", "c1", NS)
    del m3c["spec"]["failureDomains"]
    store.update(m3c)
    m3_cluster.reconcile(store, "c1", NS)
    assert "failureDomains" not in store.get("Metal3Cluster", "c1", NS)["status"]
    assert "failureDomains" not in store.get("Cluster", "c1", NS)["status"]


def test_nothing_is_mirrored_before_the_infrastructure_is_provisioned(store):
    store.create(
        meta.new(
            "Cluster", "c2", NS, spec={"infrastructureRef": {"apiGroup": INFRA, "kind": "Metal3Cluster", "name": "c2"}}
        )
    )
    infra = meta.new("Metal3Cluster", "c2", NS, spec={})
    infra["status"] = {"failureDomains": [{"name": "a", "controlPlane": True}]}
    store.create(infra)
    capi_cluster.reconcile(store, store.get("Cluster", "c2", NS))
    assert "failureDomains" not in store.get("Cluster", "c2", NS).get("status", {})


# -- placement -------------------------------------------------------------------------------------------------


def test_scale_up_uses_only_control_plane_domains_fewest_first():
    cluster = _cluster("a", "b", "c", non_cp=("w",))
    machines = [_machine("m1", "a"), _machine("m2", "b")]
    assert fd.next_for_scale_up(cluster, machines) == "c"
    assert fd.next_for_scale_up(cluster, machines + [_machine("m3", "c")]) == "a"  # a tie: by name
    assert fd.next_for_scale_up({"status": {}}, machines) is None
    assert fd.next_for_scale_up(_cluster(non_cp=("w",)), machines) is None


def test_scale_up_counts_up_to_date_machines_first_then_all():
    cluster = _cluster("a", "b")
    old_a, old_b, new_b = _machine("o1", "a"), _machine("o2", "b"), _machine("n1", "b")
    # only new_b is up to date: a has none up to date and wins although both hold machines
    assert fd.next_for_scale_up(cluster, [old_a, old_b, new_b], up_to_date=[new_b]) == "a"
    # a deleting machine counts overall but never as up to date
    gone = _machine("d1", "a", deleting=True)
    assert fd.next_for_scale_up(cluster, [gone, new_b], up_to_date=[gone, new_b]) == "a"
    assert fd.next_for_scale_up(cluster, [gone, _machine("x", "b"), _machine("y", "b")], up_to_date=[]) == "a"


def test_machines_in_unknown_domains_are_not_counted():
    cluster = _cluster("a", "b")
    assert fd.next_for_scale_up(cluster, [_machine("m1", "gone"), _machine("m2", "gone"), _machine("m3", "a")]) == "b"


def test_scale_down_takes_outsiders_first_then_the_biggest_domain_oldest_there():
    cluster = _cluster("a", "b")
    a1 = _machine("a1", "a", "2026-01-01T00:00:01Z")
    a2 = _machine("a2", "a", "2026-01-01T00:00:00Z")
    b1 = _machine("b1", "b", "2026-01-01T00:00:00Z")
    assert fd.machine_for_scale_down(cluster, [a1, a2, b1]) is a2
    stray = _machine("s1", "removed-domain", "2026-01-03T00:00:00Z")
    none = _machine("n1", None, "2026-01-02T00:00:00Z")
    # machines outside every known domain go first, the oldest of them
    assert fd.machine_for_scale_down(cluster, [a1, a2, b1, stray, none]) is none
    # eligible machines restrict the choice; the domain with the most eligible machines wins
    assert fd.machine_for_scale_down(cluster, [a1, a2, b1], eligible=[b1]) is b1
    with pytest.raises(ValueError):
        fd.machine_for_scale_down(cluster, [a1], eligible=[])


def test_pick_most_prefers_eligible_count_then_all_then_name():
    a = [_machine("a1", "a"), _machine("a2", "a"), _machine("a3", "a")]
    b = [_machine("b1", "b"), _machine("b2", "b")]
    assert fd.pick_most(["a", "b"], a + b, eligible=[a[0], b[0], b[1]]) == "b"
    assert fd.pick_most(["a", "b"], a + b, eligible=[a[0], b[0]]) == "a"
    assert fd.pick_most(["a", "b"], a + b, eligible=[]) is None


# -- through KCP -----------------------------------------------------------------------------------------------


def _kcp(store, replicas):
    store.create(
        meta.new("Metal3MachineTemplate", "tmpl", NS, spec={"template": {"spec": {"image": {"url": "http://i/x"}}}})
    )
    ref = {"apiGroup": INFRA, "kind": "Metal3MachineTemplate", "name": "tmpl"}
    spec = {"replicas": replicas, "version": "v1.34.1", "machineTemplate": {"spec": {"infrastructureRef": ref}}}
    return store.create(meta.new("KubeadmControlPlane", "c1-cp", NS, spec=spec))


def _give_node(store, name):
    m = store.get("Machine", name, NS)
    m.setdefault("status", {})["nodeRef"] = {"name": name}
    store.update_status(m)


def test_kcp_spreads_three_machines_over_three_domains_and_scales_down_from_the_biggest(store):
    cluster = store.create(meta.new("Cluster", "c1", NS, spec={}))
    cluster["status"] = {"failureDomains": [{"name": z, "controlPlane": True} for z in ("z3", "z1", "z2")]
                         + [{"name": "workers-only", "controlPlane": False}]}  # fmt: skip
    cluster = store.update_status(cluster)
    k = _kcp(store, 3)
    made = []
    for _ in range(3):
        made.append(control_plane.reconcile_control_plane(store, k, cluster).data["created"])
        _give_node(store, made[-1])
    domains = {store.get("Machine", n, NS)["spec"]["failureDomain"] for n in made}
    assert domains == {"z1", "z2", "z3"}
    k = store.get("KubeadmControlPlane", meta.name(k), NS)  # KCP wrote its status meanwhile
    k["spec"]["replicas"] = 5
    k = store.update(k)
    for _ in range(2):
        made.append(control_plane.reconcile_control_plane(store, k, cluster).data["created"])
        _give_node(store, made[-1])
    before = {n: store.get("Machine", n, NS) for n in made}
    by_domain = {n: m["spec"]["failureDomain"] for n, m in before.items()}
    assert sorted(by_domain.values()) == ["z1", "z1", "z2", "z2", "z3"]
    k = store.get("KubeadmControlPlane", meta.name(k), NS)
    k["spec"]["replicas"] = 3
    k = store.update(k)
    victim = control_plane.reconcile_control_plane(store, k, cluster).data["deleted"]
    # z1 and z2 hold two each: the tie goes by name; the oldest machine of z1 goes
    first_in_z1 = min((m for n, m in before.items() if by_domain[n] == "z1"),
                      key=lambda m: (m["metadata"]["creationTimestamp"], meta.name(m)))  # fmt: skip
    assert victim == meta.name(first_in_z1)
