"""The Metal3 data flow on a real store: claim, index, Metal3Data, IP claims, Secrets, release."""

from __future__ import annotations

import base64
import copy

import pytest
import yaml
from m3_objects import EXAMPLES, example_docs, example_json, machine_set

from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid, Requeue
from ansible_collections.baremetal.capi.plugins.module_utils.metal3.data import DataManager
from ansible_collections.baremetal.capi.plugins.module_utils.metal3.ipam import AllocationFailed
from ansible_collections.baremetal.capi.plugins.module_utils.model import kinds, meta, names

NS = "metal3"
KINDS = ("Metal3DataClaim", "Metal3Data", "IPClaim", kinds.M3_IPADDRESS, "Secret", "IPAddressClaim", "ConfigMap")


def snapshot(store):
    return {k: sorted((meta.name(o), o["metadata"]["resourceVersion"]) for o in store.list(k, NS)) for k in KINDS}


def decode(secret, key):
    return base64.b64decode(secret["data"][key]).decode()


@pytest.fixture
def dm(store):
    return DataManager(store, update_machine_status=True)


@pytest.fixture
def example(dm, store):
    """The upstream example's template and pools; the example machine pre-allocated its addresses."""
    docs = example_docs()
    pre = {
        "provisioning-pool": "172.22.0.50",
        "baremetalv4-pool": "192.168.111.20",
        "baremetalv6-pool": "2001:db8:0:1::20",
    }
    for pool in docs[1:]:
        pool = copy.deepcopy(pool)
        # the Metal3Data will be nodepool-1-3, so its IPClaims are nodepool-1-3-<pool>
        pool["spec"]["preAllocations"] = {f"nodepool-1-3-{meta.name(pool)}": pre[meta.name(pool)]}
        dm.ipam.apply_pool(pool)
    dm.apply_template(docs[0])
    return docs


def other_machine(store, i, template="nodepool-1", **kw):
    return machine_set(
        store,
        m3m=f"other-{i}",
        machine=f"other-machine-{i}",
        bmh=f"other-host-{i}",
        template=template,
        bmh_annotations={"example.com/ext-mac": "52:54:00:aa:cc:04"},
        **kw,
    )


def example_machine(store):
    return machine_set(
        store,
        m3m_labels={"cluster.x-k8s.io/cluster-name": "test1"},
        bmh_labels={"example.com/rack": "r12"},
        bmh_annotations={"example.com/ext-mac": "52:54:00:aa:bb:04"},
        machine_annotations={"example.com/site": "dc-east"},
    )


