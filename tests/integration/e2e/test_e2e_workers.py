"""Worker rollouts and the MachineHealthCheck on the lab (Metal3, fake-hardware hosts, the node simulator).

Three workers rolled by provision_cluster.yml with ``max_surge: 0, max_unavailable: 1`` and then with
``max_surge: 1, max_unavailable: 0, min_ready_seconds: 15``: every write of a Machine to the store during the run
is journalled (a trigger on the sqlite store's table, so no state the controllers leave between their steps
is missed), and after each one the live Machines (not deleting) of the pool never leave
[replicas - maxUnavailable, replicas + maxSurge] and the available ones (Node Ready for minReadySeconds, as the
MachineSet counts them) never drop below replicas - maxUnavailable; every Machine is replaced, and with
min_ready_seconds no old Machine goes before a new one has been Ready that long.

Then a MachineHealthCheck without a remediation template (``unhealthyLessThanOrEqualTo: 1``): one worker whose
kubelet stops is marked, deleted and replaced by its MachineSet in the converge loop; two at once are
short-circuited - nothing is touched and the MachineHealthCheck says why.

Then ``OnDelete``: a new template replaces nothing (and the run finishes); the one Machine the user deletes is
replaced from the new MachineSet, the others stay.  Last, a pool whose kubelet never starts (a bad flag, so its
Node never registers) is remediated after the MachineHealthCheck's ``nodeStartupTimeoutSeconds``: deleted and
replaced by its MachineSet.
"""

from __future__ import annotations

import datetime
import json
import os
import random
import signal
import sqlite3
import subprocess
import time

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.capi import machineset
from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions, meta, names
from lab.config import REPO
from lab.nodesim import client as nodesim
from tests.integration.net import LOOP

from .conftest import E2E, free_endpoint, metal3_description, new_names

pytestmark = pytest.mark.timeout(3600)
REPLICAS = 3
MACHINE_KIND = "Machine.cluster.x-k8s.io"  # how the sqlite store's objects table names the kind


def _workers(e: E2E) -> list[dict]:
    """The Machines of pool md-0 (the rolled and health-checked one)."""
    return _pool(e.machines().values(), f"{e.name}-md-0")


class Journal:
    """Every write of a Machine to the test's sqlite store, by triggers on its objects table (test-only)."""

    def __init__(self, db: str):
        self.db = db
        script = [
            "CREATE TABLE IF NOT EXISTS test_machine_log (seq INTEGER PRIMARY KEY AUTOINCREMENT, at TEXT NOT NULL,"
            " name TEXT NOT NULL, body TEXT);"
        ]
        for op, row, body in (("INSERT", "NEW", "NEW.body"), ("UPDATE", "NEW", "NEW.body"), ("DELETE", "OLD", "NULL")):
            script.append(
                f"CREATE TRIGGER IF NOT EXISTS test_machine_{op.lower()} AFTER {op} ON objects"
                f" WHEN {row}.kind = '{MACHINE_KIND}' BEGIN INSERT INTO test_machine_log (at, name, body)"
                f" VALUES (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), {row}.name, {body}); END;"
            )
        con = sqlite3.connect(db, timeout=60)
        try:
            con.executescript("\n".join(script))
        finally:
            con.close()

    def mark(self) -> tuple[int, dict]:
        """The journal's position and the Machines as they are there (one read transaction)."""
        con = sqlite3.connect(self.db, timeout=60)
        try:
            con.execute("BEGIN")
            seq = con.execute("SELECT COALESCE(MAX(seq), 0) FROM test_machine_log").fetchone()[0]
            rows = con.execute("SELECT name, body FROM objects WHERE kind = ?", (MACHINE_KIND,)).fetchall()
            con.execute("COMMIT")
        finally:
            con.close()
        return seq, {n: json.loads(b) for n, b in rows}

    def replay(self, mark: tuple[int, dict]):
        """(time, Machines) after each write since ``mark``."""
        seq, state = mark[0], dict(mark[1])
        con = sqlite3.connect(self.db, timeout=60)
        try:
            rows = con.execute(
                "SELECT at, name, body FROM test_machine_log WHERE seq > ? ORDER BY seq", (seq,)
            ).fetchall()
        finally:
            con.close()
        for at, name, body in rows:
            if body is None:
                state.pop(name, None)
            else:
                state[name] = json.loads(body)
            yield datetime.datetime.fromisoformat(at.replace("Z", "+00:00")), state


def _pool(machines, pool: str) -> list[dict]:
    return [m for m in machines if meta.labels(m).get(names.DEPLOYMENT_NAME_LABEL) == pool]


