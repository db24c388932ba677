"""The webhooks that had no home: Metal3MachineTemplate, Metal3ClusterTemplate, the Metal3 IPAddress and
CAPMAAS's immutability rules, each refused before anything is written, naming the object and field."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils import objects
from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.model import kinds, meta
from ansible_collections.baremetal.capi.plugins.module_utils.webhooks import admit

NS = "wh"
IMAGE = {"url": "http://x/i.img", "checksum": "http://x/i.sha", "checksumType": "sha256", "diskFormat": "qcow2"}


def write(store, obj):
    return objects.apply(store, obj, kinds.of(obj), admit=admit)


def refused(store, obj, field, message=None):
    kind = kinds.of(obj).key
    before = [copy.deepcopy(o) for o in store.list(kind, NS)]
    with pytest.raises(Invalid) as exc:
        write(store, obj)
    assert exc.value.obj == meta.ref(obj) and exc.value.field == field, str(exc.value)
    if message is not None:
        assert exc.value.message == message
    assert store.list(kind, NS) == before  # nothing written
    return exc.value


def test_metal3_machine_template_image(store):
    good = meta.new("Metal3MachineTemplate", "t", NS, spec={"template": {"spec": {"image": IMAGE}}})
    write(store, good)
    refused(
        store, meta.new("Metal3MachineTemplate", "u", NS, spec={"template": {"spec": {}}}), "spec.template.spec.image"
    )
    bad = copy.deepcopy(good)
    bad["spec"]["template"]["spec"]["image"] = dict(IMAGE, checksum="")
    refused(store, bad, "spec.template.spec.image.checksum")
    # a custom deploy method needs no image (upstream skips the image rules)
    write(
        store,
        meta.new("Metal3MachineTemplate", "c", NS, spec={"template": {"spec": {"customDeploy": {"method": "m"}}}}),
    )


def test_metal3_cluster_template(store):
    good = meta.new(
        "Metal3ClusterTemplate",
        "t",
        NS,
        spec={"template": {"spec": {"controlPlaneEndpoint": {"host": "10.0.0.1", "port": 6443}}}},
    )
    write(store, good)
    bad = copy.deepcopy(good)
    bad["spec"]["template"]["spec"]["controlPlaneEndpoint"]["port"] = 70000
    refused(store, bad, "spec.template.spec.controlPlaneEndpoint.port")
    refused(
        store,
        meta.new("Metal3ClusterTemplate", "n", NS, spec={"template": {"spec": {}}}),
        "spec.template.spec.controlPlaneEndpoint.host",
    )


def test_metal3_cluster_template_update_checks_the_stored_object(store):
    from ansible_collections.baremetal.capi.plugins.module_utils.model import template_webhooks as tw

    old = meta.new("Metal3ClusterTemplate", "t", NS, spec={"template": {"spec": {}}})
    new = meta.new(
        "Metal3ClusterTemplate",
        "t",
        NS,
        spec={"template": {"spec": {"controlPlaneEndpoint": {"host": "h", "port": 6443}}}},
    )
    with pytest.raises(Invalid, match="the stored object"):
        tw.validate_metal3_cluster_template(new, old)


def address(name="pfx-10-0-0-1", **spec):
    base = {"address": "10.0.0.1", "pool": {"name": "p", "namespace": NS}, "claim": {"name": "c", "namespace": NS}}
    base.update(spec)
    return meta.new("IPAddress.ipam.metal3.io", name, NS, spec=base)


@pytest.mark.parametrize(
    "spec,field,message",
    [
        ({"pool": {"name": ""}}, "spec.pool.name", 'Invalid value: "": cannot be empty'),
        ({"claim": {}}, "spec.claim.name", 'Invalid value: "": cannot be empty'),
        ({"address": ""}, "spec.address", 'Invalid value: "": cannot be empty'),
        ({"address": "10.0.0.300"}, "spec.address", 'Invalid value: "10.0.0.300": is not a valid IP address'),
    ],
)
def test_ipaddress_create_rules(store, spec, field, message):
    refused(store, address(**spec), field, message)


def test_ipaddress_is_immutable(store):
    write(store, address())
    refused(store, address(address="10.0.0.2"), "spec.address", 'Invalid value: "10.0.0.2": cannot be modified')
    refused(store, address(pool={"name": "q", "namespace": NS}), "spec.pool")
    refused(store, address(claim={"name": "c", "namespace": "other"}), "spec.claim")
    write(
        store,
        meta.new("IPAddress.ipam.metal3.io", "pfx-10-0-0-1", NS, spec=address()["spec"], labels={"free": "to-change"}),
    )


def maas_machine(**spec):
    base = {"image": "ubuntu/jammy", "minCPU": 2, "minMemory": 4096}
    base.update(spec)
    return meta.new("MaasMachine", "m", NS, spec=base)


@pytest.mark.parametrize(
    "change,field,message",
    [
        (
            {"image": "ubuntu/noble"},
            "spec.image",
            "maas machine image change is not allowed, old=ubuntu/jammy, new=ubuntu/noble",
        ),
        ({"minCPU": 4}, "spec.minCPU", "maas machine min cpu count change is not allowed, old=2, new=4"),
        (
            {"minMemory": 8192},
            "spec.minMemory",
            "maas machine min memory change is not allowed, old=4096 MB, new=8192 MB",
        ),
    ],
)
def test_maas_machine_immutability(store, change, field, message):
    write(store, maas_machine())
    refused(store, maas_machine(**change), field, message)
    write(store, maas_machine(tags=["ok"]))  # other fields may change


@pytest.mark.parametrize(
    "change,field,message",
    [
        (
            {"image": "custom"},
            "spec.template.spec.image",
            "maas machine template image change is not allowed, old=ubuntu/jammy, new=custom",
        ),
        (
            {"minCPU": 1},
            "spec.template.spec.minCPU",
            "maas machine template min cpu count change is not allowed, old=2, new=1",
        ),
        (
            {"minMemory": 1},
            "spec.template.spec.minMemory",
            "maas machine template min memory change is not allowed, old=4096 MB, new=1 MB",
        ),
    ],
)
def test_maas_machine_template_immutability(store, change, field, message):
    spec = {"image": "ubuntu/jammy", "minCPU": 2, "minMemory": 4096}
    write(store, meta.new("MaasMachineTemplate", "t", NS, spec={"template": {"spec": spec}}))
    new = meta.new("MaasMachineTemplate", "t", NS, spec={"template": {"spec": dict(spec, **change)}})
    refused(store, new, field, message)


def test_maas_cluster_dns_domain_is_immutable(store):
    write(store, meta.new("MaasCluster", "c", NS, spec={"dnsDomain": "maas"}))
    refused(
        store,
        meta.new("MaasCluster", "c", NS, spec={"dnsDomain": "other"}),
        "spec.dnsDomain",
        "changing cluster DNS Domain not allowed",
    )
