"""A small world for the Metal3Machine flow tests: Cluster, Metal3Cluster, Machines, hosts; and BMO played by hand.

The external host driver only reads host status, so a test moves a host the
way baremetal-operator would (``play_bmo_provisioned`` / ``play_bmo_available``),
and plays the kubelet by registering the Node in the lab's kube-apiserver.
"""

from __future__ import annotations

from capi_objects import bmh, bootstrap_secret, cluster, kubeconfig_secret, machine, metal3_cluster, metal3_machine, put

from ansible_collections.baremetal.capi.plugins.module_utils.hosts import drivers
from ansible_collections.baremetal.capi.plugins.module_utils.metal3.machine import MachineManager

NICS = [{"name": "enp1s0", "mac": "52:54:00:aa:bb:01", "ip": "192.0.2.31"}]


def make_world(store, kubeconfig=None, n_hosts=3, ns="default", cluster_name="c1", paused=False):
    put(store, cluster(cluster_name, ns, paused=paused))
    m3c = put(store, metal3_cluster(cluster_name, ns, port=6443))
    m3c["status"] = {"initialization": {"provisioned": True}}
    store.update_status(m3c)
    if kubeconfig:
        put(store, kubeconfig_secret(cluster_name, ns, kubeconfig))
    put(store, bootstrap_secret("bootstrap", ns))
    # A control plane Machine that stays: node deletion of the workers is allowed (cluster-api
    # internal/controllers/machine/machine_controller.go isDeleteNodeAllowed).
    put(store, machine("cp-keep", cluster_name, ns, control_plane=True, infra_kind="Metal3Machine"))
    for i in range(n_hosts):
        put(store, bmh(f"h{i}", ns))
        secret = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": f"h{i}-bmc", "namespace": ns},
            "stringData": {"username": "admin", "password": "password"},
        }
        store.create(secret)


def add_machine(store, name, ns="default", cluster_name="c1", **m3m_kw):
    put(store, machine(name, cluster_name, ns))
    return put(store, metal3_machine(name, ns, **m3m_kw))


def manager(store, **kw):
    kw.setdefault("no_host_requeue", 0.2)
    return MachineManager(store, drivers.get_driver("external", {"poll": 0.1}), **kw)


def play_bmo_provisioned(store, name, ns="default", hostname=None):
    host = store.get("BareMetalHost", name, ns)
    image = dict(host["spec"]["image"])
    host["status"].update(
        provisioning={"state": "provisioned", "image": image, "ID": f"id-{name}"},
        poweredOn=True,
        hardware={"nics": NICS, "hostname": hostname or name},
    )
    return store.update_status(host)


def play_bmo_available(store, name, ns="default"):
    host = store.get("BareMetalHost", name, ns)
    host["status"].update(provisioning={"state": "available", "ID": f"id-{name}"}, poweredOn=False)
    return store.update_status(host)


def host_of(store, m3m_name, ns="default"):
    ann = store.get("Metal3Machine", m3m_name, ns)["metadata"].get("annotations") or {}
    return ann.get("metal3.io/BareMetalHost", "").split("/")[-1] or None
