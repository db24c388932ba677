"""What the control-plane upgrade tests share (Metal3 and MAAS): the description edits, the order and membership
assertions over a Watch's samples, and a playbook killed with -9 at a moment of the upgrade chosen by the store.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time

import yaml

from lab.config import REPO

from .watch import CP_LABEL, Watch

NEW_MACHINE, CP_DELETING, CP_GONE, WORKER_NEW, WORKER_DELETING = (
    "a new control-plane machine created",
    "an old control-plane machine deleting",
    "an old control-plane machine gone",
    "a new worker machine created",
    "an old worker machine deleting",
)
# kill -9 points, in the order an upgrade passes them; each is an event of the killed run itself (compared with
# the store when the run started), so that every kill lands inside the convergence, never in the preamble
KILL_POINTS = (NEW_MACHINE, CP_DELETING, CP_GONE, WORKER_NEW, WORKER_DELETING)


def set_description(e, **changes) -> dict:
    """Edit the cluster description in the test's inventory (``a.b`` keys reach into nested maps)."""
    path = f"{e.inventory}/host_vars/{e.name}.yml"
    with open(path) as fh:
        host_vars = yaml.safe_load(fh)
    desc = host_vars["capi_cluster"]
    for key, value in changes.items():
        target = desc
        *head, last = key.split(".")
        for k in head:
            target = target.setdefault(k, {})
        target[last] = value
    with open(path, "w") as fh:
        yaml.safe_dump(host_vars, fh, sort_keys=False)
    return desc


def is_cp(m: dict) -> bool:
    return CP_LABEL in m["metadata"]["labels"]


def cp_nodes(machines: dict[str, dict]) -> list[str]:
    return sorted(m["status"]["nodeRef"]["name"] for m in machines.values() if is_cp(m))


def cp_members(w: Watch, machines: dict[str, dict]) -> list[str] | None:
    """The etcd member list as the cluster's members answer it now (the test's own etcd client)."""
    from kubernetes import client as k8s

    nodes = {}
    for n in k8s.CoreV1Api(w.e.workload_api()).list_node().items:
        nodes[n.metadata.name] = {"addresses": [a.address for a in n.status.addresses if a.type == "InternalIP"]}
    s = w.e.store()
    try:
        return w.members(s, [m for m in machines.values() if is_cp(m)], nodes)
    finally:
        s.close()


def assert_rolled_in_order(w: Watch, replicas: int, surge: int, new_version: str) -> None:
    """One control-plane machine at a time (never above replicas + maxSurge, never below replicas - (1 - maxSurge)
    live), and no worker at the new version while any control-plane Machine, deleting ones included, is not."""
    assert w.samples, "the watch took no sample"
    live = [sum(1 for v in s["machines"].values() if v["cp"] and not v["deleting"]) for s in w.samples]
    total = [sum(1 for v in s["machines"].values() if v["cp"]) for s in w.samples]
    assert max(total) <= replicas + surge, total
    assert min(live) >= replicas - (1 - surge), live
    for s in w.samples:
        workers_new = [n for n, v in s["machines"].items() if not v["cp"] and v["version"] == new_version]
        if workers_new:
            cp_versions = {v["version"] for v in s["machines"].values() if v["cp"]}
            assert cp_versions == {new_version}, (workers_new, s)


def assert_replaced_one_at_a_time(w: Watch, before: set[str]) -> None:
    """The old control-plane machines went one after another: never two of them deleting at once."""
    for s in w.samples:
        deleting = [n for n, v in s["machines"].items() if v["cp"] and v["deleting"] and n in before]
        assert len(deleting) <= 1, (deleting, s)


def _event(point: str, start: dict[str, dict], now: dict[str, dict]) -> bool:
    def gone_or_deleting(m):
        return m not in now or now[m]["deleting"]

    if point == NEW_MACHINE:
        return any(v["cp"] for n, v in now.items() if n not in start)
    if point == CP_DELETING:
        return any(v["cp"] and not v["deleting"] and gone_or_deleting(n) for n, v in start.items())
    if point == CP_GONE:
        return any(v["cp"] and n not in now for n, v in start.items())
    if point == WORKER_NEW:
        return any(not v["cp"] for n, v in now.items() if n not in start)
    if point == WORKER_DELETING:
        return any(not v["cp"] and not v["deleting"] and gone_or_deleting(n) for n, v in start.items())
    raise ValueError(point)


