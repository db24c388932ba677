# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A whole cluster's machines converged: what the Cluster API controllers do together.

What the controllers do, for one Cluster (``round`` does each once; ``converge`` runs
1-4 as one loop item and 5 as one item per Machine, each advancing on its own):

1. the Cluster marks its infrastructure provisioned (capi.cluster);
2. the KubeadmControlPlane and every MachineDeployment take one step
   (capi.topology: create or delete at most what that controller would);
3. the Cluster's ``controlPlaneInitialized`` is set once kubeadm init has
   uploaded ``kube-system/kubeadm-config`` to the workload cluster (KCP's rule);
4. every KubeadmConfig without data gets it (bootstrap.kubeadm), joins with a
   bootstrap token written into the workload cluster;
5. every infrastructure machine takes one provider step (Metal3 or MAAS
   manager), concurrently, and deleting Machines take one CAPI delete step.

``converge`` steps each item as soon as its own delay allows (no round
barrier, adaptive polls, docs/architecture.md "The loop") until nothing is
left to do or the deadline passes.  Every step is idempotent: interrupted
anywhere, the next run picks up from the store.
"""

from __future__ import annotations

import threading
import time

from ansible_collections.baremetal.capi.plugins.module_utils import runner
from ansible_collections.baremetal.capi.plugins.module_utils.bootstrap import certificates, kubeadm
from ansible_collections.baremetal.capi.plugins.module_utils.bootstrap import cluster as bootstrap_cluster
from ansible_collections.baremetal.capi.plugins.module_utils.capi import addons, control_plane, deployment, refs
from ansible_collections.baremetal.capi.plugins.module_utils.capi import cluster as capi_cluster
from ansible_collections.baremetal.capi.plugins.module_utils.capi import machine as capi_machine
from ansible_collections.baremetal.capi.plugins.module_utils.capi import workload as wl
from ansible_collections.baremetal.capi.plugins.module_utils.errors import CapiError, NotFound, Requeue
from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions, meta, names
from ansible_collections.baremetal.capi.plugins.module_utils.remediation import health_check
from ansible_collections.baremetal.capi.plugins.module_utils.store import mutate as rmw

CONTROL_PLANE_INITIALIZED = "ControlPlaneInitialized"


def cluster_machines(store, cluster_name: str, ns: str) -> list[dict]:
    return store.list("Machine", ns, {"matchLabels": {names.CLUSTER_NAME_LABEL: cluster_name}})


def _kubeadm_init_done(machines: list[dict], workload) -> bool:
    """KCP's rule: kubeadm init has uploaded kube-system/kubeadm-config to the workload cluster
    (ClusterStatus.HasKubeadmConfig); asked only while a control-plane Machine exists."""
    if workload is None or not any(kubeadm.is_control_plane(m) for m in machines):
        return False
    try:
        return workload.has_kubeadm_config()
    except CapiError:  # the workload API does not answer yet
        return False


def _mark_initialized(store, cluster: dict, machines: list[dict], check: bool, workload=None) -> tuple[dict, bool]:
    """KCP sets controlPlaneInitialized once kubeadm init has uploaded its configuration to the workload cluster;
    the joins' bootstrap data waits for it (CABPK)."""
    if kubeadm.control_plane_initialized(cluster):
        return cluster, False
    if not _kubeadm_init_done(machines, workload):
        return cluster, False
    if check:
        return cluster, True

    def initialized(c: dict) -> bool:
        if kubeadm.control_plane_initialized(c):
            return False
        c.setdefault("status", {}).setdefault("initialization", {})["controlPlaneInitialized"] = True
        conditions.set_condition(c, CONTROL_PLANE_INITIALIZED, True, "Initialized")
        return True

    try:
        cluster = rmw.mutate(store, "Cluster", meta.name(cluster), meta.namespace(cluster), initialized, status=True)
    except Requeue:  # others keep writing the Cluster: the next round marks it
        return cluster, False
    kubeadm.release_init_lock(store, cluster)
    return cluster, True


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
        "nodeNotReady": wl.node_ready_message(nodes.get(node_name)) if nodes and node_name else None,
        **certificates.report(store, machine),  # caExpiry, certificatesExpiry
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
        deregister_hosts=(),
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
        # BareMetalHosts deleted (deprovisioned, their Ironic node deleted) as soon as their Machine is gone:
        # what deleting the hosts with the cluster does, each host on its own instead of all after the last
        self.deregister_hosts = frozenset(deregister_hosts)

    def delete_host(self, name: str) -> runner.Step:
        """One step of a BareMetalHost's deletion (the host driver's, as the baremetalhost module's absent)."""
        return self.manager.driver.delete(self.store, (self.ns, name))

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

    def cluster_step(self, check: bool = False) -> dict:
        """What the cluster-level controllers do once: Cluster, KCP, MachineDeployments, init, bootstrap."""
        store, ns = self.store, self.ns
        cluster = store.get("Cluster", self.cluster_name, ns)
        changed = capi_cluster.reconcile(store, cluster, check=check).changed
        cluster = store.get("Cluster", self.cluster_name, ns)
        changed |= health_check.reconcile_cluster(store, cluster, workload=self._client(), check=check)
        messages = []
        topo_done = True
        cp_ref = (cluster.get("spec") or {}).get("controlPlaneRef")
        kcp = refs.get_ref(store, cp_ref, ns) if cp_ref else None
        controllers = []
        if kcp is not None:
            controllers.append((kcp, control_plane.reconcile_control_plane))
        elif cp_ref:
            changed |= control_plane.release_orphaned_hooks(store, cluster, check=check)
        for md in store.list("MachineDeployment", ns):
            if (md.get("spec") or {}).get("clusterName") == self.cluster_name and not meta.is_deleting(md):
                controllers.append((md, deployment.reconcile_deployment))
        for obj, fn in controllers:
            if not capi_cluster.infrastructure_provisioned(cluster) and not check:
                topo_done = False
                messages.append("waiting for the cluster infrastructure")
                break
            hold = obj["kind"] == "MachineDeployment" and control_plane.deployment_version_hold(store, cluster, obj)
            step = runner.Step(done=False, message=hold) if hold else fn(store, obj, cluster, check=check)
            changed |= step.changed
            topo_done &= step.done
            messages.append(f"{obj['kind']} {meta.name(obj)}: {step.message}")
        machines = cluster_machines(store, self.cluster_name, ns)
        workload = self._client()
        cluster, init_changed = _mark_initialized(store, cluster, machines, check, workload)
        changed |= init_changed
        changed |= addons.reconcile_cluster(store, cluster, workload=workload, check=check)
        configs = bootstrap_cluster.reconcile_configs(
            store,
            cluster,
            machines,
            tokens=bootstrap_cluster.workload_tokens(store, cluster, self.kubeconfig),
            token_ttl=self.token_ttl,
            check=check,
            template=self.user_data_template,
        )
        boot = {c["machine"]: c.get("message") for c in configs}
        return {"changed": changed, "done": topo_done, "messages": messages, "boot": boot, "machines": machines}

    def machine_step(self, machine: dict, check: bool = False) -> runner.Step:
        """One step of one Machine: its provider's, or the CAPI delete step while it is deleting."""
        store, ns = self.store, self.ns
        infra = (machine.get("spec") or {}).get("infrastructureRef") or {}
        name = meta.name(machine)
        if meta.is_deleting(machine):
            obj = refs.get_ref(store, infra, ns) if infra.get("name") else None
            infra_changed = False
            if obj is not None and meta.is_deleting(obj):
                step = self.manager.step(infra["name"], ns, check=check)
                if check or not step.done:
                    return step
                infra_changed = step.changed
                # the infrastructure machine is gone: the Machine's deletion goes on at once, as the watch on it
                # wakes Cluster API's Machine controller
                machine = refs.get_or_none(store, "Machine", name, ns)
                if machine is None:
                    return step
            # Cluster API's Machine reconcileDelete deletes the infrastructure machine itself: the provider's
            # normal flow (which would reach it) stops short for a machine that never got a host or a MAAS
            # machine ("No available host"), and deprovisioning waited on it forever.
            out = capi_machine.reconcile_delete(store, machine, workload=self._client(), check=check)
            out.changed = out.changed or infra_changed
            return out
        if infra.get("kind") != self.infra_kind or not infra.get("name"):
            return runner.Step(done=True, message=f"{name}: infrastructure {infra.get('kind')} is not ours")
        return self.manager.step(infra["name"], ns, check=check)

    def machine_row(self, machine: dict, nodes) -> dict:
        """The Machine's row as it is now (``nodes``: a dict, or a callable giving it); Deleted once it is gone."""
        return self.row_of(machine, refs.get_or_none(self.store, "Machine", meta.name(machine), self.ns), nodes)

    def row_of(self, machine: dict, current: dict | None, nodes) -> dict:
        """The row of ``current``, the Machine as just read (None: gone, Deleted)."""
        if current is None:
            return {
                "machine": meta.name(machine),
                "role": "control-plane" if kubeadm.is_control_plane(machine) else "worker",
                "host": None,
                "address": None,
                "state": "Deleted",
                "providerID": None,
                "node": None,
                "nodeReady": None,
                "nodeNotReady": None,
            }
        if callable(nodes):
            nodes = nodes() if (current.get("status") or {}).get("nodeRef") else None
        return row(self.store, current, self.infra_kind, nodes)

    def round(self, check: bool = False) -> dict:
        """One step of everything: the cluster-level controllers, then every machine (check mode's plan)."""
        cstep = self.cluster_step(check=check)
        changed, messages, boot, machines = cstep["changed"], cstep["messages"], cstep["boot"], cstep["machines"]
        results = runner.run(
            machines, lambda m: self.machine_step(m, check=check), key=meta.name, workers=self.workers, wait=False
        )
        nodes = self._nodes()
        rows = []
        for machine, res in zip(machines, results, strict=True):
            r = self.machine_row(machine, nodes)
            r["message"] = res.message or boot.get(meta.name(machine), "")
            r["failed"] = res.failed
            changed |= res.changed
            rows.append(r)
        live = [r for r in rows if r["state"] != "Deleted"]
        done = (
            cstep["done"]
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
        until=None,
        clock=time.monotonic,
        abort=None,
    ) -> dict:
        """Every machine advancing on its own until converged, ``until(rows)``, or the deadline.

        No rounds: one loop item for the cluster-level controllers, one per Machine (see docs/architecture.md,
        "The loop").  ``progress(row, timing)`` is called, on this thread, whenever a machine's row changes.
        ``abort()`` true ends the loop after the steps in flight (nobody is waiting for the result any more).
        Check mode is one round: the plan.
        """
        if check:
            report = self.round(check=True)
            report.update(rounds=1, steps=1 + len(report["machines"]), timed_out=False)
            return report
        return _Loop(self, timeout=timeout, poll=poll, progress=progress, until=until, clock=clock, abort=abort).run()


def _row_key(r: dict) -> tuple:
    return tuple(str(r.get(k)) for k in ("state", "host", "address", "nodeReady", "providerID", "message"))


class _Loop:
    """Converger.converge's state: the items, the rows, what moved (runner.Loop does the scheduling)."""

    CLUSTER = "\0cluster"  # no Machine can have this name
    HOST = "\0host:"  # a BareMetalHost being deleted (deregister_hosts): "\0host:<name>"

    def __init__(self, conv: Converger, *, timeout, poll, progress, until, clock, abort=None):
        self.conv, self.progress, self.until, self.clock = conv, progress, until, clock
        self.loop = runner.Loop(workers=conv.workers, timeout=timeout, poll_max=poll, clock=clock, abort=abort)
        self.start = clock()
        self.rows: dict[str, dict] = {}
        self.seen: dict[str, tuple] = {}
        self.last_move: dict[str, float] = {}
        self.machines: dict[str, dict] = {}
        self.host_of: dict[str, str] = {}  # Machine -> the BareMetalHost its rows named
        self.hosts_deleting: dict[str, dict] = {}  # BareMetalHost -> its last row
        self.cluster: dict = {"changed": False, "done": False, "messages": [], "boot": {}}
        self.changed = False
        self.cluster_steps = 0
        self._nodes_at = -1.0
        self._nodes_cache = None
        self._nodes_lock = threading.Lock()

    def nodes(self):
        """The workload cluster's Nodes, read at most once a second however many machines ask."""
        with self._nodes_lock:
            now = self.clock()
            if self._nodes_cache is None or now - self._nodes_at >= 1.0:
                self._nodes_cache, self._nodes_at = self.conv._nodes(), now
            return self._nodes_cache

    def add_machine(self, machine: dict) -> None:
        name = meta.name(machine)
        self.machines[name] = machine

        def step():
            # read again: the cluster item may have started deleting it since it was listed
            current = refs.get_or_none(self.conv.store, "Machine", name, self.conv.ns)
            if current is None:
                return runner.Step(done=True, message="deleted", data={"row": self.conv.machine_row(machine, None)})
            try:
                res = self.conv.machine_step(current)
            except Requeue as exc:  # the row is still wanted: what the machine waits for
                res = runner.Step(done=False, message=exc.message, requeue_after=exc.after)
            current = refs.get_or_none(self.conv.store, "Machine", name, self.conv.ns)
            r = self.conv.row_of(machine, current, self.nodes)
            # Done once the Node is Ready and the Machine says so: a Node that turned Ready (its CNI came up)
            # after this step read it is recorded by the next step, not left to the next run.
            recorded = current is not None and conditions.is_true(current, names.NODE_READY)
            done = r["state"] == "Deleted" or (
                res.done and r["state"] == "Running" and bool(r["nodeReady"]) and recorded
            )
            return runner.Step(done=done, changed=res.changed, message=res.message, requeue_after=res.requeue_after,
                               data={"row": r})  # fmt: skip

        self.loop.add(name, step)

    def add_host_deletion(self, name: str) -> None:
        if name in self.hosts_deleting:
            return
        self.hosts_deleting[name] = {"machine": name, "role": "host", "state": "Deleting", "host": name}
        self.last_move[self.HOST + name] = self.clock()
        self.loop.add(self.HOST + name, lambda: self.conv.delete_host(name))

    def on_host_step(self, key: str, res: runner.Result, step) -> bool:
        name = key[len(self.HOST) :]
        if step is not None:
            self.changed |= step.changed
        row = dict(self.hosts_deleting[name])
        row["state"] = "Deleted" if res.done else "Deleting"
        row["message"], row["failed"] = res.message, res.failed
        moved = row != self.hosts_deleting[name]
        self.hosts_deleting[name] = row
        if moved and self.progress:
            now = self.clock()
            self.progress(row, {"elapsed": now - self.start, "since": now - self.last_move.get(key, self.start),
                                "steps": res.steps, "step_seconds": res.data.get("step_seconds")})  # fmt: skip
            self.last_move[key] = now
        if res.done:
            self._stop_if_until()
        return moved

    def cluster_item(self) -> runner.Step:
        out = self.conv.cluster_step()
        return runner.Step(done=out["done"], changed=out["changed"], message="; ".join(out["messages"]), data=out)

    def on_step(self, key: str, res: runner.Result, step) -> bool:
        if key.startswith(self.HOST):
            return self.on_host_step(key, res, step)
        now = self.clock()
        if key == self.CLUSTER:
            self.cluster_steps += 1
            if step is None:  # the cluster item failed: retried by the loop, the machines go on
                return False
            self.changed |= step.changed
            out = step.data
            if not out:  # requeued (a Conflict with another writer, a wait) before it said anything: nothing moved
                return False
            self.cluster = {k: out[k] for k in ("changed", "done", "messages", "boot")}
            moved = out["changed"] or {meta.name(m) for m in out["machines"]} != set(self.machines)
            for machine in out["machines"]:
                if meta.name(machine) not in self.machines:
                    self.add_machine(machine)
                self.machines[meta.name(machine)] = machine
            if moved:
                for name in self.machines:
                    self.loop.kick(name)
            return moved
        if step is not None and step.data.get("row"):
            r = dict(step.data["row"])
            self.changed |= step.changed
        else:  # an error or a conflict: the row as the store has it now
            r = self.conv.machine_row(self.machines[key], self.nodes)
        r["message"] = res.message or self.cluster["boot"].get(key, "")
        r["failed"] = res.failed
        self.rows[key] = r
        if r.get("host"):
            self.host_of[key] = r["host"]
        moved = self.seen.get(key) != _row_key(r)
        if moved:
            self.seen[key] = _row_key(r)
            if self.progress:
                since = now - self.last_move.get(key, self.start)
                self.progress(r, {"elapsed": now - self.start, "since": since, "steps": res.steps,
                                  "step_seconds": res.data.get("step_seconds")})  # fmt: skip
            self.last_move[key] = now
            # The cluster-level controllers act on machine states (joins wait for Nodes, scale-down for deletes).
            self.loop.kick(self.CLUSTER)
        if r["state"] == "Deleted":  # gone from the store: out of the loop and the table
            host = self.host_of.pop(key, None)
            if host in self.conv.deregister_hosts:  # released by its Machine's deletion: deleted now
                self.add_host_deletion(host)
            self.loop.remove(key)
            self.machines.pop(key, None)
            self.rows.pop(key, None)
        self._stop_if_until()
        return moved

    def _stop_if_until(self) -> None:
        """``until`` ends the loop early, but not before the hosts being deleted are gone."""
        hosts_pending = any(r["state"] != "Deleted" and not r.get("failed") for r in self.hosts_deleting.values())
        if self.until is not None and not hosts_pending and self.until(self._rows_so_far()):
            self.loop.stop()

    def _rows_so_far(self) -> list[dict]:
        """The rows, and the machines not stepped yet by their role only: ``until`` sees every Machine."""
        out = list(self.rows.values())
        for name, machine in self.machines.items():
            if name not in self.rows:
                role = "control-plane" if kubeadm.is_control_plane(machine) else "worker"
                out.append({"machine": name, "role": role, "state": None, "message": ""})
        return out

    def run(self) -> dict:
        self.loop.add(self.CLUSTER, self.cluster_item)
        results = self.loop.run(self.on_step)
        # The table as the store has it at the end: a machine's last row was taken at its own last step, and
        # the cluster item may have written since (the certificates-expiry annotation once its Node exists).
        for key, old in list(self.rows.items()):
            if key not in self.machines:
                continue
            now = self.conv.machine_row(self.machines[key], self.nodes)
            if now["state"] == "Deleted":  # gone since its last step
                self.rows.pop(key)
                self.machines.pop(key)
            else:
                self.rows[key] = {**now, "message": old.get("message"), "failed": old.get("failed")}
        rows = [self.rows[k] for k in self.machines if k in self.rows]
        cluster_res = results.get(self.CLUSTER)
        messages = list(self.cluster["messages"])
        if cluster_res is not None and cluster_res.failed:
            messages.append(cluster_res.message)
        live = [r for r in rows if r["state"] != "Deleted"]
        done = (
            cluster_res is not None
            and cluster_res.done
            and not cluster_res.failed
            and len(rows) == len(self.machines)
            and not any(r["failed"] for r in rows)
            and all(r["state"] == "Running" and r["nodeReady"] for r in live)
            and len(live) == len(rows)
        )
        hosts_failed = [f"BareMetalHost {self.conv.ns}/{n}: {r.get('message')}" for n, r in self.hosts_deleting.items()
                        if r["state"] != "Deleted"]  # fmt: skip
        messages.extend(hosts_failed)
        done = done and not hosts_failed
        stopped = self.until is not None and self.until(rows)
        return {
            "done": done,
            "changed": self.changed,
            "machines": rows,
            "messages": messages,
            "rounds": self.cluster_steps,
            "steps": self.loop.steps,
            "timed_out": not done and not stopped and self.loop.timed_out,
            "hosts_deleted": sorted(n for n, r in self.hosts_deleting.items() if r["state"] == "Deleted"),
        }
