"""metaData / networkData rendering, source by source and element by element (exact data, compared parsed)."""

from __future__ import annotations

import copy

import pytest
import yaml
from m3_objects import example_docs, example_json

from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.metal3 import render
from ansible_collections.baremetal.capi.plugins.module_utils.model import convert

M3M = {
    "metadata": {
        "name": "m3m-a",
        "namespace": "ns1",
        "labels": {"l": "m3m-label"},
        "annotations": {"a": "m3m-annotation", "pool": "pool-b", "mac": "aa:bb:cc:dd:ee:03"},
    }
}
MACHINE = {
    "metadata": {
        "name": "machine-a",
        "namespace": "ns1",
        "labels": {"l": "machine-label"},
        "annotations": {"a": "machine-annotation"},
    }
}
BMH = {
    "metadata": {
        "name": "host-a",
        "namespace": "ns1",
        "labels": {"l": "bmh-label"},
        "annotations": {"a": "bmh-annotation", "mac": "AA-BB-CC-DD-EE-04", "bad": "aa:bb:cc"},
    },
    "spec": {"bootMACAddress": "aa:bb:cc:dd:ee:00"},
    "status": {
        "hardware": {
            "nics": [{"name": "eth0", "mac": "aa:bb:cc:dd:ee:00"}, {"name": "eth1", "mac": "aa:bb:cc:dd:ee:01"}]
        }
    },
}
DATA = {"metadata": {"name": "tpl-7", "namespace": "ns1"}, "spec": {"index": 7}}
POOLS = {
    "pool-a": {"address": "10.0.0.5", "prefix": 24, "gateway": "10.0.0.1", "dnsServers": ["10.0.0.53"]},
    "pool-b": {"address": "10.1.0.5", "prefix": 16, "gateway": "10.1.0.1", "dnsServers": ["10.1.0.53", "10.1.0.54"]},
    "pool-6": {"address": "fd00::5", "prefix": 64, "gateway": "fd00::1", "dnsServers": ["fd00::53"]},
    "pool-nogw": {"address": "10.2.0.5", "prefix": 0, "gateway": "", "dnsServers": []},
}
PROVIDERID = {"providerid": "ns1/host-a/m3m-a"}


def ctx(spec, objects=None):
    template = {"kind": "Metal3DataTemplate", "metadata": {"name": "tpl", "namespace": "ns1"}, "spec": spec}
    m3m, machine, bmh = objects or (M3M, MACHINE, BMH)
    return render.RenderContext(template, DATA, m3m, machine, bmh, POOLS)


