"""The lab's CNI stand-in (lab/manifests/cni-standin.yaml) as the tests use it.

The lab's kubelets keep their Node NotReady ("cni plugin not initialized") until a CNI DaemonSet runs on it,
so every flow that waits for Ready Nodes applies this add-on: through the cluster description (``ADDON``),
through the store for flows that drive the engine (``add_to_store``: the converge loop applies it once the
workload API answers), or straight to a workload API that no Cluster object describes (``apply``).
"""

from __future__ import annotations

from lab.config import REPO

STANDIN = REPO / "lab" / "manifests" / "cni-standin.yaml"
ADDON = {"name": "cni", "manifests": [str(STANDIN)]}
DAEMONSET = ("kube-system", "lab-cni")


def add_to_store(store, cluster: str, namespace: str) -> dict:
    """The add-on as the addons role writes it (ClusterResourceSet <cluster>-cni and its ConfigMap)."""
    from ansible_collections.baremetal.capi.plugins.module_utils.capi import addon_sets

    return addon_sets.ensure(store, cluster, namespace, [ADDON])


def apply(kubeconfig_text: str) -> None:
    """``kubectl create -f`` the stand-in on a workload cluster (for tests of the lab without a Cluster)."""
    from ansible_collections.baremetal.capi.plugins.module_utils.capi import addons
    from ansible_collections.baremetal.capi.plugins.module_utils.capi import workload as wl

    applier = addons.Applier(wl.cached_client(kubeconfig_text))
    for obj in addons.objects_of([STANDIN.read_bytes()], str(STANDIN)):
        applier.create_if_missing(obj)
