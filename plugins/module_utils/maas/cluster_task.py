# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A ``maas_cluster`` task: the MaasCluster reconciled (``present``), or torn down with its machines (``absent``)."""

from __future__ import annotations

from ansible_collections.baremetal.capi.plugins.module_utils.maas import cluster as maas_cluster
from ansible_collections.baremetal.capi.plugins.module_utils.maas import machine as maas_machine


def run(
    store,
    client,
    name: str,
    ns: str,
    *,
    state: str = "present",
    workload_kubeconfig: str | None = None,
    subnets: list[str] | None = None,
    check: bool = False,
    wait: bool = True,
    timeout: float | None = None,
    poll: float = 2.0,
    workers: int = 8,
    wait_for_api_server: bool = False,
) -> dict:
    """``{result, before, after}`` (``absent``: ``{result, before, machines, cluster}``), as maas/cluster.py says."""
    mgr = maas_cluster.ClusterManager(store, client, workload_kubeconfig=workload_kubeconfig, subnets=subnets)
    if state == "absent":
        machines = maas_machine.MachineManager(store, client, workload_kubeconfig=workload_kubeconfig, subnets=subnets)
        opts = dict(check=check, wait=wait, timeout=timeout, poll=poll, workers=workers)
        return maas_cluster.teardown(mgr, machines, name, ns, **opts)
    return maas_cluster.reconcile(
        mgr, name, ns, check=check, wait=wait, timeout=timeout, poll=poll, wait_for_api_server=wait_for_api_server
    )
