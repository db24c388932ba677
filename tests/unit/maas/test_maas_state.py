"""The pure functions of the MAAS flows: providerID, image split, constraints, addresses, Node match, DNS set."""

from __future__ import annotations

import base64

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.maas import cluster, constraints, state


def mm(name="m", spec=None, status=None, cp=False, deleting=False):
    md = {"name": name, "namespace": "default", "labels": {}}
    if cp:
        md["labels"]["cluster.x-k8s.io/control-plane"] = ""
    if deleting:
        md["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        md["finalizers"] = ["maasmachine.infrastructure.cluster.x-k8s.io"]
    obj = {"kind": "MaasMachine", "metadata": md, "spec": {"image": "ubuntu/jammy", "minCPU": 2, "minMemory": 4096}}
    obj["spec"].update(spec or {})
    if status is not None:
        obj["status"] = status
    return obj


def running_cp(ip, powered=True, state_name="Deployed", **kw):
    status = {
        "machinePowered": powered,
        "machineState": state_name,
        "addresses": [{"type": "ExternalDNS", "address": "h.maas"}, {"type": "ExternalIP", "address": ip}],
    }
    return mm(ip, status=status, cp=True, **kw)


def test_provider_id_has_three_slashes_and_the_system_id_is_the_last_segment():
    assert state.provider_id("az-1", "abc123") == "maas:///az-1/abc123"
    assert state.system_id_of("maas:///az-1/abc123") == "abc123"
    assert state.system_id_of("maas://az-1/abc123") == "abc123"
    assert state.system_id_of("maas:///az-1/") is None
    assert state.system_id_of(None) is None


@pytest.mark.parametrize(
    "image, expected",
    [
        ("ubuntu/jammy", ("ubuntu", "jammy")),
        ("rhel/rocky-92-k8s-1.30", ("rhel", "rocky-92-k8s-1.30")),
        ("custom/u-2204-0-k8s-1.29.5", ("custom", "u-2204-0-k8s-1.29.5")),
        ("u-2204-0-k8s-1.29.5", ("custom", "u-2204-0-k8s-1.29.5")),
    ],
)
def test_split_image(image, expected):
    assert state.split_image(image) == expected


def test_constraints_send_every_tag_pool_zone_and_a_pinned_system_id():
    obj = mm(spec={"tags": ["a", "b", "c"], "resourcePool": "compute", "systemID": "xyz"})
    machine = {"spec": {"failureDomain": "az-2"}}
    got = constraints.allocate_constraints(obj, machine, not_tags=["bad"])
    assert got == {
        "cpu_count": "2",
        "mem": "4096",
        "zone": "az-2",
        "pool": "compute",
        "tags": ["a", "b", "c"],
        "not_tags": ["bad"],
        "system_id": "xyz",
    }
    # the MaasMachine's own failure domain wins; an allocated machine is never pinned again
    obj = mm(spec={"failureDomain": "az-3", "systemID": "xyz", "providerID": "maas:///az-3/xyz"})
    got = constraints.allocate_constraints(obj, machine)
    assert got["zone"] == "az-3" and "system_id" not in got and "tags" not in got


@pytest.mark.parametrize(
    "spec, field",
    [({"image": ""}, "spec.image"), ({"minCPU": -1}, "spec.minCPU"), ({"minMemory": "8G"}, "spec.minMemory")],
)
def test_validate_names_the_field(spec, field):
    with pytest.raises(Invalid) as err:
        state.validate(mm(spec=spec))
    assert err.value.field == field and "MaasMachine default/m" in str(err.value)


def test_user_data_is_the_secret_value_base64_encoded():
    text = "#cloud-config\nruncmd: [kubeadm init]\n"
    secret = {"data": {"value": base64.b64encode(text.encode()).decode()}}
    assert base64.b64decode(state.user_data_b64(secret, "Secret x")).decode() == text
    assert base64.b64decode(state.user_data_b64({"stringData": {"value": text}}, "Secret x")).decode() == text
    with pytest.raises(Invalid):
        state.user_data_b64({"data": {}}, "Secret x")


def test_addresses_are_internal_and_external():
    got = state.addresses({"fqdn": "n1.maas", "ip_addresses": ["10.0.0.5"]})
    assert got == [
        {"type": "ExternalDNS", "address": "n1.maas"},
        {"type": "InternalDNS", "address": "n1.maas"},
        {"type": "ExternalIP", "address": "10.0.0.5"},
        {"type": "InternalIP", "address": "10.0.0.5"},
    ]


def test_node_matched_by_hostname_short_name_then_fqdn_prefix():
    nodes = [{"metadata": {"name": n}} for n in ("node-1", "node-2.maas.example", "other")]
    assert state.node_for_hostname(nodes, "Node-1")["metadata"]["name"] == "node-1"
    assert state.node_for_hostname(nodes, "node-1.maas")["metadata"]["name"] == "node-1"
    assert state.node_for_hostname(nodes, "node-2")["metadata"]["name"] == "node-2.maas.example"
    assert state.node_for_hostname(nodes, "node-3") is None
    assert state.node_for_hostname(nodes, None) is None


def test_dns_set_is_the_running_control_planes_sorted_and_unique():
    cps = [running_cp("10.0.0.3"), running_cp("10.0.0.1"), running_cp("10.0.0.3")]
    cps.append(running_cp("10.0.0.9", state_name="Deploying"))
    cps.append(running_cp("10.0.0.7", powered=False))  # not running
    cps.append(running_cp("10.0.0.8", state_name="Allocated"))  # not running
    cps.append(running_cp("10.0.0.6", deleting=True))  # being deleted
    assert state.desired_dns_ips(cps, ["10.0.0.6"]) == (["10.0.0.1", "10.0.0.3", "10.0.0.9"], "")


def test_dns_set_is_never_emptied_while_control_planes_exist():
    cps = [running_cp("10.0.0.1", powered=False), running_cp("10.0.0.2", powered=False)]
    ips, why = state.desired_dns_ips(cps, ["10.0.0.2", "10.0.0.1"])
    assert ips == ["10.0.0.1", "10.0.0.2"] and "kept" in why
    # every control plane being deleted (or none left): the record may go empty
    deleting = [running_cp("10.0.0.1", deleting=True)]
    assert state.desired_dns_ips(deleting, ["10.0.0.1"]) == ([], "")
    assert state.desired_dns_ips([], ["10.0.0.1"]) == ([], "")


def test_preferred_subnets_win_when_any_address_is_in_them():
    cps = [running_cp("10.0.0.1"), running_cp("192.168.5.4")]
    assert state.desired_dns_ips(cps, [], ["192.168.5.0/24"])[0] == ["192.168.5.4"]
    assert state.desired_dns_ips(cps, [], ["172.16.0.0/12"])[0] == ["10.0.0.1", "192.168.5.4"]


def test_dns_name_from_the_cluster_endpoint_else_kept_else_random():
    c = {"metadata": {"name": "c1"}, "spec": {}}
    mc = {"metadata": {"name": "c1"}, "spec": {"dnsDomain": "maas.example"}}
    name = cluster.dns_name_for(c, mc)
    # scope/cluster_test.go: len("<name>-") + 6 + len(".<domain>")
    assert (
        name.startswith("c1-") and name.endswith(".maas.example") and len(name) == len("c1-") + 6 + len(".maas.example")
    )
    mc["status"] = {"network": {"dnsName": "c1-abcdef.maas.example"}}
    assert cluster.dns_name_for(c, mc) == "c1-abcdef.maas.example"
    c["spec"]["controlPlaneEndpoint"] = {"host": "api.example.com", "port": 443}
    assert cluster.dns_name_for(c, mc) == "api.example.com"
    assert cluster.api_port(c) == 6443
    assert cluster.api_port({"spec": {"clusterNetwork": {"apiServerPort": 8443}}}) == 8443


def test_failure_domains_are_a_list_and_dns_domain_is_required():
    mc = {"kind": "MaasCluster", "metadata": {"name": "c1", "namespace": "d"}, "spec": {"failureDomains": ["a", "b"]}}
    assert cluster.failure_domains(mc) == [{"name": "a", "controlPlane": True}, {"name": "b", "controlPlane": True}]
    with pytest.raises(Invalid) as err:
        cluster.validate(mc)
    assert err.value.field == "spec.dnsDomain"


def test_a_malformed_api_key_is_refused_without_echoing_it():
    from ansible_collections.baremetal.capi.plugins.module_utils.maas import client

    with pytest.raises(Invalid) as err:
        client.Client("http://maas.example:5240/MAAS/", "only-one-part-s3cr3t")
    assert err.value.field == "maas_api_key" and "s3cr3t" not in str(err.value)
    c = client.Client("https://maas.example:5240/MAAS", "a:b:c")
    assert c.url == "https://maas.example:5240/MAAS/" and c.validate_certs is True
