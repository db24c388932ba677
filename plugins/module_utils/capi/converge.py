# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A whole cluster's machines, converged in rounds: what the Cluster API controllers do together.

One round, for one Cluster:

1. the Cluster marks its infrastructure provisioned (capi.cluster);
2. the KubeadmControlPlane and every MachineDeployment take one step
   (capi.topology: create or delete at most what that controller would);
3. the Cluster's ``controlPlaneInitialized`` is set once a control-plane
   Machine has a Node (the workload API answers then);
4. every KubeadmConfig without data gets it (bootstrap.kubeadm), joins with a
   bootstrap token written into the workload cluster;
5. every infrastructure machine takes one provider step (Metal3 or MAAS
   manager), concurrently, and deleting Machines take one CAPI delete step.

``converge`` repeats rounds until nothing is left to do or the deadline
passes, reporting one row per Machine after each round.  A round is
idempotent: interrupted anywhere, the next run picks up from the store.
"""

from __future__ import annotations

import copy
import time

from ansible_collections.baremetal.capi.plugins.module_utils import runner
from ansible_collections.baremetal.capi.plugins.module_utils.bootstrap import kubeadm
from ansible_collections.baremetal.capi.plugins.module_utils.bootstrap.tokens import WorkloadTokens
from ansible_collections.baremetal.capi.plugins.module_utils.capi import cluster as capi_cluster
from ansible_collections.baremetal.capi.plugins.module_utils.capi import control_plane, deployment, refs
from ansible_collections.baremetal.capi.plugins.module_utils.capi import machine as capi_machine
from ansible_collections.baremetal.capi.plugins.module_utils.capi import workload as wl
from ansible_collections.baremetal.capi.plugins.module_utils.errors import CapiError, Conflict, NotFound, Requeue
from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions, meta, names

CONTROL_PLANE_INITIALIZED = "ControlPlaneInitialized"


def cluster_machines(store, cluster_name: str, ns: str) -> list[dict]:
    return store.list("Machine", ns, {"matchLabels": {names.CLUSTER_NAME_LABEL: cluster_name}})


def _mark_initialized(store, cluster: dict, machines: list[dict], check: bool) -> tuple[dict, bool]:
    """KCP sets controlPlaneInitialized once the workload cluster answers; a control-plane Node shows it."""
    if kubeadm.control_plane_initialized(cluster):
        return cluster, False
    if not any(kubeadm.is_control_plane(m) and (m.get("status") or {}).get("nodeRef") for m in machines):
        return cluster, False
    if check:
        return cluster, True
    for _attempt in range(10):
        after = copy.deepcopy(cluster)
        after.setdefault("status", {}).setdefault("initialization", {})["controlPlaneInitialized"] = True
        conditions.set_condition(after, CONTROL_PLANE_INITIALIZED, True, "Initialized")
        try:
            cluster = store.update_status(after)
            kubeadm.release_init_lock(store, cluster)
            return cluster, True
        except Conflict:
            cluster = store.get("Cluster", meta.name(cluster), meta.namespace(cluster))
    return cluster, False


def _tokens(store, cluster: dict, kubeconfig: str | None):
    if not kubeadm.control_plane_initialized(cluster):
        return None
    try:
        client = wl.client_for(store, meta.name(cluster), meta.namespace(cluster), kubeconfig)
    except NotFound:
        return None
    return WorkloadTokens(client.core_v1())


def _bootstrap(store, cluster: dict, machines: list[dict], tokens, token_ttl: int, check: bool, template=None):
    ns = meta.namespace(cluster)
    out = {}
    for machine in machines:
        if meta.is_deleting(machine):
            continue
        ref = (machine.get("spec") or {}).get("bootstrap", {}).get("configRef")
        if not ref or ref.get("kind") != "KubeadmConfig":
            continue
        # The Machine controller first owns its bootstrap config (CABPK finds its Machine by that owner).
        config = refs.take_ownership(store, machine, ref, check=check)
        if config is None:
            continue
        try:
            step = kubeadm.reconcile_config(
                store, config, tokens=tokens, token_ttl=token_ttl, check_mode=check, user_data_template=template
            )
            out[meta.name(machine)] = step.message
        except Requeue as exc:
            out[meta.name(machine)] = exc.message
            continue
        # ... and copies status.dataSecretName once the data exists, so the provider can use it this round.
        if not check and not capi_machine.bootstrap_ready(machine):
            fresh = store.get("Machine", meta.name(machine), ns)
            after = copy.deepcopy(fresh)
            if capi_machine.apply_bootstrap(after, store.get("KubeadmConfig", meta.name(config), ns)):
                refs.write(store, fresh, after)
    return out


def row(store, machine: dict, infra_kind: str, nodes: dict | None) -> dict:
    """One line of the final table: machine, role, host or system id, address, state, providerID, Node ready."""
    ns = meta.namespace(machine)
    spec, status = machine.get("spec") or {}, machine.get("status") or {}
    infra = refs.get_ref(store, spec.get("infrastructureRef"), ns)
    host = None
    if infra is not None:
        if infra_kind == "Metal3Machine":
            host = (meta.annotations(infra).get(names.HOST_ANNOTATION) or "").rpartition("/")[2] or None
        else:
            host = (infra.get("spec") or {}).get("systemID")
    addresses = status.get("addresses") or []
    address = next((a["address"] for a in addresses if a.get("type") == "InternalIP"), None) or next(
        (a["address"] for a in addresses if a.get("type") == "ExternalIP"), None
    )
    node_name = (status.get("nodeRef") or {}).get("name")
    ready = None
    if nodes is not None and node_name:
        ready = wl.node_ready(nodes[node_name]) == "True" if node_name in nodes else False
    return {
        "machine": meta.name(machine),
        "role": "control-plane" if kubeadm.is_control_plane(machine) else "worker",
        "host": host,
        "address": address,
        "state": status.get("phase") or capi_machine.phase(machine),
        "providerID": spec.get("providerID"),
        "node": node_name,
        "nodeReady": ready,
    }


class Converger:
    """Rounds over one cluster.  ``manager`` is a Metal3 or MAAS MachineManager (``step(name, ns, check)``)."""

    def __init__(
        self,
        store,
        manager,
        cluster_name: str,
        ns: str,
        *,
        infra_kind: str,
        workers: int = 8,
        token_ttl: int = 4 * 3600,
        kubeconfig: str | None = None,
        user_data_template=None,
    ):
        self.store = store
        self.manager = manager
        self.cluster_name = cluster_name
        self.ns = ns
        self.infra_kind = infra_kind
        self.workers = workers
        # Bare metal is slow to provision: a token outliving it, still refreshed while machines wait.
        self.token_ttl = token_ttl
        self.kubeconfig = kubeconfig
        self.user_data_template = user_data_template

    def _client(self):
        """The workload client (the module's kubeconfig, else the Secret's), or None while there is none."""
        try:
            return wl.client_for(self.store, self.cluster_name, self.ns, self.kubeconfig)
        except (CapiError, NotFound):
            return None

    def _nodes(self) -> dict | None:
        client = self._client()
        try:
            return {meta.name(n): n for n in client.list_nodes()} if client is not None else None
        except CapiError:
            return None

    def round(self, check: bool = False) -> dict:
        store, ns = self.store, self.ns
        cluster = store.get("Cluster", self.cluster_name, ns)
        changed = capi_cluster.reconcile(store, cluster, check=check).changed
        cluster = store.get("Cluster", self.cluster_name, ns)
        messages = []
        topo_done = True
        cp_ref = (cluster.get("spec") or {}).get("controlPlaneRef")
        kcp = refs.get_ref(store, cp_ref, ns) if cp_ref else None
        controllers = []
        if kcp is not None:
            controllers.append((kcp, control_plane.reconcile_control_plane))
        for md in store.list("MachineDeployment", ns):
            if (md.get("spec") or {}).get("clusterName") == self.cluster_name and not meta.is_deleting(md):
                controllers.append((md, deployment.reconcile_deployment))
        for obj, fn in controllers:
            if not capi_cluster.infrastructure_provisioned(cluster) and not check:
                topo_done = False
                messages.append("waiting for the cluster infrastructure")
                break
            step = fn(store, obj, cluster, check=check)
            changed |= step.changed
            topo_done &= step.done
            messages.append(f"{obj['kind']} {meta.name(obj)}: {step.message}")
        machines = cluster_machines(store, self.cluster_name, ns)
        cluster, init_changed = _mark_initialized(store, cluster, machines, check)
        changed |= init_changed
        boot = _bootstrap(
            store,
            cluster,
            machines,
            _tokens(store, cluster, self.kubeconfig),
            self.token_ttl,
            check,
            self.user_data_template,
        )

        def one(machine):
            infra = (machine.get("spec") or {}).get("infrastructureRef") or {}
            name = meta.name(machine)
            if meta.is_deleting(machine):
                if infra.get("name") and refs.get_ref(store, infra, ns) is not None:
                    return self.manager.step(infra["name"], ns, check=check)
                return capi_machine.reconcile_delete(store, machine, workload=self._client(), check=check)
            if infra.get("kind") != self.infra_kind or not infra.get("name"):
                return runner.Step(done=True, message=f"{name}: infrastructure {infra.get('kind')} is not ours")
            return self.manager.step(infra["name"], ns, check=check)

        results = runner.run(machines, one, key=meta.name, workers=self.workers, wait=False)
        nodes = self._nodes()
        rows = []
        for machine, res in zip(machines, results, strict=True):
            current = refs.get_or_none(store, "Machine", meta.name(machine), ns)
            r = (
                row(store, current or machine, self.infra_kind, nodes)
                if current
                else {
                    "machine": meta.name(machine),
                    "role": "control-plane" if kubeadm.is_control_plane(machine) else "worker",
                    "host": None,
                    "address": None,
                    "state": "Deleted",
                    "providerID": None,
                    "node": None,
                    "nodeReady": None,
                }
            )
            r["message"] = res.message or boot.get(meta.name(machine), "")
            r["failed"] = res.failed
            changed |= res.changed
            rows.append(r)
        live = [r for r in rows if r["state"] != "Deleted"]
        done = (
            topo_done
            and not any(r["failed"] for r in rows)
            and all(r["state"] == "Running" and r["nodeReady"] for r in live)
            and len(live) == len(rows)
        )
        return {"done": done, "changed": changed, "machines": rows, "messages": messages}

    def converge(
        self,
        *,
        timeout: float = 1800,
        poll: float = 2.0,
        check: bool = False,
        progress=None,
        clock=time.monotonic,
        sleep=time.sleep,
    ) -> dict:
        """Rounds until converged or the deadline; the last round's report plus ``rounds`` and ``timed_out``."""
        deadline = clock() + timeout
        changed = False
        seen: dict[str, tuple] = {}
        rounds = 0
        while True:
            rounds += 1
            report = self.round(check=check)
            changed |= report["changed"]
            if progress:
                for r in report["machines"]:
                    key = (r["state"], r["host"], r["nodeReady"], r["message"])
                    if seen.get(r["machine"]) != key:
                        seen[r["machine"]] = key
                        progress(r)
            if report["done"] or check or clock() >= deadline:
                break
            failed = [r for r in report["machines"] if r["failed"]]
            if failed:
                break
            sleep(poll)
        report.update(
            changed=changed, rounds=rounds, timed_out=not report["done"] and not check and clock() >= deadline
        )
        return report
