"""v1beta1 -> v1beta2 conversion on input."""

from __future__ import annotations

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.model import convert

V1 = "infrastructure.cluster.x-k8s.io/v1beta1"
V2 = "infrastructure.cluster.x-k8s.io/v1beta2"


def obj(kind, spec, status=None, version=V1):
    out = {"apiVersion": version, "kind": kind, "metadata": {"name": "x", "namespace": "n"}, "spec": spec}
    if status is not None:
        out["status"] = status
    return out


CASES = [
    (
        "data template pool names",
        obj(
            "Metal3DataTemplate",
            {
                "templateReference": "old",
                "metaData": {
                    "ipAddressesFromIPPool": [{"key": "a", "name": "p"}],
                    "prefixesFromIPPool": [{"key": "b", "name": "p"}],
                    "gatewaysFromIPPool": [{"key": "c", "name": "p"}],
                    "dnsServersFromIPPool": [{"key": "d", "name": "p"}],
                },
            },
        ),
        obj(
            "Metal3DataTemplate",
            {
                "metaData": {
                    "ipAddressesFromPool": [{"key": "a", "name": "p"}],
                    "prefixesFromPool": [{"key": "b", "name": "p"}],
                    "gatewaysFromPool": [{"key": "c", "name": "p"}],
                    "dnsServersFromPool": [{"key": "d", "name": "p"}],
                }
            },
            version=V2,
        ),
    ),
    (
        "bond parameters map to list",
        obj(
            "Metal3DataTemplate",
            {"networkData": {"links": {"bonds": [{"id": "b", "parameters": {"miimon": 100, "arp_interval": "200"}}]}}},
        ),
        obj(
            "Metal3DataTemplate",
            {
                "networkData": {
                    "links": {
                        "bonds": [
                            {
                                "id": "b",
                                "parameters": [
                                    {"name": "arp_interval", "value": "200"},
                                    {"name": "miimon", "value": 100},
                                ],
                            }
                        ]
                    }
                }
            },
            version=V2,
        ),
    ),
    (
        "new names win over old ones",
        obj(
            "Metal3DataTemplate",
            {
                "metaData": {
                    "ipAddressesFromIPPool": [{"key": "old", "name": "p"}],
                    "ipAddressesFromPool": [{"key": "new", "name": "p"}],
                }
            },
            version=V2,
        ),
        obj("Metal3DataTemplate", {"metaData": {"ipAddressesFromPool": [{"key": "new", "name": "p"}]}}, version=V2),
    ),
    (
        "metal3machine image format and ready",
        obj("Metal3Machine", {"image": {"url": "http://i", "format": "qcow2"}}, {"ready": True}),
        obj(
            "Metal3Machine",
            {"image": {"url": "http://i", "diskFormat": "qcow2"}},
            {"initialization": {"provisioned": True}},
            version=V2,
        ),
    ),
    (
        "machine template image format",
        obj("Metal3MachineTemplate", {"template": {"spec": {"image": {"format": "raw"}}}}),
        obj("Metal3MachineTemplate", {"template": {"spec": {"image": {"diskFormat": "raw"}}}}, version=V2),
    ),
    (
        "cluster noCloudProvider",
        obj("Metal3Cluster", {"noCloudProvider": True}),
        obj("Metal3Cluster", {"cloudProviderEnabled": False}, version=V2),
    ),
    (
        "cluster template noCloudProvider false",
        obj("Metal3ClusterTemplate", {"template": {"spec": {"noCloudProvider": False}}}),
        obj("Metal3ClusterTemplate", {"template": {"spec": {"cloudProviderEnabled": True}}}, version=V2),
    ),
    (
        "remediation timeout duration",
        obj("Metal3Remediation", {"strategy": {"type": "Reboot", "timeout": "5m30s"}}),
        obj("Metal3Remediation", {"strategy": {"type": "Reboot", "timeoutSeconds": 330}}, version=V2),
    ),
    (
        "remediation template timeout",
        obj("Metal3RemediationTemplate", {"template": {"spec": {"strategy": {"timeout": "1h"}}}}),
        obj("Metal3RemediationTemplate", {"template": {"spec": {"strategy": {"timeoutSeconds": 3600}}}}, version=V2),
    ),
    (
        "metal3data templateReference dropped",
        obj("Metal3Data", {"templateReference": "t", "index": 1}),
        obj("Metal3Data", {"index": 1}, version=V2),
    ),
]


@pytest.mark.parametrize("name,given,expected", CASES, ids=[c[0] for c in CASES])
def test_to_current(name, given, expected):
    assert convert.to_current(given) == expected


def test_other_kinds_untouched_and_input_not_mutated():
    ippool = {"apiVersion": "ipam.metal3.io/v1alpha1", "kind": "IPPool", "metadata": {"name": "p"}, "spec": {"x": 1}}
    assert convert.to_current(ippool) == ippool
    given = obj("Metal3Machine", {"image": {"format": "raw"}})
    convert.to_current(given)
    assert given["spec"]["image"] == {"format": "raw"}


@pytest.mark.parametrize("value,seconds", [("600s", 600), ("10m", 600), ("1h30m", 5400), (90, 90), ("1500ms", 1)])
def test_durations(value, seconds):
    assert convert.duration_seconds(value, "w", "f") == seconds


def test_bad_duration_names_the_field():
    with pytest.raises(Invalid) as err:
        convert.to_current(obj("Metal3Remediation", {"strategy": {"timeout": "ten minutes"}}))
    assert err.value.field == "spec.strategy.timeout"