META_CASES = [
    ("strings", {"strings": [{"key": "k", "value": "v"}, {"key": "e", "value": ""}]}, {"k": "v", "e": ""}),
    (
        "objectNames",
        {
            "objectNames": [
                {"key": "a", "object": "machine"},
                {"key": "b", "object": "metal3machine"},
                {"key": "c", "object": "BareMetalHost"},
            ]
        },
        {"a": "machine-a", "b": "m3m-a", "c": "host-a"},
    ),
    ("indexes default step", {"indexes": [{"key": "i", "offset": 0}]}, {"i": "7"}),
    (
        "indexes offset step prefix suffix",
        {"indexes": [{"key": "i", "offset": 10, "step": 3, "prefix": "n-", "suffix": ".x"}]},
        {"i": "n-31.x"},
    ),
    ("namespaces", {"namespaces": [{"key": "ns"}]}, {"ns": "ns1"}),
    (
        "fromLabels",
        {
            "fromLabels": [
                {"key": "a", "object": "machine", "label": "l"},
                {"key": "b", "object": "metal3machine", "label": "l"},
                {"key": "c", "object": "baremetalhost", "label": "l"},
                {"key": "d", "object": "baremetalhost", "label": "missing"},
            ]
        },
        {"a": "machine-label", "b": "m3m-label", "c": "bmh-label", "d": ""},
    ),
    (
        "fromAnnotations",
        {
            "fromAnnotations": [
                {"key": "a", "object": "machine", "annotation": "a"},
                {"key": "b", "object": "metal3machine", "annotation": "a"},
                {"key": "c", "object": "baremetalhost", "annotation": "a"},
                {"key": "d", "object": "machine", "annotation": "missing"},
            ]
        },
        {"a": "machine-annotation", "b": "m3m-annotation", "c": "bmh-annotation", "d": ""},
    ),
    (
        "fromHostInterfaces and fromBootMAC",
        {"fromHostInterfaces": [{"key": "m1", "interface": "eth1"}, {"key": "boot", "fromBootMAC": True}]},
        {"m1": "aa:bb:cc:dd:ee:01", "boot": "aa:bb:cc:dd:ee:00"},
    ),
    (
        "ipAddressesFromPool",
        {"ipAddressesFromPool": [{"key": "ip", "name": "pool-a"}, {"key": "ip6", "name": "pool-6"}]},
        {"ip": "10.0.0.5", "ip6": "fd00::5"},
    ),
    (
        "prefixesFromPool",
        {"prefixesFromPool": [{"key": "p", "name": "pool-b"}, {"key": "z", "name": "pool-nogw"}]},
        {"p": "16", "z": "0"},
    ),
    (
        "gatewaysFromPool",
        {"gatewaysFromPool": [{"key": "g", "name": "pool-a"}, {"key": "n", "name": "pool-nogw"}]},
        {"g": "10.0.0.1", "n": ""},
    ),
    ("dnsServersFromPool renders no key", {"dnsServersFromPool": [{"key": "dns", "name": "pool-a"}]}, {}),
    (
        "strings win over other sources",
        {"objectNames": [{"key": "k", "object": "machine"}], "strings": [{"key": "k", "value": "from-string"}]},
        {"k": "from-string"},
    ),
    ("providerid is written last", {"strings": [{"key": "providerid", "value": "mine"}]}, {}),
    ("empty metaData", {}, {}),
]


@pytest.mark.parametrize("name,md,expected", META_CASES, ids=[c[0] for c in META_CASES])
def test_meta_data_sources(name, md, expected):
    assert render.render_meta_data(ctx({"metaData": md})) == dict(expected, **PROVIDERID)


def test_no_meta_data_no_payload():
    assert render.render_meta_data(ctx({"networkData": {}})) is None
    assert render.render_network_data(ctx({"metaData": {}})) is None


ETH = {"type": "phy", "id": "eth0", "mtu": 1500, "macAddress": {"fromHostInterface": "eth0"}}