def _roll(e: E2E, journal: Journal, desc: dict, surge: int, unavailable: int, max_pods: str, min_ready: int = 0):
    pool = desc["workers"][0]
    pool["rollout"] = {"strategy": "RollingUpdate", "max_surge": surge, "max_unavailable": unavailable}
    pool["kubelet_extra_args"] = {"max-pods": max_pods}  # a new KubeadmConfigTemplate: a new revision
    if min_ready:
        pool["min_ready_seconds"] = min_ready
    else:
        pool.pop("min_ready_seconds", None)
    e.rewrite(desc)
    md = f"{e.name}-md-0"
    before = {meta.name(m) for m in _workers(e)}
    if min_ready:
        # every Machine available by the new rule before the rollout starts (the last one of the previous
        # rollout may have been Ready for less): the bound is on what the rollout takes away
        since = max(machineset._parse(conditions.get(m, names.NODE_READY)["lastTransitionTime"]) for m in _workers(e))
        time.sleep(max(0.0, (since - machineset.now()).total_seconds() + min_ready + 2))
    mark = journal.mark()
    e.play("provision_cluster.yml")
    low, high = REPLICAS - unavailable, REPLICAS + surge
    writes, seen_low, seen_high = 0, REPLICAS, REPLICAS
    first_new_ready, first_old_deleting = None, None
    for at, state in journal.replay(mark):
        writes += 1
        machines = _pool(state.values(), md)
        live = [m for m in machines if not meta.is_deleting(m)]
        available = [m for m in live if machineset.is_available(m, min_ready, at)]
        where = f"after write {writes} at {at}: {sorted(meta.name(m) for m in live)} live, {len(available)} available"
        assert low <= len(live) <= high, f"maxSurge {surge} maxUnavailable {unavailable}: {where}"
        assert len(available) >= low, f"maxSurge {surge} maxUnavailable {unavailable}: {where}"
        seen_low, seen_high = min(seen_low, len(available)), max(seen_high, len(live))
        for m in machines:
            if meta.name(m) not in before and machineset.is_ready(m) and first_new_ready is None:
                first_new_ready = machineset._parse(conditions.get(m, names.NODE_READY)["lastTransitionTime"])
            if meta.name(m) in before and meta.is_deleting(m) and first_old_deleting is None:
                first_old_deleting = at
    assert writes, "no Machine write journalled"
    # the rollout used what it was allowed: a surge with maxSurge 1, one fewer available with maxUnavailable 1
    assert (seen_high > REPLICAS) == (surge > 0) and (seen_low < REPLICAS) == (unavailable > 0), (seen_low, seen_high)
    if min_ready:
        # minReadySeconds held the rollout back: no old Machine went before a new one had been Ready that long
        assert first_new_ready is not None and first_old_deleting is not None
        held = (first_old_deleting - first_new_ready).total_seconds()
        assert held >= min_ready, f"the first old Machine went {held:.1f}s after a new Node was Ready"
    workers = _workers(e)
    assert len(workers) == REPLICAS and not before & {meta.name(m) for m in workers}
    assert all(conditions.is_true(m, names.NODE_READY) for m in workers)


def test_worker_rollouts_and_health_check(e2e_lab, ironic_inventory, tmp_path):
    inv = ironic_inventory
    name, ns = new_names("w")
    desc = metal3_description(name, ns, free_endpoint(f"{LOOP}.9"), inv, random.randint(100, 199))
    # 1 control plane, 3 workers, hosts spare for the surge and the replacements
    desc["hosts"] = _hosts(name, desc, 6)
    desc["workers"][0]["replicas"] = REPLICAS
    driver = {"ironic_url": inv["ironic"]["url"], "boot_iso": inv["images"]["boot_iso"], "poll": 1}
    e = E2E(e2e_lab, tmp_path, "metal3", desc, {"capi_host_driver_options": driver, "capi_no_log_hosts": False})
    try:
        e.play("provision_cluster.yml")
        journal = Journal(e.db)
        _roll(e, journal, desc, 0, 1, "100")
        _roll(e, journal, desc, 1, 0, "110", min_ready=15)
        _health_check(e, journal, name, ns)
        _on_delete(e, desc, ns)
        _node_startup_timeout(e, journal, desc, name, ns, tmp_path)
    finally:
        e.play("deprovision_cluster.yml", {"capi_deregister_hosts": True}, expect_ok=False)


def _hosts(name: str, desc: dict, count: int) -> list[dict]:
    template = desc["hosts"][0]
    octet = template["hardware"]["nics"][0]["ip"].split(".")[2]
    out = []
    for i in range(count):
        mac = f"52:54:00:{int(name[1:3], 16):02x}:{int(name[3:5], 16):02x}:{i:02x}"
        out.append({
            "name": f"{name}-host-{i}",
            "spec": {**template["spec"], "bmc": {"address": f"fake://{name}-host-{i}"}, "bootMACAddress": mac},
            "hardware": {"hostname": f"{name}-host-{i}",
                         "nics": [{"name": "enp1s0", "mac": mac, "ip": f"{LOOP}.{octet}.{10 + i}"}]},
        })  # fmt: skip
    return out


