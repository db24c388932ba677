"""The five modules run in-process as Ansible runs them, against a real sqlite store."""

from __future__ import annotations

import copy

from m3_objects import example_docs, example_json, machine_set

from ansible_collections.baremetal.capi.plugins.module_utils.model import kinds
from ansible_collections.baremetal.capi.plugins.modules import (
    ipclaim,
    ippool,
    ippool_info,
    metal3_data,
    metal3_data_template,
)

NS = "metal3"
POOL = dict(
    name="p",
    namespace=NS,
    spec={
        "namePrefix": "p",
        "prefix": 24,
        "gateway": "10.0.0.254",
        "dnsServers": ["10.0.0.53"],
        "pools": [{"start": "10.0.0.1", "end": "10.0.0.3"}],
    },
)


def test_ippool_present_idempotent_check_and_absent(run, store):
    check = run(ippool, POOL, check=True)
    assert check["changed"] and store.list("IPPool", NS) == []
    first = run(ippool, POOL)
    assert first["changed"] and first["object"]["metadata"]["finalizers"] == ["ippool.ipam.metal3.io"]
    assert run(ippool, POOL)["changed"] is False
    bad = copy.deepcopy(POOL)
    bad["spec"]["namePrefix"] = "q"
    failed = run(ippool, bad)
    assert failed["failed"]
    assert failed["msg"] == 'IPPool metal3/p: spec.namePrefix: Invalid value: "q": cannot be modified'
    gone = run(ippool, dict(name="p", namespace=NS, state="absent"))
    assert gone["changed"] and store.list("IPPool", NS) == []
    assert run(ippool, dict(name="p", namespace=NS, state="absent"))["changed"] is False


def test_ippool_reports_the_claims_it_answers_and_releases(run, store):
    # a Cluster API claim of the pool: answering it, and letting it go once deleted, are this task's changes
    run(ippool, POOL)
    claim_kind = f"IPAddressClaim.{kinds.CAPI_IPAM_GROUP}"
    ref = {"apiGroup": "ipam.metal3.io", "kind": "IPPool", "name": "p"}
    store.create({"apiVersion": "ipam.cluster.x-k8s.io/v1beta2", "kind": "IPAddressClaim",
                  "metadata": {"name": "vip", "namespace": NS}, "spec": {"poolRef": ref}})  # fmt: skip
    assert run(ippool, POOL, check=True)["changed"]
    assert not store.get(claim_kind, "vip", NS).get("status")
    answered = run(ippool, POOL)
    assert answered["changed"] and answered["object"]["status"]["indexes"] == {"vip": "10.0.0.1"}
    assert store.get(claim_kind, "vip", NS)["status"]["addressRef"] == {"name": "p-10-0-0-1"}
    assert run(ippool, POOL)["changed"] is False
    assert run(ippool, POOL, check=True)["changed"] is False

    store.delete(claim_kind, "vip", NS)  # IPAM's finalizer keeps it until the pool lets it go
    assert run(ippool, POOL, check=True)["changed"]
    assert store.list(kinds.CAPI_IPADDRESS, NS)
    released = run(ippool, POOL)
    assert released["changed"] and "indexes" not in released["object"]["status"]
    assert store.list(claim_kind, NS) == [] and store.list(kinds.CAPI_IPADDRESS, NS) == []
    assert run(ippool, POOL)["changed"] is False


def test_ippool_duplicate_preallocation_fails_before_writing(run, store):
    spec = dict(POOL["spec"], preAllocations={"a": "10.0.0.2", "b": "10.0.0.2"})
    result = run(ippool, dict(POOL, spec=spec))
    assert result["failed"]
    assert result["msg"] == (
        'IPPool metal3/p: spec.preAllocations.b: Invalid value: "10.0.0.2": '
        'IP address is already pre-allocated to claim "a"'
    )
    assert store.list("IPPool", NS) == []


def test_ipclaim_returns_address_and_retries_after_exhaustion(run, store):
    run(ippool, POOL)
    preview = run(ipclaim, dict(name="c0", namespace=NS, pool="p"), check=True)
    assert preview["changed"] and preview["address"] == "10.0.0.1" and store.list("IPClaim", NS) == []
    got = [run(ipclaim, dict(name=f"c{i}", namespace=NS, pool="p")) for i in range(3)]
    assert [(g["address"], g["prefix"], g["gateway"], g["dnsServers"]) for g in got] == [
        (f"10.0.0.{i}", 24, "10.0.0.254", ["10.0.0.53"]) for i in (1, 2, 3)
    ]
    assert run(ipclaim, dict(name="c1", namespace=NS, pool="p"))["changed"] is False
    full = run(ipclaim, dict(name="c3", namespace=NS, pool="p"))
    assert full["failed"] and full["msg"] == "IPClaim metal3/c3: Exhausted IP Pools"
    info = run(ippool_info, dict(name="p", namespace=NS))
    assert info["changed"] is False
    assert info["pools"][0]["allocations"] == {"c0": "10.0.0.1", "c1": "10.0.0.2", "c2": "10.0.0.3"}
    assert (info["pools"][0]["capacity"], info["pools"][0]["free"]) == (3, 0)
    released = run(ipclaim, dict(name="c1", namespace=NS, state="absent"))
    assert released["changed"]
    retry = run(ipclaim, dict(name="c3", namespace=NS, pool="p"))
    assert retry["changed"] and retry["address"] == "10.0.0.2"
    asked = run(ipclaim, dict(name="c9", namespace=NS, pool="p", ip_address="10.0.0.9"))
    assert asked["failed"] and asked["msg"] == "IPClaim metal3/c9: Exhausted IP Pools"


