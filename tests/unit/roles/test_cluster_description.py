"""The description -> objects mapping of plugins/filter/cluster_description.py (pure functions)."""

from __future__ import annotations

import pytest

from ansible_collections.baremetal.capi.plugins.filter import cluster_description as cd

IMAGE = {"url": "http://img/x.raw", "checksum": "abc", "checksumType": "sha256", "format": "raw"}


def _metal3(**over):
    desc = {
        "name": "c1",
        "namespace": "ns1",
        "provider": "metal3",
        "control_plane_endpoint": {"host": "127.0.6.1", "port": 6443},
        "control_plane": {"replicas": 3, "image": IMAGE},
        "workers": [{"name": "md-0", "replicas": 3, "image": IMAGE, "failure_domains": ["a", "b"]}],
        "kubeadm": {"kubelet_extra_args": {"node-labels": "tier=web", "max-pods": 50}, "pre_commands": ["echo hi"]},
    }
    desc.update(over)
    return desc


def _by_kind(objs):
    out = {}
    for o in objs:
        out.setdefault(o["kind"], []).append(o)
    return out


def test_metal3_objects_kubelet_args_and_failure_domains():
    desc = _metal3()
    cluster = _by_kind(cd.objects(desc, "cluster"))
    c = cluster["Cluster"][0]
    assert c["spec"]["controlPlaneRef"] == {
        "apiGroup": "controlplane.cluster.x-k8s.io",
        "kind": "KubeadmControlPlane",
        "name": "c1-control-plane",
    }
    assert c["spec"]["infrastructureRef"]["kind"] == "Metal3Cluster"
    assert "controlPlaneEndpoint" not in c["spec"]  # Metal3: the Metal3Cluster's, copied by the Cluster controller
    machines = _by_kind(cd.objects(desc, "machines"))
    kcp = machines["KubeadmControlPlane"][0]
    assert kcp["spec"]["replicas"] == 3 and kcp["spec"]["version"] == "v1.34.4"
    reg = kcp["spec"]["kubeadmConfigSpec"]["initConfiguration"]["nodeRegistration"]
    assert reg["name"] == "{{ ds.meta_data.name }}"
    args = {a["name"]: a["value"] for a in reg["kubeletExtraArgs"]}
    assert args["provider-id"] == "metal3://{{ ds.meta_data.providerid }}"
    assert args["node-labels"] == "metal3.io/uuid={{ ds.meta_data.uuid }},tier=web" and args["max-pods"] == "50"
    assert kcp["spec"]["kubeadmConfigSpec"]["preKubeadmCommands"] == ["echo hi"]
    mds = machines["MachineDeployment"]
    assert [(m["metadata"]["name"], m["spec"]["replicas"], m["spec"]["template"]["spec"]["failureDomain"])
            for m in mds] == [("c1-md-0-a", 2, "a"), ("c1-md-0-b", 1, "b")]  # fmt: skip
    template = machines["Metal3MachineTemplate"][0]["spec"]["template"]["spec"]
    assert template["image"]["diskFormat"] == "raw" and "format" not in template["image"]
    assert template["dataTemplate"] == {"name": "c1-nodes"}
    kct = cd.objects(desc, "bootstrap")[0]
    assert mds[0]["spec"]["template"]["spec"]["bootstrap"]["configRef"]["name"] == kct["metadata"]["name"]
    assert "initConfiguration" not in kct["spec"]["template"]["spec"]
    names = cd.names(desc)
    assert names["machine_deployments"] == ["c1-md-0-a", "c1-md-0-b"]
    assert names["failure_domains"] == [{"name": "a", "controlPlane": False}, {"name": "b", "controlPlane": False}]


