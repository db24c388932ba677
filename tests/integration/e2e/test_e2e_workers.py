"""Worker rollouts and the MachineHealthCheck on the lab (Metal3, fake-hardware hosts, the node simulator).

Three workers rolled by provision_cluster.yml with ``max_surge: 0, max_unavailable: 1`` and then with
``max_surge: 1, max_unavailable: 0``: sampled throughout the run, the live Machines (not deleting) of the pool
never leave [replicas - maxUnavailable, replicas + maxSurge] and the available ones (Node Ready, as the
MachineSet counts them) never drop below replicas - maxUnavailable; every Machine is replaced.

Then a MachineHealthCheck without a remediation template (``unhealthyLessThanOrEqualTo: 1``): one worker whose
kubelet stops is marked, deleted and replaced by its MachineSet in the converge loop; two at once are
short-circuited - nothing is touched and the MachineHealthCheck says why.
"""

from __future__ import annotations

import random
import subprocess
import threading
import time

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions, meta, names
from lab.config import REPO
from lab.nodesim import client as nodesim
from tests.integration.net import LOOP

from .conftest import E2E, free_endpoint, metal3_description, new_names

pytestmark = pytest.mark.timeout(3600)
REPLICAS = 3


def _workers(e: E2E) -> list[dict]:
    return [m for m in e.machines().values() if names.CONTROL_PLANE_LABEL not in m["metadata"]["labels"]]


class Sampler:
    """The pool's live and available Machines, read from the store every half second while a run goes."""

    def __init__(self, e: E2E):
        self.e, self.samples, self._stop = e, [], threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            try:
                workers = _workers(self.e)
            except Exception:  # noqa: BLE001 - a write in progress; the next sample reads it
                workers = None
            if workers is not None:
                live = [m for m in workers if not meta.is_deleting(m)]
                ready = [m for m in live if conditions.is_true(m, names.NODE_READY)]
                self.samples.append((len(live), len(ready)))
            time.sleep(0.5)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def _roll(e: E2E, desc: dict, surge: int, unavailable: int, max_pods: str) -> None:
    pool = desc["workers"][0]
    pool["rollout"] = {"strategy": "RollingUpdate", "max_surge": surge, "max_unavailable": unavailable}
    pool["kubelet_extra_args"] = {"max-pods": max_pods}  # a new KubeadmConfigTemplate: a new revision
    e.rewrite(desc)
    before = {meta.name(m) for m in _workers(e)}
    with Sampler(e) as sampler:
        e.play("provision_cluster.yml")
    low, high = REPLICAS - unavailable, REPLICAS + surge
    assert sampler.samples, "no sample taken"
    for live, available in sampler.samples:
        assert low <= live <= high, (surge, unavailable, sampler.samples)
        assert available >= low, (surge, unavailable, sampler.samples)
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
        _roll(e, desc, 0, 1, "100")
        _roll(e, desc, 1, 0, "110")
        _health_check(e, name, ns, tmp_path)
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


def _health_check(e: E2E, name: str, ns: str, tmp_path) -> None:
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
    e.play("provision_cluster.yml")
    workers = _workers(e)
    assert meta.name(sick) not in {meta.name(m) for m in workers} and len(workers) == REPLICAS
    assert all(conditions.is_true(m, names.NODE_READY) for m in workers)

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