def test_upstream_example_end_to_end(dm, store, example):
    for i in range(3):
        other_machine(store, i)
        assert dm.reconcile(f"other-{i}", NS)["index"] == i
    m3m = example_machine(store)
    result = dm.reconcile("test1-workers-7xk2p", NS)
    assert result["changed"] and result["index"] == 3 and result["data"] == "nodepool-1-3"
    assert result["metaData"] == example_json("meta_data.capm3-secret.example.json")
    assert result["networkData"] == example_json("network_data.example.json")

    expected = list(yaml.safe_load_all((EXAMPLES / "rendered-secrets.example.yaml").read_text()))
    data = store.get("Metal3Data", "nodepool-1-3", NS)
    for want, key in zip(expected, ("metaData", "networkData"), strict=True):
        secret = store.get("Secret", want["metadata"]["name"], NS)
        assert secret["type"] == "infrastructure.cluster.x-k8s.io/secret"
        assert secret["metadata"]["labels"] == {"cluster.x-k8s.io/cluster-name": "test1"}
        assert secret["metadata"]["ownerReferences"] == [meta.owner_reference(data, controller=True)]
        assert list(secret["data"]) == [key]
        assert yaml.safe_load(decode(secret, key)) == yaml.safe_load(want["stringData"][key])
        assert decode(secret, key) == want["stringData"][key]  # go-yaml key order, block style

    claim = store.get("Metal3DataClaim", "test1-workers-7xk2p", NS)
    assert claim["spec"] == {"template": {"name": "nodepool-1", "namespace": NS}}
    assert claim["metadata"]["ownerReferences"] == [meta.owner_reference(m3m, controller=True)]
    assert claim["metadata"]["labels"] == {"cluster.x-k8s.io/cluster-name": "test1"}
    assert claim["metadata"]["finalizers"] == [names.METAL3_MACHINE_FINALIZER, names.METAL3_DATA_CLAIM_FINALIZER]
    assert claim["status"]["renderedData"] == {"name": "nodepool-1-3", "namespace": NS}
    assert data["spec"] == {
        "index": 3,
        "template": {"name": "nodepool-1", "namespace": NS},
        "claim": {"name": "test1-workers-7xk2p", "namespace": NS},
        "metaData": {"name": "test1-workers-7xk2p-metadata", "namespace": NS},
        "networkData": {"name": "test1-workers-7xk2p-networkdata", "namespace": NS},
    }
    assert data["metadata"]["ownerReferences"] == [
        meta.owner_reference(claim, controller=True),
        meta.owner_reference(m3m),
    ]
    assert data["status"]["ready"] is True and "errorMessage" not in data["status"]
    template = store.get("Metal3DataTemplate", "nodepool-1", NS)
    assert template["status"]["indexes"] == [
        {"name": "other-0", "index": 0},
        {"name": "other-1", "index": 1},
        {"name": "other-2", "index": 2},
        {"name": "test1-workers-7xk2p", "index": 3},
    ]
    assert template["metadata"]["finalizers"] == [names.METAL3_DATA_TEMPLATE_FINALIZER]
    for pool in ("provisioning-pool", "baremetalv4-pool", "baremetalv6-pool"):
        ipclaim = store.get("IPClaim", f"nodepool-1-3-{pool}", NS)
        assert ipclaim["spec"]["pool"] == {"name": pool, "namespace": NS}
        assert ipclaim["metadata"]["ownerReferences"] == [meta.owner_reference(data, controller=True)]
        assert ipclaim["metadata"]["finalizers"] == [names.METAL3_DATA_FINALIZER, names.IPCLAIM_FINALIZER]

    m3m = store.get("Metal3Machine", "test1-workers-7xk2p", NS)
    assert m3m["status"] == {
        "renderedData": {"name": "nodepool-1-3", "namespace": NS},
        "metaData": {"name": "test1-workers-7xk2p-metadata", "namespace": NS},
        "networkData": {"name": "test1-workers-7xk2p-networkdata", "namespace": NS},
    }

    # converged: nothing moves on the next run
    before = snapshot(store)
    again = dm.reconcile("test1-workers-7xk2p", NS)
    assert not again["changed"] and again["metaData"] == result["metaData"]
    assert snapshot(store) == before


def test_e2e_template_written_with_v1beta1_names(dm, store):
    docs = list(yaml.safe_load_all((EXAMPLES / "e2e-template.yaml").read_text()))
    for pool in docs[1:]:
        dm.ipam.apply_pool(pool)
    changed, template, warnings = dm.apply_template(docs[0])
    assert template["apiVersion"] == "infrastructure.cluster.x-k8s.io/v1beta2"
    assert "ipAddressesFromPool" in template["spec"]["metaData"]
    assert "ipAddressesFromIPPool" not in template["spec"]["metaData"]
    assert warnings == ["spec.clusterName is deprecated and has no effect"]
    machine_set(
        store,
        m3m="test1-controlplane-xyz12",
        machine="test1-abcde",
        bmh="node-0",
        template="test1-controlplane-template",
        nics=[{"name": "enp1s0", "mac": "00:a8:6e:54:1c:11"}, {"name": "enp2s0", "mac": "00:a8:6e:54:1c:12"}],
    )
    result = dm.reconcile("test1-controlplane-xyz12", NS)
    assert result["metaData"] == example_json("meta_data.e2e-template.example.json")
    assert result["networkData"] == example_json("network_data.e2e-template.example.json")


