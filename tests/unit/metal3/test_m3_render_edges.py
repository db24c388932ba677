"""The renderer's edge rules, from CAPM3's metal3data_manager.go (getLinkMacAddress, renderMetaData's
index arithmetic, getReferencedPools) and sigs.k8s.io/yaml.Marshal (JSON first, then go-yaml)."""

from __future__ import annotations

import pytest
import yaml
from test_m3_render import BMH, DATA, M3M, MACHINE, POOLS, ctx

from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.metal3 import render

M3 = {"apiGroup": "ipam.metal3.io", "kind": "IPPool"}
TPL = {"kind": "Metal3DataTemplate", "metadata": {"name": "tpl", "namespace": "ns1"}}


def pools_of(spec, objects=None):
    return {k: (v["apiGroup"], v["kind"]) for k, v in render.referenced_pools({**TPL, "spec": spec}, objects).items()}


def eth(mac):
    return {"networkData": {"links": {"ethernets": [{"type": "phy", "id": "e0", "macAddress": mac}]}}}


# -- macAddress -----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["ethernets", "bonds", "vlans"])
def test_empty_mac_address_is_an_error(kind):
    link = {"id": "l0", "type": "phy", "macAddress": {}}
    if kind == "bonds":
        link.update(bondMode="balance-rr", bondLinks=["e0"])
    if kind == "vlans":
        link.update(vlanID=5, vlanLink="e0")
    with pytest.raises(Invalid, match="no MAC address given") as exc:
        render.render_network_data(ctx({"networkData": {"links": {kind: [link]}}}))
    assert exc.value.field == f"spec.networkData.links.{kind}[0].macAddress"


@pytest.mark.parametrize("mac", [{"string": ""}, {"string": "aa:bb:cc:dd:ee"}, {"string": "aa:bb:cc:dd:ee:0g"}])
def test_bad_mac_address_string(mac):
    with pytest.raises(Invalid, match=f"bad MAC address: {mac['string']}"):
        render.render_network_data(ctx(eth(mac)))


# -- index arithmetic -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "entry,expected",
    [
        ({"offset": 0}, "7"),  # step 0 means 1
        ({"offset": 0, "step": 0}, "7"),
        ({"offset": 5, "step": 3}, "26"),
        ({"offset": -10, "step": 1}, "-3"),
        ({"offset": (1 << 63) - 8, "step": 1}, str((1 << 63) - 1)),  # the largest Go int
    ],
)
def test_index_arithmetic(entry, expected):
    md = render.render_meta_data(ctx({"metaData": {"indexes": [{"key": "i", **entry}]}}))
    assert md["i"] == expected


@pytest.mark.parametrize("entry", [{"offset": (1 << 63) - 7, "step": 1}, {"offset": 0, "step": 1 << 62}])
def test_index_arithmetic_overflow_is_refused(entry):
    # upstream's Go int would wrap around to a negative number; refused here, naming the entry
    with pytest.raises(Invalid, match="overflows a 64-bit integer") as exc:
        render.render_meta_data(ctx({"metaData": {"indexes": [{"key": "i", **entry}]}}))
    assert exc.value.field == "spec.metaData.indexes[0]"


# -- serialisation -------------------------------------------------------------------------------


def test_bond_parameters_keep_integral_numbers():
    spec = {
        "networkData": {
            "links": {
                "bonds": [
                    {
                        "id": "b0",
                        "bondMode": "802.3ad",
                        "bondLinks": ["e0"],
                        "macAddress": {"string": "aa:bb:cc:dd:ee:00"},
                        "parameters": [
                            {"name": "miimon", "value": 100.0},
                            {"name": "updelay", "value": 12},
                            {"name": "ratio", "value": 0.5},
                            {"name": "lacp_rate", "value": "fast"},
                        ],
                    }
                ]
            }
        }
    }
    text = render.to_yaml(render.render_network_data(ctx(spec)))
    assert "bond_miimon: 100\n" in text and "bond_updelay: 12\n" in text and "bond_ratio: 0.5\n" in text
    link = yaml.safe_load(text)["links"][0]
    assert (link["bond_miimon"], link["bond_updelay"], link["bond_lacp_rate"]) == (100, 12, "fast")
    assert isinstance(link["bond_miimon"], int)


@pytest.mark.parametrize("char", ["\x7f", "\x80", "\x84", "\x86", "\x9f", "\ufffe", "\uffff"])
def test_characters_go_yaml_refuses_are_refused(char):
    with pytest.raises(Invalid, match="yaml: control characters are not allowed") as exc:
        render.render_meta_data(ctx({"metaData": {"strings": [{"key": "k", "value": f"a{char}b"}]}}))
    assert exc.value.field == "spec.metaData.k"
    with pytest.raises(Invalid, match="control characters") as exc:
        render.render_meta_data(ctx({"metaData": {"strings": [{"key": f"k{char}", "value": "v"}]}}))


@pytest.mark.parametrize("char", ["\x01", "\t", "\n", "\x1b", "\x85", "\xa0", "\u2028", "\ufeff"])
def test_characters_json_escapes_round_trip(char):
    # C0 controls are escaped by JSON and read back by go-yaml; NEL, NBSP, LS, BOM are allowed raw
    md = render.render_meta_data(ctx({"metaData": {"strings": [{"key": "k", "value": f"a{char}b"}]}}))
    assert yaml.safe_load(render.to_yaml(md))["k"] == f"a{char}b"


