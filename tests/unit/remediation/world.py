"""A Metal3 machine in a real sqlite store with its Node in a real kube-apiserver, for the reboot tests.

What is played here is what runs elsewhere in real life: ``Bmo`` moves the BareMetalHost's power as
baremetal-operator does (``desired_power`` of hosts/base.py: off while a reboot.metal3.io annotation is
present) and records every power change; when the host comes back on, its kubelet posts Ready again,
re-registering the Node if it was deleted (with only the labels a kubelet sets).  ``Clock`` is the
injected clock.  ``Crashing`` wraps the store and the workload client and dies right after the n-th
write, as an interrupted ansible-playbook would.
"""

from __future__ import annotations

import datetime
import uuid

from ansible_collections.baremetal.capi.plugins.module_utils.hosts import base as hosts
from ansible_collections.baremetal.capi.plugins.module_utils.runner import Step

T0 = datetime.datetime(2026, 1, 1, 12, 0, 0, tzinfo=datetime.UTC)


class Clock:
    def __init__(self, start=T0):
        self.t = start

    def __call__(self):
        return self.t

    def advance(self, seconds: float):
        self.t += datetime.timedelta(seconds=seconds)


class Crash(Exception):
    """The process died here."""


class Crashing:
    """Counts writes (store, workload Node, power) and raises Crash right after write number ``at``."""

    def __init__(self, inner, counter: dict, at: int | None, writes=("create", "update", "update_status", "delete")):
        self._inner, self._counter, self._at, self._writes = inner, counter, at, writes

    def __getattr__(self, attr):
        value = getattr(self._inner, attr)
        if attr not in self._writes:
            return value

        def write(*args, **kwargs):
            out = value(*args, **kwargs)
            self._counter["n"] += 1
            if self._at is not None and self._counter["n"] == self._at:
                raise Crash(f"crash after write {self._at} ({attr})")
            return out

        return write


class Bmo:
    """baremetal-operator for power only: status.poweredOn follows desired_power, one change per step."""

    name = "test-bmo"

    def __init__(self, kube, node_name: str, comes_back: bool = True):
        self.kube = kube
        self.node_name = node_name
        self.comes_back = comes_back
        self.history: list[bool] = []

    def reconcile(self, store, bmh) -> Step:
        ns, name = hosts.key(bmh)
        host = store.get(hosts.KIND, name, ns)
        want = hosts.desired_power(host)
        if host["status"].get("poweredOn") != want:
            # the BMC switches first; the status write after it may be lost to a crash
            if not self.history or self.history[-1] != want:
                self.history.append(want)
                if want:
                    self.kubelet_starts()
            host["status"]["poweredOn"] = want
            store.update_status(host)
        return Step(done=True, message=f"power {'on' if want else 'off'}")

    def kubelet_starts(self):
        node = self.kube.get_node(self.node_name)
        if node is None and not self.comes_back:
            return  # a kubelet that never comes back never registers its Node again
        if node is None:
            self.kube.create_raw(self.node_name, labels={"kubernetes.io/hostname": self.node_name, "zone": "new"})
        self.kube.set_ready(self.node_name, "True" if self.comes_back else "Unknown")

    @property
    def cycles(self) -> int:
        """Power-offs seen (each is one power cycle of the remediation)."""
        return sum(1 for on in self.history if on is False)


def make_world(store, workload, *, ns=None, retry_limit=1, timeout=100, node_labels=None, node_annotations=None):
    """Cluster, Machine (Running, nodeRef), Metal3Machine, provisioned powered-on BareMetalHost, Node NotReady."""
    ns = ns or f"r{uuid.uuid4().hex[:8]}"
    node_name = f"n-{uuid.uuid4().hex[:10]}"
    workload.make_node(node_name, labels=node_labels or {"kubernetes.io/hostname": node_name}, ready="Unknown")
    if node_annotations:
        workload.patch_node(node_name, {"metadata": {"annotations": node_annotations}})
    infra = "infrastructure.cluster.x-k8s.io"
    store.create(
        {
            "apiVersion": "cluster.x-k8s.io/v1beta2",
            "kind": "Cluster",
            "metadata": {"name": "c1", "namespace": ns},
            "spec": {"infrastructureRef": {"apiGroup": infra, "kind": "Metal3Cluster", "name": "c1"}},
        }
    )
    host = store.create(
        {
            "apiVersion": "metal3.io/v1alpha1",
            "kind": "BareMetalHost",
            "metadata": {"name": "host-0", "namespace": ns},
            "spec": {
                "online": True,
                "bmc": {"address": "fake://x"},
                "bootMACAddress": "52:54:00:00:00:01",
                "image": {"url": "http://i/x.raw", "checksum": "abc"},
            },
        }
    )
    host["status"] = {"provisioning": {"state": "provisioned"}, "poweredOn": True, "operationalStatus": "OK"}
    store.update_status(host)
    machine = store.create(
        {
            "apiVersion": "cluster.x-k8s.io/v1beta2",
            "kind": "Machine",
            "metadata": {"name": "m-0", "namespace": ns, "labels": {"cluster.x-k8s.io/cluster-name": "c1"}},
            "spec": {
                "clusterName": "c1",
                "providerID": f"metal3://{ns}/host-0/m-0",
                "infrastructureRef": {"apiGroup": infra, "kind": "Metal3Machine", "name": "m-0"},
            },
        }
    )
    machine["status"] = {"phase": "Running", "nodeRef": {"name": node_name}}
    store.update_status(machine)
    store.create(
        {
            "apiVersion": f"{infra}/v1beta2",
            "kind": "Metal3Machine",
            "metadata": {"name": "m-0", "namespace": ns, "annotations": {"metal3.io/BareMetalHost": f"{ns}/host-0"}},
            "spec": {"providerID": f"metal3://{ns}/host-0/m-0"},
        }
    )
    rem = store.create(
        {
            "apiVersion": f"{infra}/v1beta2",
            "kind": "Metal3Remediation",
            "metadata": {"name": "m-0", "namespace": ns},
            "spec": {"strategy": {"type": "Reboot", "retryLimit": retry_limit, "timeoutSeconds": timeout}},
        }
    )
    return ns, node_name, rem