LINK_CASES = [
    (
        "ethernet from host interface",
        {"ethernets": [ETH]},
        [{"type": "phy", "id": "eth0", "mtu": 1500, "ethernet_mac_address": "aa:bb:cc:dd:ee:00"}],
    ),
    (
        "ethernet every type, mtu default, name",
        {
            "ethernets": [
                {
                    "type": t,
                    "id": f"if{i}",
                    "macAddress": {"string": "aa:bb:cc:dd:ee:0f"},
                    **({"name": "nic0"} if i else {}),
                }
                for i, t in enumerate(("bridge", "dvs", "hw_veb", "hyperv", "ovs", "tap", "vhostuser", "vif", "phy"))
            ]
        },
        [
            {
                "type": t,
                "id": f"if{i}",
                "mtu": 1500,
                "ethernet_mac_address": "aa:bb:cc:dd:ee:0f",
                **({"name": "nic0"} if i else {}),
            }
            for i, t in enumerate(("bridge", "dvs", "hw_veb", "hyperv", "ovs", "tap", "vhostuser", "vif", "phy"))
        ],
    ),
    (
        "mac from annotation, dashes allowed",
        {
            "ethernets": [
                {
                    "type": "phy",
                    "id": "e",
                    "mtu": 9000,
                    "macAddress": {"fromAnnotation": {"object": "baremetalhost", "annotation": "mac"}},
                },
                {
                    "type": "phy",
                    "id": "f",
                    "mtu": 9000,
                    "macAddress": {"fromAnnotation": {"object": "metal3machine", "annotation": "mac"}},
                },
            ]
        },
        [
            {"type": "phy", "id": "e", "mtu": 9000, "ethernet_mac_address": "AA-BB-CC-DD-EE-04"},
            {"type": "phy", "id": "f", "mtu": 9000, "ethernet_mac_address": "aa:bb:cc:dd:ee:03"},
        ],
    ),
    (
        "no macAddress: key omitted",
        {"ethernets": [{"type": "phy", "id": "e", "mtu": 1500}]},
        [{"type": "phy", "id": "e", "mtu": 1500}],
    ),
    (
        "bond with parameters, empty xmit policy",
        {
            "bonds": [
                {
                    "id": "bond0",
                    "bondMode": "active-backup",
                    "bondLinks": ["eth0", "eth1"],
                    "mtu": 1500,
                    "macAddress": {"string": "aa:bb:cc:dd:ee:00"},
                    "parameters": [
                        {"name": "miimon", "value": 100},
                        {"name": "primary", "value": "eth0"},
                        {"name": "arp_ip_target", "value": ["10.0.0.1", "10.0.0.2"]},
                    ],
                }
            ]
        },
        [
            {
                "type": "bond",
                "id": "bond0",
                "mtu": 1500,
                "bond_mode": "active-backup",
                "bond_xmit_hash_policy": "",
                "bond_links": ["eth0", "eth1"],
                "ethernet_mac_address": "aa:bb:cc:dd:ee:00",
                "bond_miimon": 100,
                "bond_primary": "eth0",
                "bond_arp_ip_target": ["10.0.0.1", "10.0.0.2"],
            }
        ],
    ),
    (
        "bond every mode with xmit policy and name",
        {
            "bonds": [
                {
                    "id": f"b{i}",
                    "name": f"bond{i}",
                    "bondMode": m,
                    "bondXmitHashPolicy": "layer2+3",
                    "bondLinks": ["eth0"],
                }
                for i, m in enumerate(
                    ("balance-rr", "active-backup", "balance-xor", "broadcast", "balance-tlb", "balance-alb", "802.3ad")
                )
            ]
        },
        [
            {
                "type": "bond",
                "id": f"b{i}",
                "name": f"bond{i}",
                "mtu": 1500,
                "bond_mode": m,
                "bond_xmit_hash_policy": "layer2+3",
                "bond_links": ["eth0"],
            }
            for i, m in enumerate(
                ("balance-rr", "active-backup", "balance-xor", "broadcast", "balance-tlb", "balance-alb", "802.3ad")
            )
        ],
    ),
    (
        "vlan",
        {
            "vlans": [
                {
                    "id": "vlan5",
                    "vlanID": 5,
                    "vlanLink": "bond0",
                    "mtu": 1400,
                    "name": "v5",
                    "macAddress": {"fromHostInterface": "eth1"},
                }
            ]
        },
        [
            {
                "type": "vlan",
                "id": "vlan5",
                "mtu": 1400,
                "vlan_link": "bond0",
                "vlan_id": 5,
                "name": "v5",
                "vlan_mac_address": "aa:bb:cc:dd:ee:01",
            }
        ],
    ),
    (
        "order: bonds, ethernets, vlans",
        {
            "vlans": [{"id": "v", "vlanID": 1, "vlanLink": "e"}],
            "ethernets": [{"type": "phy", "id": "e"}],
            "bonds": [{"id": "b", "bondMode": "broadcast", "bondLinks": ["e"]}],
        },
        [
            {
                "type": "bond",
                "id": "b",
                "mtu": 1500,
                "bond_mode": "broadcast",
                "bond_xmit_hash_policy": "",
                "bond_links": ["e"],
            },
            {"type": "phy", "id": "e", "mtu": 1500},
            {"type": "vlan", "id": "v", "mtu": 1500, "vlan_link": "e", "vlan_id": 1},
        ],
    ),
]


@pytest.mark.parametrize("name,links,expected", LINK_CASES, ids=[c[0] for c in LINK_CASES])
def test_links(name, links, expected):
    assert render.render_network_data(ctx({"networkData": {"links": links}}))["links"] == expected


def route(network, netmask, gateway, services=()):
    return {"network": network, "netmask": netmask, "gateway": gateway, "services": list(services)}


DNS = [{"type": "dns", "address": a} for a in ("1.1.1.1", "10.1.0.53", "10.1.0.54")]

