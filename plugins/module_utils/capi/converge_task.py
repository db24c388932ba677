# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A ``cluster_machines`` task: its options -> one Converger -> its result.

Shared by the module (plugins/modules/cluster_machines.py, a process of its own) and the action plugin
(plugins/action/cluster_machines.py, the engine inside the ansible-playbook process), so that both read
the same options and say the same thing.  Plain Python: no Ansible import.
"""

from __future__ import annotations

import re

from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid

_INFRA = {"metal3": "Metal3Machine", "maas": "MaasMachine"}
_CLUSTER_KIND = {"Metal3Cluster": "metal3", "MaasCluster": "maas"}
# What a provider step says once the first control-plane machine is up (MAAS: its address is in the DNS
# record) or waits only for the workload API.
_DEPLOYED = re.compile(r"Deployed|workload API")


def control_plane_deployed(rows: list[dict]) -> bool:
    return any(r.get("role") == "control-plane" and _DEPLOYED.search(r.get("message") or "") for r in rows)


def workers_deleted(rows: list[dict]) -> bool:
    """No worker Machine is left (cluster deletion: the control plane goes after them, whatever its health)."""
    return not any(r.get("role") == "worker" for r in rows)


# stop_when -> what ends the loop before the whole cluster has converged (None: converged, or the deadline)
STOP_WHEN = {"converged": None, "control_plane_deployed": control_plane_deployed, "workers_deleted": workers_deleted}


def _manager(params: dict, provider: str, store, maas_options):
    if provider == "metal3":
        from ansible_collections.baremetal.capi.plugins.module_utils.hosts.drivers import get_driver
        from ansible_collections.baremetal.capi.plugins.module_utils.metal3.machine import MachineManager

        driver = get_driver(params["host_driver"], params["host_driver_options"])
        return MachineManager(store, driver, workload_kubeconfig=params["workload_kubeconfig"]), driver.close
    from ansible_collections.baremetal.capi.plugins.module_utils.maas import client as maas_client
    from ansible_collections.baremetal.capi.plugins.module_utils.maas.machine import MachineManager

    client = maas_client.connect(maas_options())
    mgr = MachineManager(
        store, client, workload_kubeconfig=params["workload_kubeconfig"], disable_swap=params["disable_swap"]
    )
    return mgr, (lambda: None)


def run(params: dict, store, ns: str, *, maas_options, check_mode: bool, progress=None, abort=None) -> dict:
    """Converge (with ``wait``) or take one round; the Converger's report.

    ``maas_options()`` gives the MAAS connection (called only for a MAAS cluster); ``progress(row, timing)``
    is called whenever a machine's row changes while the loop runs; ``abort()`` true ends the loop early.
    """
    from ansible_collections.baremetal.capi.plugins.module_utils.bootstrap import kubeadm
    from ansible_collections.baremetal.capi.plugins.module_utils.capi.converge import Converger

    if int(params["workers"]) < 1:
        raise Invalid(
            f"{params['workers']} machines at the same time: give 1 or more",
            obj=f"Cluster {ns}/{params['cluster']}",
            field="workers",
        )
    cluster = store.get("Cluster", params["cluster"], ns)
    infra_kind = ((cluster.get("spec") or {}).get("infrastructureRef") or {}).get("kind")
    provider = params["provider"] or _CLUSTER_KIND.get(infra_kind)
    if provider is None:
        raise Invalid(
            "neither Metal3Cluster nor MaasCluster; set provider",
            obj=f"Cluster {ns}/{params['cluster']}",
            field="spec.infrastructureRef",
        )
    if params.get("deregister_hosts") and provider == "maas":
        raise Invalid(
            "deregister_hosts names BareMetalHosts: a MAAS cluster has none",
            obj=f"Cluster {ns}/{params['cluster']}",
            field="deregister_hosts",
        )
    mgr, close = _manager(params, provider, store, maas_options)
    try:
        conv = Converger(
            store,
            mgr,
            params["cluster"],
            ns,
            infra_kind=_INFRA[provider],
            workers=params["workers"],
            token_ttl=params["token_ttl"],
            kubeconfig=params["workload_kubeconfig"],
            user_data_template=kubeadm.user_data_template(params["user_data_template"]),
            deregister_hosts=params.get("deregister_hosts") or (),
        )
        if params["wait"] and not check_mode:
            until = STOP_WHEN[params["stop_when"]]
            return conv.converge(
                timeout=params["wait_timeout"],
                poll=params["wait_sleep"],
                progress=progress,
                until=until,
                abort=abort,
            )
        report = conv.round(check=check_mode)
        report.update(rounds=1, steps=1 + len(report["machines"]), timed_out=False)
        return report
    finally:
        close()


def _waits_for(row: dict) -> str:
    """The machine's message, and the kubelet's own words when its Node is registered but not Ready ("network
    not ready" is a missing CNI add-on: docs/cluster-description.md, "Add-ons and the CNI")."""
    kubelet = f"Node NotReady: {row['nodeNotReady']}" if row.get("nodeNotReady") else ""
    return " - ".join(x for x in (row.get("message") or "", kubelet) if x)


def outcome(params: dict, ns: str, report: dict, check_mode: bool) -> tuple[dict, str | None]:
    """The task's result (without ``changed``: ``report["changed"]``) and, when it failed, why (naming each
    machine and what it waits for)."""
    result = dict(
        converged=report["done"],
        machines=report["machines"],
        messages=report["messages"],
        rounds=report["rounds"],
        steps=report.get("steps", 0),
    )
    if "hosts_deleted" in report:
        result["hosts_deleted"] = report["hosts_deleted"]
    failed = [r for r in report["machines"] if r.get("failed")]
    waited = params["wait"] and not check_mode
    until = STOP_WHEN[params["stop_when"]]
    reached = report["done"] or (until is not None and until(report["machines"]))
    if failed and (not waited or not reached):
        return result, "; ".join(f"Machine {ns}/{r['machine']}: {r['message']}" for r in failed)
    if waited and not reached:
        waiting = [
            f"{r['machine']} ({r['state']}): {_waits_for(r)}"
            for r in report["machines"]
            if not (r["state"] == "Running" and r["nodeReady"])
        ]
        return result, (
            f"cluster {ns}/{params['cluster']} not converged after {params['wait_timeout']}s: "
            + "; ".join(waiting + report["messages"])
        )
    return result, None
