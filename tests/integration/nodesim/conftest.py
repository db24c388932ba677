"""Fixtures for the node simulator tests: the lab services it sits on, Ironic nodes, workload clients."""

from __future__ import annotations

import random
import secrets
import time

import pytest
import urllib3
from kubernetes.client.exceptions import ApiException

from lab import process
from lab.nodesim import client as nodesim

# What the kubernetes client raises while a workload API server is not (yet, or any more) serving.
UNREACHABLE = (ApiException, urllib3.exceptions.HTTPError, OSError)

# How long to wait for the lab to act before calling it broken (not a timing assertion).
PATIENCE = 240.0
# Fast node-lifecycle timings for the run; the defaults are kube-controller-manager's and the kubelet's.
TIMINGS = {"grace": 4.0, "lease_renew": 1.0, "status_report": 30.0, "poll": 1.0}


def eventually(check, what: str, patience: float = PATIENCE, last=lambda: None):
    deadline = time.monotonic() + patience
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not after {patience:.0f}s; last seen: {last()}")
        time.sleep(0.5)


@pytest.fixture(scope="session")
def nodesim_lab(lab):
    """kube (the shared etcd), ironic and the node simulator up, with fast lifecycle timings for this run."""
    lab.need("kube", "ironic", "nodesim")
    before = nodesim.status(lab.cfg)["timings"]
    nodesim.set_timings(lab.cfg, **TIMINGS)
    yield lab
    if process.pid_of(lab.cfg, "nodesim") is not None:
        nodesim.set_timings(lab.cfg, **{k: before[k] for k in TIMINGS})


@pytest.fixture(scope="session")
def ironic(nodesim_lab):
    from lab.nodesim import sources

    return sources.ironic_connection(nodesim_lab.cfg)


@pytest.fixture
def fake_nodes(ironic):
    """make(count) -> available fake-hardware Ironic nodes, undeployed and deleted afterwards."""
    made = []

    def make(count: int):
        tag = secrets.token_hex(3)
        nodes = []
        for i in range(count):
            node = ironic.baremetal.create_node(name=f"nodesim-{tag}-{i}", driver="fake-hardware")
            made.append(node.id)
            nodes.append(node)
        for node in nodes:
            ironic.baremetal.set_node_provision_state(node, "manage", wait=True, timeout=120)
            ironic.baremetal.set_node_provision_state(node, "provide", wait=True, timeout=120)
        return [ironic.baremetal.get_node(n.id) for n in nodes]

    yield make
    for node_id in made:
        try:
            node = ironic.baremetal.get_node(node_id)
            if node.provision_state == "active":
                ironic.baremetal.set_node_provision_state(node, "deleted", wait=True, timeout=120)
            ironic.baremetal.set_node_maintenance(node_id, reason="test done")
            ironic.baremetal.delete_node(node_id)
        except Exception:  # noqa: BLE001 - best effort; lab reset removes the rest
            pass


@pytest.fixture
def endpoint():
    """A free controlPlaneEndpoint on a loopback address of its own, kubeadm's default port."""
    for _ in range(50):
        host = f"127.0.3.{random.randint(2, 250)}"
        if not process.port_open(host, 6443):
            return f"{host}:6443"
    pytest.fail("no free 127.0.3.x:6443")


def workload_client(kubeconfig_text: str, tmp_path):
    """A kubernetes ApiClient from a kubeconfig (the cluster's admin kubeconfig)."""
    from kubernetes import config as kconfig

    path = tmp_path / f"kubeconfig-{secrets.token_hex(3)}"
    path.write_text(kubeconfig_text)
    return kconfig.new_client_from_config(config_file=str(path))


def install_cni(kubeconfig_text: str, not_ready_first: str | None = None) -> None:
    """The lab's CNI stand-in on the workload cluster: its kubelets keep their Nodes NotReady without one.

    With ``not_ready_first`` (a Node name), that Node is first seen registered NotReady for want of a network,
    with the kubelet's reason and message.
    """
    from ansible_collections.baremetal.capi.plugins.module_utils.capi import workload as wl
    from ansible_collections.baremetal.capi.plugins.module_utils.errors import CapiError
    from tests.integration import cni

    if not_ready_first:
        core = wl.cached_client(kubeconfig_text).core_v1()

        def no_network():
            try:
                node = core.read_node(not_ready_first)
            except UNREACHABLE:
                return None
            cond = next((c for c in node.status.conditions or [] if c.type == "Ready"), None)
            return (
                cond is not None
                and cond.status == "False"
                and cond.reason == "KubeletNotReady"
                and ("cni plugin not initialized" in (cond.message or ""))
            )

        eventually(no_network, f"{not_ready_first} registered NotReady (no CNI)")

    def applied():
        try:
            cni.apply(kubeconfig_text)
            return True
        except CapiError:
            return False  # the API server is still coming up

    eventually(applied, "the CNI stand-in applied")


def ready_status(node) -> str | None:
    for cond in node.status.conditions or []:
        if cond.type == "Ready":
            return cond.status
    return None