def _history(journal: Journal, mark, name: str) -> list[dict]:
    """Every state of Machine ``name`` the journal has since ``mark``."""
    return [state[name] for _at, state in journal.replay(mark) if name in state]


def _reasons(history: list[dict], ctype: str) -> set[tuple]:
    """The (status, reason) pairs condition ``ctype`` had over ``history``."""
    return {(c["status"], c["reason"]) for c in (conditions.get(m, ctype) for m in history) if c}


def _health_check(e: E2E, journal: Journal, name: str, ns: str) -> None:
    s = e.store()
    try:
        s.create(
            meta.new(
                "MachineHealthCheck",
                f"{name}-workers",
                ns,
                spec={
                    "clusterName": name,
                    "selector": {"matchLabels": {names.DEPLOYMENT_NAME_LABEL: f"{name}-md-0"}},
                    "checks": {
                        "nodeStartupTimeoutSeconds": 600,
                        "unhealthyNodeConditions": [{"type": "Ready", "status": "Unknown", "timeoutSeconds": 5}],
                    },
                    "remediation": {"triggerIf": {"unhealthyLessThanOrEqualTo": 1}},
                },
            )
        )
    finally:
        s.close()
    endpoint = e.host_vars["capi_cluster"]["control_plane_endpoint"]
    cluster_endpoint = f"{endpoint['host']}:{endpoint['port']}"

    def node_of(m):
        return m["status"]["nodeRef"]["name"]

    def unknown(node):
        from kubernetes import client as k8s

        core = k8s.CoreV1Api(e.workload_api())
        c = next(c for c in core.read_node(node).status.conditions if c.type == "Ready")
        return c.status == "Unknown"

    def ready(node):
        from kubernetes import client as k8s

        core = k8s.CoreV1Api(e.workload_api())
        c = next(c for c in core.read_node(node).status.conditions if c.type == "Ready")
        return c.status == "True"

    def wait(what, fn, patience=300):
        deadline = time.monotonic() + patience
        while not fn():
            if time.monotonic() > deadline:
                pytest.fail(f"{what}: not after {patience}s")
            time.sleep(1)

    # one of three unhealthy: marked, deleted and replaced by its MachineSet in the converge loop
    (sick, *_rest) = sorted(_workers(e), key=meta.name)
    nodesim.stop_kubelet(e.lab.cfg, node_of(sick), cluster=cluster_endpoint)
    wait(f"{node_of(sick)} Unknown", lambda: unknown(node_of(sick)))
    time.sleep(6)  # past the check's 5 s
    mark = journal.mark()
    e.play("provision_cluster.yml")
    workers = _workers(e)
    assert meta.name(sick) not in {meta.name(m) for m in workers} and len(workers) == REPLICAS
    assert all(conditions.is_true(m, names.NODE_READY) for m in workers)
    history = _history(journal, mark, meta.name(sick))  # marked by the health check, deleted by its MachineSet
    assert ("False", "UnhealthyNode") in _reasons(history, names.HEALTH_CHECK_SUCCEEDED), history[-1]["status"]
    assert ("False", "MachineDeleting") in _reasons(history, names.OWNER_REMEDIATED), history[-1]["status"]

    # two of three: more than unhealthyLessThanOrEqualTo 1, short-circuited, nothing touched, the reason reported
    two = sorted(workers, key=meta.name)[:2]
    for m in two:
        nodesim.stop_kubelet(e.lab.cfg, node_of(m), cluster=cluster_endpoint)
    for m in two:
        wait(f"{node_of(m)} Unknown", lambda m=m: unknown(node_of(m)))
    time.sleep(6)
    before = {meta.name(m) for m in _workers(e)}
    run = subprocess.run(
        e.argv("remediate.yml", {"capi_health_check": f"{name}-workers", "capi_namespace": ns,
                                 "capi_store": {"kind": "sqlite", "path": e.db}}),
        cwd=REPO, env=e.env, capture_output=True, text=True,
    )  # fmt: skip
    assert run.returncode == 0, (run.stdout + run.stderr)[-6000:]
    assert "remediation not allowed" in run.stdout and "TooManyUnhealthy" not in run.stderr
    s = e.store()
    try:
        mhc = s.get("MachineHealthCheck", f"{name}-workers", ns)
        machines = [m for m in s.list("Machine", ns) if meta.name(m) in before]
    finally:
        s.close()
    cond = conditions.get(mhc, "RemediationAllowed")
    assert (cond["status"], cond["reason"]) == ("False", "TooManyUnhealthy"), cond
    assert "total: 3, unhealthy: 2" in cond["message"]
    assert {meta.name(m) for m in machines} == before and not any(meta.is_deleting(m) for m in machines)
    assert not any(conditions.get(m, names.OWNER_REMEDIATED) for m in machines)
    for m in two:
        nodesim.start_kubelet(e.lab.cfg, node_of(m), cluster=cluster_endpoint)
    for m in two:
        wait(f"{node_of(m)} Ready again", lambda m=m: ready(node_of(m)))