# -- referenced pools ---------------------------------------------------------------------------------


def test_network_with_annotation_and_pool_claims_both():
    spec = {
        "networkData": {
            "networks": {
                "ipv4": [
                    {
                        "id": "n",
                        "link": "l",
                        "fromPoolAnnotation": {"object": "metal3machine", "annotation": "pool"},
                        "ipAddressFromIPPool": "pool-a",
                    }
                ],
                "ipv6": [
                    {
                        "id": "n6",
                        "link": "l",
                        "fromPoolAnnotation": {"object": "metal3machine", "annotation": "pool"},
                        "fromPoolRef": {"name": "ext", "apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool"},
                        "ipAddressFromIPPool": "unused",
                    }
                ],
            }
        }
    }
    objects = {"metal3machine": M3M, "machine": MACHINE, "baremetalhost": BMH}
    # upstream's else-if chain follows the annotation's success: both sources are claimed
    assert pools_of(spec, objects) == {
        "pool-b": tuple(M3.values()),
        "pool-a": tuple(M3.values()),
        "ext": ("ipam.cluster.x-k8s.io", "InClusterIPPool"),
    }
    # without the objects (upstream's release path) the annotation is not resolved
    assert pools_of(spec) == {"pool-a": tuple(M3.values()), "ext": ("ipam.cluster.x-k8s.io", "InClusterIPPool")}
    # the renderer reads the annotation's pool
    c = render.RenderContext({**TPL, "spec": spec}, DATA, M3M, MACHINE, BMH, {**POOLS, "ext": POOLS["pool-6"]})
    assert render.render_network_data(c)["networks"][0]["ip_address"] == POOLS["pool-b"]["address"]


def test_gateway_string_still_claims_its_pool():
    spec = {
        "networkData": {
            "networks": {
                "ipv4": [
                    {
                        "id": "n",
                        "link": "l",
                        "ipAddressFromIPPool": "pool-a",
                        "routes": [
                            {
                                "network": "0.0.0.0",
                                "prefix": 0,
                                "gateway": {"string": "10.0.0.254", "fromIPPool": "pool-b"},
                                "services": {"dnsFromIPPool": "pool-nogw"},
                            }
                        ],
                    }
                ]
            }
        }
    }
    assert set(pools_of(spec)) == {"pool-a", "pool-b", "pool-nogw"}
    nd = render.render_network_data(ctx(spec))
    assert nd["networks"][0]["routes"][0]["gateway"] == "10.0.0.254"


def test_dhcp_route_gateways():
    routes = [
        {"network": "10.9.0.0", "prefix": 16, "gateway": {"fromPoolRef": {"name": "pool-a"}, "fromIPPool": "x"}},
        {"network": "10.8.0.0", "prefix": 16, "gateway": {"fromIPPool": "pool-b"}},
        {
            "network": "10.7.0.0",
            "prefix": 16,
            "gateway": {"fromPoolAnnotation": {"object": "metal3machine", "annotation": "pool"}},
        },
    ]
    spec = {"networkData": {"networks": {"ipv4DHCP": [{"id": "d", "link": "l", "routes": routes}]}}}
    objects = {"metal3machine": M3M, "machine": MACHINE, "baremetalhost": BMH}
    # fromPoolRef wins over fromIPPool; the annotation's pool ("pool-b" here) is claimed too: upstream
    # never claims it on DHCP/SLAAC routes and then fails to render them (a fix, see docs)
    assert set(pools_of(spec, objects)) == {"pool-a", "pool-b"}
    spec["networkData"]["networks"]["ipv4DHCP"][0]["routes"] = routes[:1]
    assert set(pools_of(spec)) == {"pool-a"}
    gws = [
        r["gateway"]
        for r in render.render_network_data(
            ctx({"networkData": {"networks": {"ipv4DHCP": [{"id": "d", "link": "l", "routes": routes}]}}})
        )["networks"][0]["routes"]
    ]
    assert gws == ["10.0.0.1", "10.1.0.1", "10.1.0.1"]


def test_metadata_from_pool_group_and_kind():
    spec = {
        "metaData": {
            "ipAddressesFromPool": [{"key": "a", "name": "p1"}],
            "prefixesFromPool": [{"key": "b", "name": "p2", "apiGroup": "ipam.cluster.x-k8s.io", "kind": "X"}],
            "gatewaysFromPool": [{"key": "c", "name": "p3", "apiGroup": "ipam.metal3.io"}],
            "dnsServersFromPool": [{"key": "d", "name": "p4", "kind": "Other"}],
        }
    }
    assert pools_of(spec) == {
        "p1": ("ipam.metal3.io", "IPPool"),
        "p2": ("ipam.cluster.x-k8s.io", "X"),
        "p3": ("ipam.metal3.io", "IPPool"),
        "p4": ("ipam.metal3.io", "Other"),  # a group defaults on its own: not a Metal3 pool
    }
    assert not render.is_metal3_pool(render.referenced_pools({**TPL, "spec": spec})["p4"])


def test_same_name_different_types_upstream_words():
    spec = {
        "metaData": {
            "ipAddressesFromPool": [{"key": "a", "name": "p"}],
            "gatewaysFromPool": [{"key": "b", "name": "p", "kind": "Other"}],
        }
    }
    with pytest.raises(Invalid) as exc:
        pools_of(spec)
    assert exc.value.message == "multiple references with the same name but different resource types"
    assert exc.value.field == "spec.metaData.gatewaysFromPool[0]"
