"""A Metal3Machine with a data template: claim, render, host spec with both secrets, release on delete."""

from __future__ import annotations

import base64

import pytest
import yaml
from flow_world import add_machine, host_of, make_world, manager, play_bmo_available

from ansible_collections.baremetal.capi.plugins.module_utils.errors import NotFound
from ansible_collections.baremetal.capi.plugins.module_utils.metal3.data import DataManager
from ansible_collections.baremetal.capi.plugins.module_utils.metal3.ipam import IPAM
from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions, meta, names

TEMPLATE = {
    "metaData": {"strings": [{"key": "role", "value": "worker"}]},
    "networkData": {
        "links": {"ethernets": [{"type": "phy", "id": "enp1s0", "macAddress": {"fromHostInterface": "enp1s0"}}]},
        "networks": {"ipv4": [{"id": "prov", "link": "enp1s0", "ipAddressFromIPPool": "pool1"}]},
    },
}


def _data_world(store):
    make_world(store, n_hosts=2)
    IPAM(store).apply_pool(
        meta.new(
            "IPPool",
            "pool1",
            "default",
            spec={"namePrefix": "c1-prov", "pools": [{"subnet": "10.0.0.0/29"}], "prefix": 24, "gateway": "10.0.0.1"},
        )
    )
    DataManager(store).apply_template(meta.new("Metal3DataTemplate", "workers", "default", spec=TEMPLATE))
    for i in range(2):  # the hosts' inspected NICs, which the template reads
        h = store.get("BareMetalHost", f"h{i}", "default")
        h["status"]["hardware"] = {"nics": [{"name": "enp1s0", "mac": f"52:54:00:00:00:0{i}", "ip": ""}]}
        store.update_status(h)


def _payload(store, name, key):
    return yaml.safe_load(base64.b64decode(store.get("Secret", name, "default")["data"][key]).decode())


def test_data_template_flow_and_release(store):
    _data_world(store)
    add_machine(store, "w1", data_template="workers")
    mgr = manager(store)
    mgr.step("w1", "default")
    hname = host_of(store, "w1")
    assert "image" not in store.get("BareMetalHost", hname, "default")["spec"]  # with a template: after the data

    step = mgr.step("w1", "default")
    assert not step.done
    m3m = store.get("Metal3Machine", "w1", "default")
    assert m3m["status"]["metaData"] == {"name": "w1-metadata", "namespace": "default"}
    assert m3m["status"]["networkData"] == {"name": "w1-networkdata", "namespace": "default"}
    assert m3m["status"]["renderedData"] == {"name": "workers-0", "namespace": "default"}
    assert conditions.is_true(m3m, names.METAL3_DATA_READY)
    host = store.get("BareMetalHost", hname, "default")
    assert host["spec"]["metaData"] == {"name": "w1-metadata", "namespace": "default"}
    assert host["spec"]["networkData"] == {"name": "w1-networkdata", "namespace": "default"}
    md = _payload(store, "w1-metadata", "metaData")
    assert md["role"] == "worker" and md["providerid"] == f"default/{hname}/w1"
    nd = _payload(store, "w1-networkdata", "networkData")
    assert nd["networks"][0]["ip_address"] == "10.0.0.1"  # the pool's first address (subnet network + 1)
    assert store.list("IPClaim", "default")

    # delete while the host is still available (never provisioned): no wait; data released
    play_bmo_available(store, hname)
    step = mgr.delete_step("w1", "default")
    assert step.done, step.message
    for kind, name in (
        ("Secret", "w1-metadata"),
        ("Secret", "w1-networkdata"),
        ("Metal3DataClaim", "w1"),
        ("Metal3Data", "workers-0"),
    ):
        with pytest.raises(NotFound):
            store.get(kind, name, "default")
    assert store.list("IPClaim", "default") == []
    assert store.get("Metal3DataTemplate", "workers", "default")["status"].get("indexes") in (None, [])
    assert "consumerRef" not in store.get("BareMetalHost", hname, "default")["spec"]