def _on_delete(e: E2E, desc: dict, ns: str) -> None:
    """OnDelete: a new template rolls nothing (the run finishes); a Machine the user deletes comes back new."""
    pool = desc["workers"][0]
    pool["rollout"] = {"strategy": "OnDelete"}
    pool["kubelet_extra_args"] = {"max-pods": "120"}  # a new revision
    e.rewrite(desc)
    before = {meta.name(m): m for m in _workers(e)}
    e.play("provision_cluster.yml")
    assert set(before) == {meta.name(m) for m in _workers(e)}, "OnDelete replaced Machines by itself"
    s = e.store()
    try:
        sets = s.list("MachineSet", ns, {"matchLabels": {names.DEPLOYMENT_NAME_LABEL: f"{e.name}-md-0"}})
        (old_set,) = {meta.labels(m)[names.SET_NAME_LABEL] for m in before.values()}
        (new_set,) = [meta.name(ms) for ms in sets if meta.name(ms) != old_set]
        victim = sorted(before)[1]
        s.delete("Machine", victim, ns)  # the user's kubectl delete machine
    finally:
        s.close()
    e.play("provision_cluster.yml")
    workers = {meta.name(m): m for m in _workers(e)}
    assert len(workers) == REPLICAS and set(workers) >= set(before) - {victim} and victim not in workers
    (fresh,) = set(workers) - set(before)
    assert meta.labels(workers[fresh])[names.SET_NAME_LABEL] == new_set
    assert {meta.labels(workers[n])[names.SET_NAME_LABEL] for n in set(before) - {victim}} == {old_set}
    assert all(conditions.is_true(m, names.NODE_READY) for m in workers.values())


def _node_startup_timeout(e: E2E, journal: Journal, desc: dict, name: str, ns: str, tmp_path) -> None:
    """A pool whose kubelet never starts: its Node never registers, remediated after nodeStartupTimeoutSeconds."""
    late_pool = f"{name}-md-late"
    s = e.store()
    try:
        s.create(
            meta.new(
                "MachineHealthCheck",
                f"{name}-late",
                ns,
                spec={
                    "clusterName": name,
                    "selector": {"matchLabels": {names.DEPLOYMENT_NAME_LABEL: late_pool}},
                    "checks": {
                        "nodeStartupTimeoutSeconds": 30,
                        "unhealthyNodeConditions": [{"type": "Ready", "status": "Unknown", "timeoutSeconds": 60}],
                    },
                },
            )
        )
    finally:
        s.close()
    md0 = desc["workers"][0]
    # a kubelet flag the kubelet refuses (--node-labels without '='): it never starts, no Node registers
    late = {"name": "md-late", "replicas": 1, "image": md0["image"], "automated_cleaning_mode": "disabled",
            "kubelet_extra_args": {"node-labels": "no-equals-sign"}}  # fmt: skip
    e.rewrite({**desc, "workers": [md0, late]})
    mark = journal.mark()
    log = open(tmp_path / "late-run.log", "w")  # noqa: SIM115
    proc = subprocess.Popen(e.argv("provision_cluster.yml"), cwd=REPO, env=e.env, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
    first = replaced = None
    try:
        deadline = time.monotonic() + 900
        while time.monotonic() < deadline and replaced is None:
            assert proc.poll() is None, (tmp_path / "late-run.log").read_text()[-6000:]
            machines = _pool(e.machines().values(), late_pool)
            if first is None and machines:
                first = meta.name(machines[0])
            others = [m for m in machines if meta.name(m) != first and not meta.is_deleting(m)]
            if first is not None and others and all(meta.name(m) != first or meta.is_deleting(m) for m in machines):
                replaced = meta.name(others[0])
            time.sleep(1)
    finally:
        if proc.poll() is None:  # the pool never gets a Node: the run would wait out its timeout
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        log.close()
    history = _history(journal, mark, first) if first else []
    last = history[-1] if history else {}
    assert replaced is not None, f"{first} not replaced; last seen: {last.get('status')}"
    assert not any((m.get("status") or {}).get("nodeRef") for m in history), "the Node registered after all"
    timed_out = [
        c for c in (conditions.get(m, names.HEALTH_CHECK_SUCCEEDED) for m in history)
        if c and (c["status"], c["reason"]) == ("False", "NodeStartupTimeout")
    ]  # fmt: skip
    assert timed_out and "no Node after 30s" in timed_out[0]["message"], last.get("status")
    assert ("False", "MachineDeleting") in _reasons(history, names.OWNER_REMEDIATED), last.get("status")