def test_ipclaim_unknown_pool(run, store):
    result = run(ipclaim, dict(name="c", namespace=NS, pool="nope"))
    assert result["failed"] and result["msg"] == 'IPClaim metal3/c: spec.pool.name: pool "nope" not found'
    assert store.list("IPClaim", NS) == []


def test_template_and_data_modules(run, store):
    docs = example_docs()
    for pool in docs[1:]:
        assert run(ippool, dict(name=pool["metadata"]["name"], namespace=NS, spec=pool["spec"]))["changed"]
    tpl = dict(name="nodepool-1", namespace=NS, spec=docs[0]["spec"])
    assert run(metal3_data_template, tpl, check=True)["changed"] and store.list("Metal3DataTemplate", NS) == []
    assert run(metal3_data_template, tpl)["changed"]
    assert run(metal3_data_template, tpl)["changed"] is False
    changed_spec = copy.deepcopy(docs[0]["spec"])
    changed_spec["metaData"]["strings"][0]["value"] = "infra"
    refused = run(metal3_data_template, dict(tpl, spec=changed_spec))
    assert refused["failed"] and refused["msg"].startswith(
        "Metal3DataTemplate metal3/nodepool-1: spec.metaData: metaData is immutable"
    )

    machine_set(
        store,
        bmh_labels={"example.com/rack": "r12"},
        bmh_annotations={"example.com/ext-mac": "52:54:00:aa:bb:04"},
        machine_annotations={"example.com/site": "dc-east"},
    )
    args = dict(metal3machine="test1-workers-7xk2p", namespace=NS)
    before = {k: len(store.list(k, NS)) for k in ("Metal3DataClaim", "Metal3Data", "IPClaim", "Secret")}
    preview = run(metal3_data, args, check=True)
    assert {k: len(store.list(k, NS)) for k in before} == before
    expected_md = dict(example_json("meta_data.capm3-secret.example.json"), node_index="node-10-x")
    assert preview["changed"] and preview["meta_data"] == expected_md
    assert preview["network_data"] == example_json("network_data.example.json")
    assert preview["addresses"]["baremetalv6-pool"]["address"] == "2001:db8:0:1::20"
    done = run(metal3_data, args, diff=True)
    assert done["diff"]["before"] == {"metaData": None, "networkData": None}
    assert done["diff"]["after"] == {"metaData": done["meta_data"], "networkData": done["network_data"]}
    assert done["changed"] and done["data"] == "nodepool-1-0" and done["index"] == 0
    assert (done["meta_data"], done["network_data"]) == (preview["meta_data"], preview["network_data"])
    assert done["secrets"] == {
        "metaData": "test1-workers-7xk2p-metadata",
        "networkData": "test1-workers-7xk2p-networkdata",
    }
    assert store.get("Metal3Machine", "test1-workers-7xk2p", NS)["status"]["renderedData"] == {
        "name": "nodepool-1-0",
        "namespace": NS,
    }
    assert run(metal3_data, args)["changed"] is False
    gone = run(metal3_data, dict(args, state="absent"))
    assert gone["changed"] and store.list("Secret", NS) == [] and store.list(kinds.M3_IPADDRESS, NS) == []
    assert run(metal3_data, dict(args, state="absent"))["changed"] is False
    assert run(metal3_data_template, dict(name="nodepool-1", namespace=NS, state="absent"))["changed"]


def test_metal3_data_bad_input_message(run, store):
    run(ippool, POOL)
    spec = {
        "networkData": {
            "links": {"ethernets": [{"type": "phy", "id": "e", "macAddress": {"fromHostInterface": "enp9s0"}}]},
            "networks": {"ipv4": [{"id": "n", "link": "e", "ipAddressFromIPPool": "p"}]},
        }
    }
    run(metal3_data_template, dict(name="nodepool-1", namespace=NS, spec=spec))
    machine_set(store)
    result = run(metal3_data, dict(metal3machine="test1-workers-7xk2p", namespace=NS))
    assert result["failed"]
    assert result["msg"] == (
        "Metal3DataTemplate metal3/nodepool-1: "
        "spec.networkData.links.ethernets[0].macAddress.fromHostInterface: "
        "NIC name not found enp9s0 on BareMetalHost metal3/node-1"
    )
    assert store.list("Metal3DataClaim", NS) == [] and store.list("IPClaim", NS) == []