def test_the_maas_kubeconfig_lives_beside_the_default_store(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    desc = {"name": "c1", "namespace": "ns1", "provider": "maas"}
    assert cd.names(desc)["maas_kubeconfig"] == str(tmp_path / "baremetal-capi" / "ns1-c1.kubeconfig")


def test_a_changed_pool_is_a_new_template_and_the_same_pool_the_same_name():
    a = _by_kind(cd.objects(_metal3(), "machines"))["Metal3MachineTemplate"]
    b = _by_kind(cd.objects(_metal3(), "machines"))["Metal3MachineTemplate"]
    assert [t["metadata"]["name"] for t in a] == [t["metadata"]["name"] for t in b]
    other = dict(IMAGE, url="http://img/y.raw")
    c = _by_kind(cd.objects(_metal3(control_plane={"replicas": 3, "image": other}), "machines"))
    assert c["Metal3MachineTemplate"][0]["metadata"]["name"] != a[0]["metadata"]["name"]


def test_maas_objects_have_no_metal3_kubelet_args_and_a_dns_domain():
    desc = {
        "name": "m1",
        "provider": "maas",
        "dns_domain": "maas.example",
        "control_plane": {"replicas": 1, "failure_domains": ["az-1", "az-2"], "constraints": {"tags": ["cp"]}},
        "workers": [{"name": "w", "replicas": 2, "constraints": {"minCPU": 4, "resourcePool": "p1"}}],
    }
    cluster = _by_kind(cd.objects(desc, "cluster"))
    assert cluster["MaasCluster"][0]["spec"] == {"dnsDomain": "maas.example", "failureDomains": ["az-1", "az-2"]}
    machines = _by_kind(cd.objects(desc, "machines"))
    kcp = machines["KubeadmControlPlane"][0]
    assert "name" not in kcp["spec"]["kubeadmConfigSpec"]["initConfiguration"]["nodeRegistration"]
    templates = [t["spec"]["template"]["spec"] for t in machines["MaasMachineTemplate"]]
    assert templates[0] == {"minCPU": 1, "minMemory": 1024, "image": "ubuntu/jammy", "tags": ["cp"]}
    assert templates[1] == {"minCPU": 4, "minMemory": 1024, "image": "ubuntu/jammy", "resourcePool": "p1"}


def test_scaled_and_errors_name_the_field():
    desc = _metal3()
    out = cd.scaled(desc, 1, {"md-0": 5})
    assert out["control_plane"]["replicas"] == 1 and out["workers"][0]["replicas"] == 5
    assert desc["workers"][0]["replicas"] == 3  # the description itself is untouched
    with pytest.raises(cd.DescriptionError, match="no worker pool named md-9"):
        cd.scaled(desc, None, {"md-9": 1})
    with pytest.raises(cd.DescriptionError, match="capi_cluster: provider: must be metal3 or maas"):
        cd.objects(dict(desc, provider="aws"), "cluster")
    with pytest.raises(cd.DescriptionError, match=r"capi_cluster: control_plane\.image: is required"):
        cd.objects(_metal3(control_plane={"replicas": 1}), "machines")


def test_machine_table():
    rows = [
        {"machine": "w-1", "role": "worker", "host": "h2", "address": "10.0.0.2", "state": "Running",
         "providerID": "metal3://ns/h2/w-1", "nodeReady": True},
        {"machine": "cp-1", "role": "control-plane", "host": None, "address": None, "state": "Pending",
         "providerID": None, "nodeReady": None, "certificatesExpiry": "2027-05-01T08:30:00Z",
         "caExpiry": "2036-01-01T00:00:00Z"},
    ]  # fmt: skip
    lines = cd.machine_table(rows, title="Machines:")
    assert lines[0] == "Machines:"
    assert lines[1].split() == ["MACHINE", "ROLE", "HOST/SYSTEM", "ADDRESS", "STATE", "PROVIDER", "ID", "NODE", "READY",
                                "CERTS", "EXPIRE"]  # fmt: skip
    assert lines[2].split() == ["cp-1", "control-plane", "-", "-", "Pending", "-", "-", "2027-05-01"]
    assert lines[3].split() == ["w-1", "worker", "h2", "10.0.0.2", "Running", "metal3://ns/h2/w-1", "True", "-"]
    assert lines[4] == "cluster CA expires 2036-01-01T00:00:00Z"


def test_control_plane_rollout_becomes_kcp_spec_rollout():
    desc = _metal3()
    desc["control_plane"]["rollout"] = {"max_surge": 0, "after": "2026-12-01T00:00:00Z", "certificates_expiry_days": 21}
    kcp = _by_kind(cd.objects(desc, "machines"))["KubeadmControlPlane"][0]
    assert kcp["spec"]["rollout"] == {
        "after": "2026-12-01T00:00:00Z",
        "before": {"certificatesExpiryDays": 21},
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0}},
    }
    assert "rollout" not in _by_kind(cd.objects(_metal3(), "machines"))["KubeadmControlPlane"][0]["spec"]
    desc["control_plane"]["rollout"] = {"max_surge": 2}
    with pytest.raises(cd.DescriptionError, match="rollout.max_surge: must be 0 or 1"):
        cd.objects(desc, "machines")


