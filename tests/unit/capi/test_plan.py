"""The machines plan (plugins/module_utils/capi/plan.py) against a real sqlite store: hosts chosen as CAPM3 and
KCP would (failure domains, host selectors, claimed and unregistered hosts), the addresses of the IPPool with
none promised twice, the rendered data, a scale-down's victims, MAAS machines by their constraints; and the
control plane's own kubeadm files/commands (control_plane.kubeadm: a kube-vip VIP) on the KCP only."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.capi import description, description_objects, plan
from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta
from ansible_collections.baremetal.capi.plugins.module_utils.store.sqlite import SqliteStore

IMAGE = {"url": "http://img/x.raw", "checksum": "abc", "checksumType": "sha256", "format": "raw"}
FD = "infrastructure.cluster.x-k8s.io/failure-domain"


def _desc(cp=3, workers=2, hosts=6):
    hs = []
    for i in range(hosts):
        mac = f"52:54:00:00:00:{i:02x}"
        hs.append(
            {
                "name": f"h{i}",
                "labels": {FD: f"az-{i + 1}"} if i < 3 else {"pool": "w"},
                "spec": {"bmc": {"address": f"fake://h{i}"}, "bootMACAddress": mac},
                "hardware": {"nics": [{"name": "eth0", "mac": mac}]},
            }
        )
    return {
        "name": "c1",
        "namespace": "ns1",
        "provider": "metal3",
        "control_plane_endpoint": {"host": "10.0.0.5", "port": 6443},
        "control_plane": {"replicas": cp, "image": IMAGE, "failure_domains": ["az-1", "az-2", "az-3"]},
        "workers": [
            {"name": "md-0", "replicas": workers, "image": IMAGE, "host_selector": {"matchLabels": {"pool": "w"}}}
        ],
        "ip_pools": [
            {
                "name": "prov",
                "spec": {"pools": [{"start": "10.0.0.100", "end": "10.0.0.104"}], "prefix": 24, "gateway": "10.0.0.1"},
            }
        ],
        "data_template": {
            "spec": {
                "metaData": {"strings": [{"key": "cluster", "value": "c1"}]},
                "networkData": {
                    "links": {
                        "ethernets": [{"type": "phy", "id": "eth0", "macAddress": {"fromHostInterface": "eth0"}}]
                    },
                    "networks": {"ipv4": [{"id": "prov", "link": "eth0", "ipAddressFromIPPool": "prov"}]},
                },
            }
        },
        "hosts": hs,
    }


@pytest.fixture
def store(tmp_path):
    s = SqliteStore(str(tmp_path / "state.db"))
    yield s
    s.close()


def _plan(desc, store, maas=None):
    return plan.machines(desc, description_objects.objects(desc, "all"), store, maas)


def test_new_metal3_cluster_hosts_addresses_and_data(store):
    p = _plan(_desc(), store)
    assert not p["exists"] and len(p["create"]) == 5 and p["delete"] == []
    cps, ws = p["create"][:3], p["create"][3:]
    assert [(c["failure_domain"], c["host"]) for c in cps] == [("az-1", "h0"), ("az-2", "h1"), ("az-3", "h2")]
    assert [w["host"] for w in ws] == ["h3", "h4"] and all(w["host_registered_by_this_run"] for w in ws)
    assert [c["addresses"][0].split("/")[0] for c in p["create"]] == [f"10.0.0.{100 + i}" for i in range(5)]
    first = p["create"][0]
    assert first["metaData"] == {"cluster": "c1", "providerid": "ns1/h0/<new-1>"}
    assert first["networkData"]["links"][0]["ethernet_mac_address"] == "52:54:00:00:00:00"
    assert first["networkData"]["networks"][0]["ip_address"] == "10.0.0.100"
    assert first["networkData"]["networks"][0]["routes"] == [] and "gateway 10.0.0.1" in first["addresses"][0]
    assert (
        p["lines"][0]
        == "plan of ns1/c1 (metal3, new cluster): 5 machine(s) to create, 0 to delete - nothing written (check mode)"
    )
    assert store.list("BareMetalHost", "ns1") == []  # read only


def test_no_host_and_pool_exhausted_are_said(store):
    desc = _desc(workers=4)
    p = _plan(desc, store)
    ws = [c for c in p["create"] if c["role"] == "worker"]
    assert [w["host"] for w in ws] == ["h3", "h4", "h5", None]
    assert "no available host matching pool=w" in ws[3]["why"] and "h3 taken by another new machine" in ws[3]["why"]
    assert "h0 labels do not match" in ws[3]["why"]
    assert ws[2]["addresses"] == ["prov: pool exhausted"]  # five addresses, the sixth machine gets none
    assert any("NO HOST" in line for line in p["lines"])


def test_claimed_hosts_are_skipped_and_a_scale_down_names_its_victims(store):
    desc = _desc(cp=1, workers=3)
    for h in desc["hosts"]:  # registered already; h3 consumed by another cluster
        host = {
            "apiVersion": "metal3.io/v1alpha1",
            "kind": "BareMetalHost",
            "metadata": {"name": h["name"], "namespace": "ns1", "labels": h["labels"]},
            "spec": copy.deepcopy(h["spec"]),
        }
        if h["name"] == "h3":
            host["spec"]["consumerRef"] = {
                "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2",
                "kind": "Metal3Machine",
                "name": "other",
                "namespace": "ns1",
            }
        created = store.create(host)
        created["status"] = {"provisioning": {"state": "available"}, "hardware": {"nics": h["hardware"]["nics"]}}
        store.update_status(created)
    p = _plan(desc, store)
    ws = [c for c in p["create"] if c["role"] == "worker"]
    assert [w["host"] for w in ws] == ["h4", "h5", None] and not ws[0]["host_registered_by_this_run"]
    assert "h3 consumed by Metal3Machine ns1/other" in ws[2]["why"]
    # an existing cluster: the MachineDeployment at 2 with three Machines, one marked for deletion
    labels = {"cluster.x-k8s.io/cluster-name": "c1", "cluster.x-k8s.io/deployment-name": "c1-md-0"}
    store.create(meta.new("Cluster", "c1", "ns1", spec={}))
    md = next(o for o in description_objects.objects(desc, "machines") if o["kind"] == "MachineDeployment")
    store.create(md)
    for i in range(3):
        ann = {"cluster.x-k8s.io/delete-machine": ""} if i == 1 else {}
        store.create(
            meta.new("Machine", f"c1-md-0-{i}", "ns1", spec={"clusterName": "c1"}, labels=labels, annotations=ann)
        )
    desc["workers"][0]["replicas"] = 2
    p = _plan(desc, store)
    g = next(g for g in p["groups"] if g["kind"] == "MachineDeployment")
    assert (g["replicas_before"], g["replicas"], g["machines"], g["create"], g["delete"]) == (3, 2, 3, 0, 1)
    assert p["exists"] and p["delete"] == [{"group": "c1-md-0", "role": "worker", "machine": "c1-md-0-1"}]
    assert "MachineDeployment c1-md-0: replicas 3 -> 2, 3 machine(s) now, delete 1" in p["lines"]
    assert "  - c1-md-0-1 (worker): would be deleted" in p["lines"]


def test_maas_machines_by_constraints(store):
    desc = {
        "name": "m1",
        "namespace": "ns1",
        "provider": "maas",
        "dns_domain": "maas",
        "endpoint_via_maas_dns": True,
        "control_plane": {"replicas": 1, "image": "ubuntu/jammy", "constraints": {"tags": ["cp"]}},
        "workers": [{"name": "md-0", "replicas": 2, "image": "ubuntu/jammy", "constraints": {"minCPU": 4}}],
    }
    listed = [
        {
            "system_id": "aaa",
            "hostname": "a",
            "status_name": "Ready",
            "tag_names": ["cp"],
            "cpu_count": 2,
            "memory": 4096,
            "zone": {"name": "z1"},
            "pool": {"name": "default"},
        },
        {
            "system_id": "bbb",
            "hostname": "b",
            "status_name": "Ready",
            "tag_names": [],
            "cpu_count": 8,
            "memory": 4096,
            "zone": {"name": "z1"},
            "pool": {"name": "default"},
        },
        {
            "system_id": "ccc",
            "hostname": "c",
            "status_name": "Deployed",
            "owner": "x",
            "tag_names": [],
            "cpu_count": 8,
            "memory": 4096,
            "zone": {"name": "z1"},
            "pool": {"name": "default"},
        },
    ]
    p = _plan(desc, store, listed)
    assert [c["host"] for c in p["create"]] == ["a (aaa, zone z1)", "b (bbb, zone z1)", None]
    assert (
        "c (ccc) status Deployed, owned by x" in p["create"][2]["why"]
        and "a (aaa) taken by another new machine" in p["create"][2]["why"]
    )
    no_maas = _plan(desc, store, None)
    assert no_maas["create"][0]["host"] is None and "MAAS not asked" in no_maas["create"][0]["why"]


def test_control_plane_kubeadm_goes_to_the_control_plane_only():
    desc = _desc()
    vip = {"path": "/etc/kubernetes/manifests/kube-vip.yaml", "owner": "root:root", "content": "apiVersion: v1\n"}
    desc["kubeadm"] = {"pre_commands": ["echo all"]}
    desc["control_plane"]["kubeadm"] = {"files": [vip], "pre_commands": ["echo cp"]}
    description.check(desc)
    objs = {o["kind"]: o for o in description_objects.objects(desc, "all")}
    kcp = objs["KubeadmControlPlane"]["spec"]["kubeadmConfigSpec"]
    assert kcp["files"] == [vip] and kcp["preKubeadmCommands"] == ["echo all", "echo cp"]
    worker = objs["KubeadmConfigTemplate"]["spec"]["template"]["spec"]
    assert "files" not in worker and worker["preKubeadmCommands"] == ["echo all"]
    desc["control_plane"]["kubeadm"] = {"format": "ignition"}
    with pytest.raises(Invalid, match=r"control_plane.kubeadm: unknown key 'format'"):
        description.check(desc)
    desc["control_plane"]["kubeadm"] = {"files": [{"content": "x"}]}
    with pytest.raises(Invalid, match=r"control_plane.kubeadm.files\[0\]: a mapping with path is required"):
        description.check(desc)
