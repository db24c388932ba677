"""The server a written kubeconfig names when the endpoint is a MAAS DNS record this machine may not resolve."""

from __future__ import annotations

from ansible_collections.baremetal.capi.plugins.module_utils.bootstrap.cluster import kubeconfig_server

NAME = "https://c1-abc123.maas:6443"


def test_an_answering_address_first_then_the_records_first_address():
    answering = {"127.0.2.12"}

    def reachable(address, port):
        assert port == 6443
        return address in answering

    assert kubeconfig_server(NAME, None, ["127.0.2.11", "127.0.2.12"], reachable) == "https://127.0.2.12:6443"
    # no API server answers yet (kubeadm init still running): the record's first address, never the bare name
    answering.clear()
    assert kubeconfig_server(NAME, None, ["127.0.2.11", "127.0.2.12"], reachable) == "https://127.0.2.11:6443"
    assert kubeconfig_server(NAME, None, ["fd00::11"], reachable) == "https://[fd00::11]:6443"


def test_no_address_keeps_the_name_and_a_given_server_wins():
    def reachable(address, port):
        raise AssertionError("nothing to probe")

    assert kubeconfig_server(NAME, None, [], reachable) == NAME
    assert kubeconfig_server(NAME, "https://127.0.3.1:6443", ["127.0.2.11"], reachable) == "https://127.0.3.1:6443"