def test_check_mode_writes_nothing_and_predicts(dm, store, example):
    example_machine(store)
    before = snapshot(store)
    preview = dm.reconcile("test1-workers-7xk2p", NS, check=True)
    assert snapshot(store) == before
    assert preview["changed"] and preview["index"] == 0 and preview["data"] == "nodepool-1-0"
    assert preview["addresses"]["provisioning-pool"]["address"] == "172.22.0.51"  # .50 is pre-allocated
    real = dm.reconcile("test1-workers-7xk2p", NS)
    assert (real["metaData"], real["networkData"], real["addresses"]) == (
        preview["metaData"],
        preview["networkData"],
        preview["addresses"],
    )
    after = dm.reconcile("test1-workers-7xk2p", NS, check=True)
    assert not after["changed"] and after["metaData"] == real["metaData"]


def test_lowest_free_index_and_release(dm, store, example):
    for i in range(4):
        other_machine(store, i)
        dm.reconcile(f"other-{i}", NS)
    taken = {o["spec"]["address"] for o in store.list(kinds.M3_IPADDRESS, NS)}
    gone = dm.delete("other-1", NS)
    assert gone == {"changed": True, "claim": "other-1", "data": "nodepool-1-1"}
    left = {o["spec"]["address"] for o in store.list(kinds.M3_IPADDRESS, NS)}
    assert len(taken - left) == 3  # one address per pool released
    assert not any(meta.name(o).startswith("nodepool-1-1") for k in KINDS for o in store.list(k, NS))
    assert [s["metadata"]["name"] for s in store.list("Secret", NS) if "other-1" in meta.name(s)] == []
    assert dm.delete("other-1", NS) == {"changed": False}
    assert store.get("Metal3Machine", "other-1", NS).get("status", {}) == {}
    other_machine(store, 9)
    result = dm.reconcile("other-9", NS)
    assert result["index"] == 1 and result["data"] == "nodepool-1-1"
    assert {a["address"] for a in result["addresses"].values()} == taken - left  # the freed ones again


def test_secrets_are_never_rewritten(dm, store, example):
    example_machine(store)
    # a Secret the user made first is kept as it is
    mine = meta.new("Secret", "test1-workers-7xk2p-metadata", NS)
    mine["stringData"] = {"metaData": "mine: true\n"}
    store.create(mine)
    result = dm.reconcile("test1-workers-7xk2p", NS)
    assert result["metaData"] == {"mine": True}
    nd = store.get("Secret", "test1-workers-7xk2p-networkdata", NS)
    # the host changes; a new reconcile (even after the data went un-ready) does not touch the Secrets
    bmh = store.get("BareMetalHost", "node-1", NS)
    bmh["status"]["hardware"]["nics"][1]["mac"] = "52:54:00:ff:ff:ff"
    store.update_status(bmh)
    data = store.get("Metal3Data", result["data"], NS)
    data["status"]["ready"] = False
    store.update_status(data)
    dm.reconcile("test1-workers-7xk2p", NS)
    assert (
        store.get("Secret", "test1-workers-7xk2p-networkdata", NS)["metadata"]["resourceVersion"]
        == nd["metadata"]["resourceVersion"]
    )
    assert store.get("Metal3Data", result["data"], NS)["status"]["ready"] is True


def test_exhausted_pool_fails_then_succeeds_once_freed(dm, store):
    dm.ipam.apply_pool(
        meta.new(
            "IPPool", "tiny", NS, spec={"namePrefix": "tiny", "pools": [{"subnet": "10.0.0.0/31", "start": "10.0.0.1"}]}
        )
    )
    dm.apply_template(
        meta.new(
            "Metal3DataTemplate", "t", NS, spec={"metaData": {"ipAddressesFromPool": [{"key": "ip", "name": "tiny"}]}}
        )
    )
    other_machine(store, 0, template="t")
    other_machine(store, 1, template="t")
    assert dm.reconcile("other-0", NS)["metaData"]["ip"] == "10.0.0.1"
    with pytest.raises(AllocationFailed) as err:
        dm.reconcile("other-1", NS)
    assert (
        str(err.value) == "Metal3Data metal3/t-1: status.errorMessage: IP Allocation for tiny failed : "
        "Exhausted IP Pools"
    )
    assert (
        store.get("Metal3Data", "t-1", NS)["status"]["errorMessage"]
        == "IP Allocation for tiny failed : Exhausted IP Pools"
    )
    assert store.get("IPClaim", "t-1-tiny", NS)["status"]["errorMessage"] == "Exhausted IP Pools"
    dm.delete("other-0", NS)
    result = dm.reconcile("other-1", NS)
    assert result["metaData"]["ip"] == "10.0.0.1"
    assert "errorMessage" not in store.get("Metal3Data", "t-1", NS)["status"]


