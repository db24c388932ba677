"""CAPMAAS's API-server interface choice (spectrocloud-public 1ff63c3, ``apiServerInterfaceName``).

selectMachineIPForDNS / GetMachineIPForInterface over the interface JSON the MAAS simulator renders (MAAS
3.5's shape), the DNS set built from the chosen addresses, the MaasCluster's validation, and the
cluster description's ``api_server_interface``.
"""

from __future__ import annotations

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.capi import description
from ansible_collections.baremetal.capi.plugins.module_utils.capi import description_objects as cd
from ansible_collections.baremetal.capi.plugins.module_utils.errors import CapiError, Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.maas import cluster, dns, state
from lab.maas_sim import model, render


def two_nic_machine(status=model.DEPLOYED, eno2_mode="auto"):
    """A simulator machine: eno1 (PXE) on the lab subnet, eno2 on 10.20.0.0/24, as MAAS would list them."""
    store = model.Store()
    m = store.add_machine(hostname="cp-a", ip="127.0.2.7", mac="52:54:00:00:02:07", interface_name="eno1")
    store.add_nic(m, "eno2", "10.20.0.0/24", mode=eno2_mode)
    store.set_status(m, status)
    return m


def cp(name, ip, system_id="abc123", powered=True, machine_state="Deployed", deleting=False):
    md = {"name": name, "namespace": "default", "labels": {"cluster.x-k8s.io/control-plane": ""}}
    if deleting:
        md["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        md["finalizers"] = ["maasmachine.infrastructure.cluster.x-k8s.io"]
    spec = {"image": "ubuntu/jammy", "minCPU": 1, "minMemory": 1024}
    if system_id:
        spec["systemID"] = system_id
    status = {
        "machinePowered": powered,
        "machineState": machine_state,
        "addresses": [{"type": "InternalIP", "address": "192.0.2.1"}, {"type": "ExternalIP", "address": ip}],
    }
    return {"kind": "MaasMachine", "metadata": md, "spec": spec, "status": status}


def test_the_first_address_on_the_named_interface():
    ifaces = render.interfaces(two_nic_machine())
    assert [i["name"] for i in ifaces] == ["eno1", "eno2"]
    assert state.interface_ip(ifaces, "eno2", "abc123") == "10.20.0.7"  # the host number of its PXE address
    assert state.interface_ip(ifaces, "eno1", "abc123") == "127.0.2.7"


def test_missing_interface_and_interface_without_address_are_upstreams_errors():
    ifaces = render.interfaces(two_nic_machine())
    with pytest.raises(CapiError) as err:
        state.interface_ip(ifaces, "eno9", "abc123")
    assert str(err.value) == 'interface "eno9" not found for machine "abc123"'
    # an AUTO address is claimed when deployment starts: before that the link has none
    ready = render.interfaces(two_nic_machine(status=model.READY))
    with pytest.raises(CapiError) as err:
        state.interface_ip(ready, "eno2", "abc123")
    assert str(err.value) == 'no IP found on interface "eno2" for machine "abc123"'
    link_up = render.interfaces(two_nic_machine(eno2_mode="link_up"))
    with pytest.raises(CapiError, match='no IP found on interface "eno2"'):
        state.interface_ip(link_up, "eno2", "abc123")


def test_select_is_the_first_external_ip_without_a_name_and_the_interface_with_one():
    calls = []

    def resolver(system_id):
        calls.append(system_id)
        return render.interfaces(two_nic_machine())

    m = cp("cp-0", "127.0.2.7")
    assert state.select_machine_ip(m, "", resolver) == "127.0.2.7"
    assert state.select_machine_ip(m, None, None) == "127.0.2.7"
    assert calls == []  # legacy mode reads no interfaces
    assert state.select_machine_ip(m, "eno2", resolver) == "10.20.0.7"
    assert calls == ["abc123"]


def test_select_errors_name_the_machine():
    with pytest.raises(CapiError) as err:
        state.select_machine_ip(cp("cp-0", "127.0.2.7", system_id=None), "eno2", lambda sid: [])
    assert str(err.value) == ('unable to select API server IP for machine "cp-0": systemID not set for machine "cp-0"')
    with pytest.raises(CapiError) as err:
        state.select_machine_ip(cp("cp-1", "127.0.2.7"), "eth7", lambda sid: render.interfaces(two_nic_machine()))
    assert str(err.value) == (
        'unable to select API server IP for machine "cp-1": interface "eth7" not found for machine "abc123"'
    )


def test_dns_set_uses_the_published_addresses_and_leaves_the_rest_as_before():
    cps = [cp("cp-0", "127.0.2.7"), cp("cp-1", "127.0.2.8"), cp("cp-2", "127.0.2.9", powered=False)]
    published = {"cp-0": "10.20.0.7", "cp-1": "10.20.0.8"}
    assert state.desired_dns_ips(cps, [], (), published) == (["10.20.0.7", "10.20.0.8"], "")
    assert state.desired_dns_ips(cps, [], ())[0] == ["127.0.2.7", "127.0.2.8"]  # legacy: first ExternalIP
    # preferred subnets still filter what was chosen
    assert state.desired_dns_ips(cps, [], ["10.20.0.8/32"], published)[0] == ["10.20.0.8"]


class Interfaces:
    """Just the one MAAS call published_ips makes, answered with the simulator's rendering."""

    def __init__(self, machines):
        self.machines = machines
        self.asked = []

    def list_interfaces(self, system_id):
        self.asked.append(system_id)
        return render.interfaces(self.machines[system_id])


def test_published_ips_only_for_running_control_planes_and_errors_name_the_maascluster():
    mc = {"kind": "MaasCluster", "metadata": {"name": "c1", "namespace": "default"}, "spec": {}}
    client = Interfaces({"abc123": two_nic_machine()})
    cps = [
        cp("cp-0", "127.0.2.7"),
        cp("cp-off", "127.0.2.8", system_id="nope", powered=False),
        cp("cp-gone", "127.0.2.9", system_id="nope", deleting=True),
    ]
    assert dns.published_ips(client, cps, "", mc) == {}
    assert client.asked == []
    assert dns.published_ips(client, cps, "eno2", mc) == {"cp-0": "10.20.0.7"}
    assert client.asked == ["abc123"]  # not-running and deleting machines are detached by their ExternalIP
    with pytest.raises(CapiError) as err:
        dns.published_ips(client, cps, "bond0", mc)
    assert not isinstance(err.value, Invalid)  # retried as upstream's reconcile error is, not bad input
    assert str(err.value) == (
        'MaasCluster default/c1: spec.apiServerInterfaceName: unable to select API server IP for machine "cp-0": '
        'interface "bond0" not found for machine "abc123"'
    )


def test_published_interface_name_in_status_is_absent_in_legacy_mode():
    status = {"network": {"dnsName": "c1-abcdef.maas"}}
    assert dns.set_published_interface(status, "eno2") is True
    assert status["network"] == {"dnsName": "c1-abcdef.maas", "publishedInterfaceName": "eno2"}
    assert dns.set_published_interface(status, "eno2") is False
    assert dns.set_published_interface(status, "") is True
    assert status["network"] == {"dnsName": "c1-abcdef.maas"}


@pytest.mark.parametrize("value", ["eno2", "br-ex", "enp1s0f1.100", ""])
def test_maascluster_accepts_interface_names(value):
    cluster.validate({"kind": "MaasCluster", "metadata": {"name": "c1", "namespace": "default"},
                      "spec": {"dnsDomain": "maas", "apiServerInterfaceName": value}})  # fmt: skip


@pytest.mark.parametrize("value", [2, ["eno2"], "eno 2", " eno2"])
def test_maascluster_refuses_what_is_no_interface_name(value):
    with pytest.raises(Invalid) as err:
        cluster.validate({"kind": "MaasCluster", "metadata": {"name": "c1", "namespace": "default"},
                          "spec": {"dnsDomain": "maas", "apiServerInterfaceName": value}})  # fmt: skip
    assert str(err.value).startswith("MaasCluster default/c1: spec.apiServerInterfaceName: must be a MAAS interface")


def _desc(**extra):
    return {"name": "c1", "provider": "maas", "control_plane": {"replicas": 1}, **extra}


def test_description_maps_api_server_interface_to_the_maascluster():
    description.check(_desc(api_server_interface="eno2"))
    objs = {o["kind"]: o for o in cd.objects(_desc(api_server_interface="eno2"), "cluster")}
    assert objs["MaasCluster"]["spec"]["apiServerInterfaceName"] == "eno2"
    objs = {o["kind"]: o for o in cd.objects(_desc(), "cluster")}
    assert "apiServerInterfaceName" not in objs["MaasCluster"]["spec"]


@pytest.mark.parametrize(
    ("desc", "message"),
    [
        (_desc(api_server_interface="eno 2"), "api_server_interface: 'eno 2' is not a MAAS interface name"),
        (_desc(api_server_interface=""), "api_server_interface: '' is not a MAAS interface name"),
    ],
)
def test_description_refuses_bad_api_server_interface(desc, message):
    with pytest.raises(Invalid) as err:
        description.check(desc)
    assert message in str(err.value)