def _machines(e) -> dict[str, dict]:
    return {
        n: {"cp": is_cp(m), "deleting": bool(m["metadata"].get("deletionTimestamp"))} for n, m in e.machines().items()
    }


def _stat(pid: int) -> tuple[int, str, str] | None:
    """(ppid, state, start time) of a process, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return int(fields[1]), fields[0], fields[19]
    except (OSError, IndexError, ValueError):
        return None


def _descendants(pid: int) -> dict[int, str]:
    """Every live process below ``pid`` with its start time (ansible-core detaches its workers into sessions of
    their own, so the process group is not enough)."""
    children: dict[int, list[tuple[int, str]]] = {}
    for entry in os.listdir("/proc"):
        st = _stat(int(entry)) if entry.isdigit() else None
        if st is not None:
            children.setdefault(st[0], []).append((int(entry), st[2]))
    out: dict[int, str] = {}
    todo = [pid]
    while todo:
        for child, started in children.get(todo.pop(), []):
            if child not in out:
                out[child] = started
                todo.append(child)
    return out


def _alive(pid: int, started: str) -> bool:
    """Still running, and still the same process (a PID is never taken for another's)."""
    st = _stat(pid)
    return st is not None and st[1] != "Z" and st[2] == started


def play_killed_at(e, playbook: str, point: str, timeout: float = 1800, patience: float = 120) -> str:
    """Run the playbook and kill -9 ansible-playbook (ours, by PID) as soon as the store shows ``point``.

    What it started (the worker running the task, the module's process) must then stop by itself: a killed
    playbook leaves nothing changing the cluster behind the next run's back.  Whatever is still running after
    ``patience`` seconds is killed too and reported in the outcome ("left running").
    """
    start = _machines(e)
    log = open(e.tmp / f"killed-{time.time():.0f}.log", "w")  # noqa: SIM115
    t0 = time.monotonic()
    proc = subprocess.Popen(e.argv(playbook), cwd=REPO, env=e.env, stdout=log, stderr=subprocess.STDOUT)
    try:
        outcome = None
        while proc.poll() is None and time.monotonic() - t0 < timeout:
            try:
                seen = _event(point, start, _machines(e))
            except Exception:  # noqa: BLE001 - the store between two writes: read again
                seen = False
            if seen:
                outcome = f"killed at '{point}' after {time.monotonic() - t0:.1f}s"
                break
            time.sleep(0.2)
        if proc.poll() is not None:
            return f"finished before '{point}' (rc={proc.returncode})"
        outcome = outcome or f"killed at the {timeout:.0f}s timeout, '{point}' never seen"
        tree = _descendants(proc.pid)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + patience
        while any(_alive(p, t) for p, t in tree.items()) and time.monotonic() < deadline:
            time.sleep(0.5)
        left = sorted(p for p, t in tree.items() if _alive(p, t))
        for p in left:
            os.kill(p, signal.SIGKILL)
        return outcome + (f"; left running: {left}" if left else "")
    finally:
        log.close()


def killed_upgrade(e) -> tuple[list[str], Watch]:
    """The upgrade's playbook killed with -9 at each of KILL_POINTS, then a whole run, all under one Watch."""
    outcomes = []
    t0 = time.monotonic()
    with Watch(e) as w:
        for point in KILL_POINTS:
            outcomes.append(play_killed_at(e, "provision_cluster.yml", point))
        e.play("provision_cluster.yml")
    print(f"kill -9 x{len(KILL_POINTS)} then a re-run: {time.monotonic() - t0:.0f}s; {outcomes}")
    print(f"probe failures during the kills: {len(w.failures)} of {w.probes}")
    return outcomes, w


def assert_recovered_from_kills(e, outcomes: list[str], w: Watch, final: dict[str, dict]) -> None:
    """Killed where planned, nothing left running, no member of a deleted Machine, and a next run changes nothing."""
    assert sum(o.startswith("killed at '") for o in outcomes) >= 4, outcomes
    assert not any("left running" in o for o in outcomes), outcomes  # a killed playbook's worker stops by itself
    assert w.stale == [], w.stale[:10]
    assert cp_members(w, final) == cp_nodes(final)
    again = e.play("provision_cluster.yml")  # and the run after that has nothing left to do
    assert again.changed == 0, again.changed_tasks()
    assert set(e.machines()) == set(final)