def test_capi_ipam_contract(dm, store):
    dm.apply_template(
        meta.new(
            "Metal3DataTemplate",
            "t",
            NS,
            spec={
                "metaData": {
                    "ipAddressesFromPool": [
                        {
                            "key": "ip",
                            "name": "incluster",
                            "apiGroup": "ipam.cluster.x-k8s.io",
                            "kind": "InClusterIPPool",
                        }
                    ],
                    "prefixesFromPool": [
                        {
                            "key": "prefix",
                            "name": "incluster",
                            "apiGroup": "ipam.cluster.x-k8s.io",
                            "kind": "InClusterIPPool",
                        }
                    ],
                },
                "networkData": {
                    "networks": {
                        "ipv4": [
                            {
                                "id": "n",
                                "link": "eth0",
                                "fromPoolRef": {
                                    "name": "incluster",
                                    "apiGroup": "ipam.cluster.x-k8s.io",
                                    "kind": "InClusterIPPool",
                                },
                                "routes": [
                                    {
                                        "network": "0.0.0.0",
                                        "gateway": {
                                            "fromPoolRef": {
                                                "name": "incluster",
                                                "apiGroup": "ipam.cluster.x-k8s.io",
                                                "kind": "InClusterIPPool",
                                            }
                                        },
                                    }
                                ],
                            }
                        ]
                    }
                },
            },
        )
    )
    other_machine(store, 0, template="t")
    with pytest.raises(Requeue, match="waiting for an IPAM provider"):
        dm.reconcile("other-0", NS)
    claim = store.get("IPAddressClaim", "t-0-incluster", NS)
    data = store.get("Metal3Data", "t-0", NS)
    assert claim["spec"] == {
        "poolRef": {"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": "incluster"}
    }
    assert claim["metadata"]["finalizers"] == [names.METAL3_DATA_FINALIZER]
    assert claim["metadata"]["ownerReferences"] == [meta.owner_reference(data, controller=True)]
    # an IPAM provider answers, as the in-cluster provider would
    addr = meta.new(
        kinds.CAPI_IPADDRESS,
        "t-0-incluster",
        NS,
        spec={
            "address": "10.5.0.7",
            "prefix": 22,
            "gateway": "10.5.0.1",
            "claimRef": {"name": "t-0-incluster"},
            "poolRef": {"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": "incluster"},
        },
    )
    addr["metadata"]["ownerReferences"] = [meta.owner_reference(claim)]
    store.create(addr)
    claim["status"] = {"addressRef": {"name": "t-0-incluster"}}
    store.update_status(claim)
    result = dm.reconcile("other-0", NS)
    assert result["metaData"] == {"ip": "10.5.0.7", "prefix": "22", "providerid": "metal3/other-host-0/other-0"}
    assert result["networkData"]["networks"] == [
        {
            "type": "ipv4",
            "id": "n",
            "link": "eth0",
            "ip_address": "10.5.0.7",
            "netmask": "255.255.252.0",
            "routes": [{"network": "0.0.0.0", "netmask": "0.0.0.0", "gateway": "10.5.0.1", "services": []}],
        }
    ]
    dm.delete("other-0", NS)
    assert store.list("IPAddressClaim", NS) == [] and store.list("Metal3Data", NS) == []