NETWORK_CASES = [
    (
        "ipv4 from name, route via pool gateway and dns",
        {
            "ipv4": [
                {
                    "id": "n",
                    "link": "eth0",
                    "ipAddressFromIPPool": "pool-a",
                    "routes": [
                        {
                            "network": "0.0.0.0",
                            "gateway": {"fromIPPool": "pool-a"},
                            "services": {"dns": ["1.1.1.1"], "dnsFromIPPool": "pool-b"},
                        }
                    ],
                }
            ]
        },
        [
            {
                "type": "ipv4",
                "id": "n",
                "link": "eth0",
                "ip_address": "10.0.0.5",
                "netmask": "255.255.255.0",
                "routes": [route("0.0.0.0", "0.0.0.0", "10.0.0.1", DNS)],
            }
        ],
    ),
    (
        "ipv4 fromPoolRef wins over the name",
        {"ipv4": [{"id": "n", "link": "eth0", "ipAddressFromIPPool": "pool-a", "fromPoolRef": {"name": "pool-b"}}]},
        [{"type": "ipv4", "id": "n", "link": "eth0", "ip_address": "10.1.0.5", "netmask": "255.255.0.0", "routes": []}],
    ),
    (
        "ipv4 fromPoolAnnotation wins over both",
        {
            "ipv4": [
                {
                    "id": "n",
                    "link": "eth0",
                    "ipAddressFromIPPool": "pool-a",
                    "fromPoolRef": {"name": "pool-a"},
                    "fromPoolAnnotation": {"object": "metal3machine", "annotation": "pool"},
                }
            ]
        },
        [{"type": "ipv4", "id": "n", "link": "eth0", "ip_address": "10.1.0.5", "netmask": "255.255.0.0", "routes": []}],
    ),
    (
        "ipv6 netmask text and route",
        {
            "ipv6": [
                {
                    "id": "n6",
                    "link": "eth0",
                    "ipAddressFromIPPool": "pool-6",
                    "routes": [
                        {"network": "::", "prefix": 0, "gateway": {"fromPoolRef": {"name": "pool-6"}}},
                        {
                            "network": "fd01::",
                            "prefix": 48,
                            "gateway": {"string": "fd00::fe"},
                            "services": {"dns": ["fd00::99"], "dnsFromIPPool": "pool-6"},
                        },
                    ],
                }
            ]
        },
        [
            {
                "type": "ipv6",
                "id": "n6",
                "link": "eth0",
                "ip_address": "fd00::5",
                "netmask": "ffff:ffff:ffff:ffff::",
                "routes": [
                    route("::", "::", "fd00::1"),
                    route(
                        "fd01::",
                        "ffff:ffff:ffff::",
                        "fd00::fe",
                        [{"type": "dns", "address": "fd00::99"}, {"type": "dns", "address": "fd00::53"}],
                    ),
                ],
            }
        ],
    ),
    (
        "gateway precedence: string, annotation, ref, name",
        {
            "ipv4DHCP": [
                {
                    "id": "d",
                    "link": "eth0",
                    "routes": [
                        {
                            "network": "10.9.0.0",
                            "prefix": 16,
                            "gateway": {"string": "10.9.0.1", "fromIPPool": "pool-a"},
                        },
                        {
                            "network": "10.9.0.0",
                            "prefix": 16,
                            "gateway": {
                                "fromPoolAnnotation": {"object": "metal3machine", "annotation": "pool"},
                                "fromPoolRef": {"name": "pool-a"},
                            },
                        },
                        {
                            "network": "10.9.0.0",
                            "prefix": 16,
                            "gateway": {"fromPoolRef": {"name": "pool-b"}, "fromIPPool": "pool-a"},
                        },
                        {"network": "10.9.0.0", "prefix": 16, "gateway": {"fromIPPool": "pool-nogw"}},
                        {"network": "10.9.0.0", "prefix": 32, "gateway": {}},
                    ],
                }
            ]
        },
        [
            {
                "type": "ipv4_dhcp",
                "id": "d",
                "link": "eth0",
                "routes": [
                    route("10.9.0.0", "255.255.0.0", "10.9.0.1"),
                    route("10.9.0.0", "255.255.0.0", "10.1.0.1"),
                    route("10.9.0.0", "255.255.0.0", "10.1.0.1"),
                    route("10.9.0.0", "255.255.0.0", ""),
                    route("10.9.0.0", "255.255.255.255", ""),
                ],
            }
        ],
    ),
    (
        "dhcp6 and slaac",
        {
            "ipv6DHCP": [{"id": "d6", "link": "eth0"}],
            "ipv6SLAAC": [{"id": "s6", "link": "eth1", "routes": [{"network": "::", "prefix": 128}]}],
        },
        [
            {"type": "ipv6_dhcp", "id": "d6", "link": "eth0", "routes": []},
            {
                "type": "ipv6_slaac",
                "id": "s6",
                "link": "eth1",
                "routes": [route("::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "")],
            },
        ],
    ),
    (
        "order: ipv4, ipv6, ipv4_dhcp, ipv6_dhcp, ipv6_slaac",
        {
            "ipv6SLAAC": [{"id": "s", "link": "l"}],
            "ipv6DHCP": [{"id": "d6", "link": "l"}],
            "ipv4DHCP": [{"id": "d4", "link": "l"}],
            "ipv6": [{"id": "v6", "link": "l", "ipAddressFromIPPool": "pool-6"}],
            "ipv4": [{"id": "v4", "link": "l", "ipAddressFromIPPool": "pool-nogw"}],
        },
        [
            {"type": "ipv4", "id": "v4", "link": "l", "ip_address": "10.2.0.5", "netmask": "0.0.0.0", "routes": []},
            {
                "type": "ipv6",
                "id": "v6",
                "link": "l",
                "ip_address": "fd00::5",
                "netmask": "ffff:ffff:ffff:ffff::",
                "routes": [],
            },
            {"type": "ipv4_dhcp", "id": "d4", "link": "l", "routes": []},
            {"type": "ipv6_dhcp", "id": "d6", "link": "l", "routes": []},
            {"type": "ipv6_slaac", "id": "s", "link": "l", "routes": []},
        ],
    ),
]


@pytest.mark.parametrize("name,networks,expected", NETWORK_CASES, ids=[c[0] for c in NETWORK_CASES])
def test_networks(name, networks, expected):
    assert render.render_network_data(ctx({"networkData": {"networks": networks}}))["networks"] == expected


@pytest.mark.parametrize(
    "services,expected",
    [
        ({}, []),
        ({"dns": ["8.8.8.8", "2001:4860:4860::8888"]}, ["8.8.8.8", "2001:4860:4860::8888"]),
        ({"dns": ["8.8.8.8"], "dnsFromIPPool": "pool-b"}, ["8.8.8.8", "10.1.0.53", "10.1.0.54"]),
        ({"dnsFromIPPool": "pool-nogw"}, []),
    ],
)
def test_services(services, expected):
    out = render.render_network_data(ctx({"networkData": {"services": services}}))
    assert out == {"links": [], "networks": [], "services": [{"type": "dns", "address": a} for a in expected]}


@pytest.mark.parametrize(
    "prefix,ipv4,mask",
    [
        (0, True, "0.0.0.0"),
        (8, True, "255.0.0.0"),
        (23, True, "255.255.254.0"),
        (32, True, "255.255.255.255"),
        (0, False, "::"),
        (1, False, "8000::"),
        (64, False, "ffff:ffff:ffff:ffff::"),
        (65, False, "ffff:ffff:ffff:ffff:8000::"),
        (112, False, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:0"),
        (128, False, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"),
    ],
)
def test_translate_mask(prefix, ipv4, mask):
    assert render.translate_mask(prefix, ipv4) == mask


ERROR_CASES = [
    (
        "malformed MAC string",
        {
            "networkData": {
                "links": {"ethernets": [{"type": "phy", "id": "e", "macAddress": {"string": "aa:bb:cc:dd:ee"}}]}
            }
        },
        "spec.networkData.links.ethernets[0].macAddress",
        "bad MAC address: aa:bb:cc:dd:ee",
    ),
    (
        "malformed MAC from annotation",
        {
            "networkData": {
                "links": {
                    "vlans": [
                        {
                            "id": "v",
                            "vlanID": 1,
                            "vlanLink": "e",
                            "macAddress": {"fromAnnotation": {"object": "baremetalhost", "annotation": "bad"}},
                        }
                    ]
                }
            }
        },
        "spec.networkData.links.vlans[0].macAddress",
        "bad MAC address: aa:bb:cc",
    ),
    (
        "missing annotation is an empty, bad MAC",
        {
            "networkData": {
                "links": {
                    "bonds": [
                        {
                            "id": "b",
                            "bondMode": "broadcast",
                            "macAddress": {"fromAnnotation": {"object": "machine", "annotation": "none"}},
                        }
                    ]
                }
            }
        },
        "spec.networkData.links.bonds[0].macAddress",
        "bad MAC address: ",
    ),
    (
        "bond parameter colliding with a key",
        {
            "networkData": {
                "links": {
                    "bonds": [
                        {
                            "id": "bond0",
                            "bondMode": "broadcast",
                            "parameters": [{"name": "mode", "value": "x"}, {"name": "links", "value": "y"}],
                        }
                    ]
                }
            }
        },
        "spec.networkData.links.bonds[0].parameters",
        'illegal params "mode", "links" into bond params blob',
    ),
    (
        "missing host interface in links",
        {
            "networkData": {
                "links": {"ethernets": [{"type": "phy", "id": "e", "macAddress": {"fromHostInterface": "eth9"}}]}
            }
        },
        "spec.networkData.links.ethernets[0].macAddress.fromHostInterface",
        "NIC name not found eth9",
    ),
    (
        "missing host interface in metaData",
        {"metaData": {"fromHostInterfaces": [{"key": "k", "interface": "eth9"}]}},
        "spec.metaData.fromHostInterfaces[0].interface",
        "NIC name not found eth9",
    ),
    (
        "unknown object type",
        {"metaData": {"objectNames": [{"key": "k", "object": "node"}]}},
        "spec.metaData.objectNames[0].object",
        "Unknown object type",
    ),
    (
        "pool with no address",
        {"metaData": {"ipAddressesFromPool": [{"key": "k", "name": "nope"}]}},
        "spec.metaData.ipAddressesFromPool[0].name",
        'pool "nope" not found',
    ),
    (
        "pool annotation missing",
        {
            "networkData": {
                "networks": {
                    "ipv4": [
                        {"id": "n", "link": "l", "fromPoolAnnotation": {"object": "machine", "annotation": "pool"}}
                    ]
                }
            }
        },
        "spec.networkData.networks.ipv4[0].fromPoolAnnotation",
        "annotation 'pool' not found",
    ),
]


@pytest.mark.parametrize("name,spec,field,message", ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_render_errors_name_template_and_field(name, spec, field, message):
    c = ctx(spec)
    with pytest.raises(Invalid) as err:
        render.render_meta_data(c)
        render.render_network_data(c)
    assert err.value.obj == "Metal3DataTemplate ns1/tpl"
    assert err.value.field == field
    assert message in str(err.value)


def test_empty_nics_and_boot_mac():
    bmh = copy.deepcopy(BMH)
    bmh["status"] = {}
    bmh["spec"] = {}
    with pytest.raises(Invalid, match="NICs list not populated"):
        render.render_meta_data(
            ctx({"metaData": {"fromHostInterfaces": [{"key": "k", "interface": "eth0"}]}}, (M3M, MACHINE, bmh))
        )
    with pytest.raises(Invalid, match="bootMACAddress is empty"):
        render.render_meta_data(
            ctx({"metaData": {"fromHostInterfaces": [{"key": "k", "fromBootMAC": True}]}}, (M3M, MACHINE, bmh))
        )


def test_upstream_example_renders_exactly():
    template = convert.to_current(example_docs()[0])
    m3m = {"metadata": {"name": "test1-workers-7xk2p", "namespace": "metal3"}}
    machine = {
        "metadata": {
            "name": "test1-workers-6d8f9c7b5-abcde",
            "namespace": "metal3",
            "annotations": {"example.com/site": "dc-east"},
        }
    }
    bmh = {
        "metadata": {
            "name": "node-1",
            "namespace": "metal3",
            "labels": {"example.com/rack": "r12"},
            "annotations": {"example.com/ext-mac": "52:54:00:aa:bb:04"},
        },
        "spec": {"bootMACAddress": "52:54:00:aa:bb:01"},
        "status": {
            "hardware": {
                "nics": [{"name": "enp1s0", "mac": "52:54:00:aa:bb:01"}, {"name": "enp2s0", "mac": "52:54:00:aa:bb:02"}]
            }
        },
    }
    data = {"metadata": {"name": "nodepool-1-3", "namespace": "metal3"}, "spec": {"index": 3}}
    pools = {
        "provisioning-pool": {"address": "172.22.0.50", "prefix": 24, "gateway": "172.22.0.1", "dnsServers": []},
        "baremetalv4-pool": {
            "address": "192.168.111.20",
            "prefix": 24,
            "gateway": "192.168.111.1",
            "dnsServers": ["8.8.8.8"],
        },
        "baremetalv6-pool": {
            "address": "2001:db8:0:1::20",
            "prefix": 64,
            "gateway": "2001:db8:0:1::1",
            "dnsServers": [],
        },
    }
    c = render.RenderContext(template, data, m3m, machine, bmh, pools)
    md, nd = render.render_meta_data(c), render.render_network_data(c)
    assert md == example_json("meta_data.capm3-secret.example.json")
    assert nd == example_json("network_data.example.json")
    # The payloads, parsed back, are the same data; and the text is what rendered-secrets.example.yaml shows.
    secrets = list(
        yaml.safe_load_all((example_json.__globals__["EXAMPLES"] / "rendered-secrets.example.yaml").read_text())
    )
    assert render.to_yaml(md) == secrets[0]["stringData"]["metaData"]
    assert render.to_yaml(nd) == secrets[1]["stringData"]["networkData"]
    assert render.referenced_pools(template) == {
        "provisioning-pool": {
            "apiGroup": "ipam.metal3.io",
            "kind": "IPPool",
            "field": "spec.metaData.ipAddressesFromPool[0]",
        },
        "baremetalv4-pool": {
            "apiGroup": "ipam.metal3.io",
            "kind": "IPPool",
            "field": "spec.networkData.networks.ipv4[1]",
        },
        "baremetalv6-pool": {
            "apiGroup": "ipam.metal3.io",
            "kind": "IPPool",
            "field": "spec.networkData.networks.ipv6[0]",
        },
    }


@pytest.mark.parametrize(
    "keys,expected",
    [
        # go-yaml v2 order: digit runs compare as numbers, other runes before letters
        (["mac_enp10s0", "mac_enp2s0", "mac_enp1s0"], ["mac_enp1s0", "mac_enp2s0", "mac_enp10s0"]),
        (["local_hostname", "local-hostname", "localhostname"], ["local-hostname", "local_hostname", "localhostname"]),
        (["b", "B", "a", "A"], ["A", "B", "a", "b"]),
        (["a1", "a", "a01"], ["a", "a1", "a01"]),
    ],
)
def test_yaml_key_order_is_go_yaml_v2(keys, expected):
    text = render.to_yaml({k: "v" for k in keys})
    assert [line.split(":")[0] for line in text.splitlines()] == expected
    assert yaml.safe_load(text) == {k: "v" for k in keys}


def test_yaml_quotes_what_would_change_type():
    text = render.to_yaml({"a": "24", "b": "", "c": "::", "d": "true", "e": "52:54:00:11:22:33"})
    assert yaml.safe_load(text) == {"a": "24", "b": "", "c": "::", "d": "true", "e": "52:54:00:11:22:33"}


def test_referenced_pools_conflicting_kinds():
    spec = {
        "metaData": {"ipAddressesFromPool": [{"key": "a", "name": "p"}]},
        "networkData": {
            "networks": {
                "ipv4": [
                    {
                        "id": "n",
                        "link": "l",
                        "fromPoolRef": {"name": "p", "apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool"},
                    }
                ]
            }
        },
    }
    with pytest.raises(Invalid, match="multiple references with the same name"):
        render.referenced_pools(
            {"kind": "Metal3DataTemplate", "metadata": {"name": "t", "namespace": "n"}, "spec": spec}
        )