def test_a_new_kubernetes_version_changes_the_kcp_and_every_deployment():
    old = _by_kind(cd.objects(_metal3(), "machines"))
    new = _by_kind(cd.objects(_metal3(kubernetes_version="1.35.0"), "machines"))
    assert old["KubeadmControlPlane"][0]["spec"]["version"] != new["KubeadmControlPlane"][0]["spec"]["version"]
    assert new["KubeadmControlPlane"][0]["spec"]["version"] == "v1.35.0"
    assert {md["spec"]["template"]["spec"]["version"] for md in new["MachineDeployment"]} == {"v1.35.0"}


def test_table_and_progress_tell_a_node_without_network_from_a_ready_one():
    message = (
        "KubeletNotReady: container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady "
        "message:Network plugin returns error: cni plugin not initialized"
    )
    rows = [
        {"machine": "w-1", "role": "worker", "state": "Running", "nodeReady": False, "nodeNotReady": message},
        {"machine": "w-2", "role": "worker", "state": "Running", "nodeReady": False,
         "nodeNotReady": "NodeStatusUnknown: Kubelet stopped posting node status."},
        {"machine": "w-3", "role": "worker", "state": "Running", "nodeReady": True, "nodeNotReady": None},
    ]  # fmt: skip
    lines = cd.machine_table(rows)
    ready = lines[0].index("NODE READY")
    assert lines[1][ready:].split("  ")[0] == "False (network not ready)"
    assert lines[2][ready:].split("  ")[0] == "False (NodeStatusUnknown)"
    assert lines[3][ready:].split("  ")[0] == "True"
    assert "node=NotReady (network not ready)" in cd.progress_line(rows[0])
    assert "node=Ready" in cd.progress_line(rows[2])


def test_pool_rollout_settings_become_machine_deployment_fields():
    pool = {
        "name": "md-0",
        "image": IMAGE,
        "replicas": 3,
        "rollout": {"strategy": "RollingUpdate", "max_surge": 0, "max_unavailable": "34%"},
        "min_ready_seconds": 30,
        "remediation_max_in_flight": 1,
    }
    desc = _metal3(workers=[pool])
    md = _by_kind(cd.objects(desc, "machines"))["MachineDeployment"][0]
    assert md["spec"]["rollout"] == {
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": "34%"}}
    }
    assert md["spec"]["template"]["spec"]["minReadySeconds"] == 30
    assert md["spec"]["remediation"] == {"maxInFlight": 1}
    assert "rollout" not in _by_kind(cd.objects(_metal3(), "machines"))["MachineDeployment"][0]["spec"]
    pool["rollout"] = {"strategy": "Sideways"}
    with pytest.raises(cd.DescriptionError, match=r"workers\[0\]\.rollout\.strategy"):
        cd.objects(desc, "machines")