def test_pool_from_annotation_claimed_and_released(dm, store):
    dm.ipam.apply_pool(
        meta.new("IPPool", "rack-a", NS, spec={"namePrefix": "ra", "pools": [{"subnet": "10.7.0.0/29"}], "prefix": 29})
    )
    dm.apply_template(
        meta.new(
            "Metal3DataTemplate",
            "t",
            NS,
            spec={
                "networkData": {
                    "networks": {
                        "ipv4": [
                            {
                                "id": "n",
                                "link": "eth0",
                                "fromPoolAnnotation": {"object": "baremetalhost", "annotation": "pool"},
                            }
                        ]
                    }
                }
            },
        )
    )
    machine_set(store, m3m="m", machine="mach", bmh="h", template="t", bmh_annotations={"pool": "rack-a"})
    result = dm.reconcile("m", NS)
    assert result["networkData"]["networks"][0]["ip_address"] == "10.7.0.1"
    assert result["addresses"] == {"rack-a": {"address": "10.7.0.1", "prefix": 29, "gateway": "", "dnsServers": []}}
    dm.delete("m", NS)
    assert store.list(kinds.M3_IPADDRESS, NS) == [] and store.list("IPClaim", NS) == []


BAD = [
    (
        "unknown pool",
        {"networkData": {"networks": {"ipv4": [{"id": "n", "link": "eth0", "ipAddressFromIPPool": "nope"}]}}},
        "spec.networkData.networks.ipv4[0]",
        'pool "nope" not found',
    ),
    (
        "malformed MAC",
        {
            "networkData": {
                "links": {"ethernets": [{"type": "phy", "id": "e", "macAddress": {"string": "52:54:00:zz:bb:01"}}]},
                "networks": {"ipv4": [{"id": "n", "link": "e", "ipAddressFromIPPool": "good"}]},
            }
        },
        "spec.networkData.links.ethernets[0].macAddress",
        "bad MAC address: 52:54:00:zz:bb:01",
    ),
    (
        "bond parameter colliding with a key",
        {
            "networkData": {
                "links": {
                    "bonds": [
                        {
                            "id": "bond0",
                            "bondMode": "802.3ad",
                            "bondLinks": ["enp1s0"],
                            "parameters": [{"name": "xmit_hash_policy", "value": "layer2"}],
                        }
                    ]
                },
                "networks": {"ipv4": [{"id": "n", "link": "bond0", "ipAddressFromIPPool": "good"}]},
            }
        },
        "spec.networkData.links.bonds[0].parameters",
        'illegal params "xmit_hash_policy"',
    ),
    (
        "missing host interface",
        {
            "metaData": {
                "ipAddressesFromPool": [{"key": "ip", "name": "good"}],
                "fromHostInterfaces": [{"key": "m", "interface": "enp7s0"}],
            }
        },
        "spec.metaData.fromHostInterfaces[0].interface",
        "NIC name not found enp7s0",
    ),
]


@pytest.mark.parametrize("name,spec,field,message", BAD, ids=[b[0] for b in BAD])
def test_bad_input_names_object_and_field_and_writes_nothing(dm, store, name, spec, field, message):
    dm.ipam.apply_pool(meta.new("IPPool", "good", NS, spec={"namePrefix": "g", "pools": [{"subnet": "10.0.0.0/24"}]}))
    dm.apply_template(meta.new("Metal3DataTemplate", "bad", NS, spec=spec))
    other_machine(store, 0, template="bad")
    before = snapshot(store)
    for check in (True, False):
        with pytest.raises(Invalid) as err:
            dm.reconcile("other-0", NS, check=check)
        assert (err.value.obj, err.value.field) == ("Metal3DataTemplate metal3/bad", field)
        assert message in str(err.value)
        assert snapshot(store) == before


TEMPLATE_ERRORS = [
    ({"metaData": {"fromHostInterfaces": [{"key": "k"}]}}, "spec.metaData.fromHostInterfaces[0].interface"),
    (
        {"metaData": {"fromHostInterfaces": [{"key": "k", "interface": "e", "fromBootMAC": True}]}},
        "spec.metaData.fromHostInterfaces[0].interface",
    ),
    (
        {"metaData": {"strings": [{"key": "k", "value": "a"}, {"key": "k", "value": "b"}]}},
        "spec.metaData.strings[1].key",
    ),
    ({"metaData": {"objectNames": [{"key": "k", "object": "node"}]}}, "spec.metaData.objectNames[0].object"),
    ({"metaData": {"indexes": [{"key": "k", "step": 0}]}}, "spec.metaData.indexes[0].step"),
    ({"networkData": {"networks": {"ipv4": [{"id": "n", "link": "l"}]}}}, "spec.networkData.networks.ipv4[0]"),
    (
        {"networkData": {"links": {"ethernets": [{"type": "wifi", "id": "e"}]}}},
        "spec.networkData.links.ethernets[0].type",
    ),
    (
        {"networkData": {"links": {"ethernets": [{"type": "phy", "id": "e", "mtu": 9001}]}}},
        "spec.networkData.links.ethernets[0].mtu",
    ),
    (
        {"networkData": {"links": {"ethernets": [{"type": "phy", "id": "e", "name": "0bad"}]}}},
        "spec.networkData.links.ethernets[0].name",
    ),
    (
        {"networkData": {"links": {"bonds": [{"id": "b", "bondMode": "lacp"}]}}},
        "spec.networkData.links.bonds[0].bondMode",
    ),
    (
        {"networkData": {"links": {"bonds": [{"id": "b", "bondMode": "802.3ad", "bondXmitHashPolicy": "l4"}]}}},
        "spec.networkData.links.bonds[0].bondXmitHashPolicy",
    ),
    (
        {"networkData": {"links": {"vlans": [{"id": "v", "vlanID": 5000, "vlanLink": "e"}]}}},
        "spec.networkData.links.vlans[0].vlanID",
    ),
    (
        {"networkData": {"networks": {"ipv4DHCP": [{"id": "d", "link": "l", "routes": [{"network": "::"}]}]}}},
        "spec.networkData.networks.ipv4DHCP[0].routes[0].network",
    ),
    (
        {
            "networkData": {
                "networks": {"ipv6DHCP": [{"id": "d", "link": "l", "routes": [{"network": "::", "prefix": 129}]}]}
            }
        },
        "spec.networkData.networks.ipv6DHCP[0].routes[0].prefix",
    ),
    ({"networkData": {"services": {"dns": ["8.8.8"]}}}, "spec.networkData.services.dns[0]"),
]


@pytest.mark.parametrize("spec,field", TEMPLATE_ERRORS, ids=[t[1] for t in TEMPLATE_ERRORS])
def test_template_webhook(dm, store, spec, field):
    with pytest.raises(Invalid) as err:
        dm.apply_template(meta.new("Metal3DataTemplate", "t", NS, spec=spec))
    assert (err.value.obj, err.value.field) == ("Metal3DataTemplate metal3/t", field)
    assert store.list("Metal3DataTemplate", NS) == []


def test_template_immutable_defaults_and_delete(dm, store, example):
    spec = copy.deepcopy(convert_spec := example[0]["spec"])
    changed, stored, _ = dm.apply_template(example[0])
    assert not changed  # the same template again (v1beta2 names, defaults applied) changes nothing
    assert stored["spec"]["metaData"]["ipAddressesFromPool"][0] == {
        "key": "provisioningIP",
        "name": "provisioning-pool",
        "apiGroup": "ipam.metal3.io",
        "kind": "IPPool",
    }
    changed, stored, _ = dm.apply_template(
        dict(example[0], metadata=dict(example[0]["metadata"], labels={"team": "a"}))
    )
    assert changed and stored["metadata"]["labels"] == {"team": "a"}
    spec["metaData"]["strings"][0]["value"] = "control-plane"
    for key in ("metaData", "networkData"):
        new = copy.deepcopy(convert_spec)
        new[key] = spec[key] if key == "metaData" else {"links": {}}
        with pytest.raises(Invalid, match="immutable") as err:
            dm.apply_template(meta.new("Metal3DataTemplate", "nodepool-1", NS, spec=new))
        assert err.value.field == f"spec.{key}"
    example_machine(store)
    dm.reconcile("test1-workers-7xk2p", NS)
    with pytest.raises(Invalid, match="still in use by Metal3Data nodepool-1-0"):
        dm.delete_template("nodepool-1", NS)
    dm.delete("test1-workers-7xk2p", NS)
    assert dm.delete_template("nodepool-1", NS)
    assert store.list("Metal3DataTemplate", NS) == []


def test_users_own_secret_on_the_metal3machine_wins(dm, store, example):
    m3m = example_machine(store)
    m3m["status"] = {"metaData": {"name": "my-metadata", "namespace": NS}}
    store.update_status(m3m)
    dm.reconcile("test1-workers-7xk2p", NS)
    status = store.get("Metal3Machine", "test1-workers-7xk2p", NS)["status"]
    assert status["metaData"] == {"name": "my-metadata", "namespace": NS}
    assert status["networkData"] == {"name": "test1-workers-7xk2p-networkdata", "namespace": NS}
    dm.delete("test1-workers-7xk2p", NS)
    assert store.get("Metal3Machine", "test1-workers-7xk2p", NS)["status"] == {
        "metaData": {"name": "my-metadata", "namespace": NS}
    }


def test_bmh_name_based_preallocation_gives_the_host_its_address_again(store):
    dm = DataManager(store, bmh_name_based_preallocation=True)  # as the machine flow uses it: no M3M status
    dm.ipam.apply_pool(
        meta.new(
            "IPPool",
            "prov",
            NS,
            spec={
                "namePrefix": "prov",
                "pools": [{"subnet": "172.22.0.0/24"}],
                "prefix": 24,
                "preAllocations": {"node-1-prov": "172.22.0.77"},
            },
        )
    )
    dm.apply_template(
        meta.new(
            "Metal3DataTemplate", "t", NS, spec={"metaData": {"ipAddressesFromPool": [{"key": "ip", "name": "prov"}]}}
        )
    )
    machine_set(store, m3m="first", machine="mach-1", bmh="node-1", template="t")
    check = dm.reconcile("first", NS, check=True)
    assert check["addresses"]["prov"]["address"] == "172.22.0.77"
    assert dm.reconcile("first", NS)["metaData"]["ip"] == "172.22.0.77"
    ipclaim = store.get("IPClaim", "node-1-prov", NS)
    assert ipclaim["metadata"]["labels"] == {names.DATA_NAME_LABEL: "t-0", names.POOL_NAME_LABEL: "prov"}
    assert "status" not in store.get("Metal3Machine", "first", NS)  # the machine flow's to write
    dm.delete("first", NS)
    assert store.list("IPClaim", NS) == [] and store.list(kinds.M3_IPADDRESS, NS) == []
    # the machine is replaced (upgrade): a new Metal3Machine on the same host gets the same address
    m3m = store.get("Metal3Machine", "first", NS)
    m3m["metadata"]["name"] = "second"
    for key in ("uid", "resourceVersion", "creationTimestamp", "generation"):
        m3m["metadata"].pop(key)
    m3m.pop("status", None)
    store.create(m3m)
    assert dm.reconcile("second", NS)["metaData"]["ip"] == "172.22.0.77"


def test_a_stale_index_does_not_keep_the_template_deleting(dm, store):
    """A run killed after it indexed a claim and before the claim existed: deprovisioning still removes the template."""
    spec = {"metaData": {"strings": [{"key": "k", "value": "v"}]}}
    _changed, template, _ = dm.apply_template(meta.new("Metal3DataTemplate", "stale", NS, spec=spec))
    template["metadata"]["finalizers"] = [names.METAL3_DATA_TEMPLATE_FINALIZER]
    template = store.update(template)
    template["status"] = {"indexes": {"m-killed": 0}}
    store.update_status(template)
    store.create(meta.new("Metal3DataClaim", "m-alive", NS, spec={"template": {"name": "stale"}}))
    with pytest.raises(Invalid, match="still in use by Metal3DataClaim m-alive"):
        dm.delete_template("stale", NS)
    store.delete("Metal3DataClaim", "m-alive", NS)
    assert dm.delete_template("stale", NS)
    assert [t for t in store.list("Metal3DataTemplate", NS) if meta.name(t) == "stale"] == []
