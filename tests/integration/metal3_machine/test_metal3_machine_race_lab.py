"""8 ansible-playbook processes at once, 3 machines each, one pool of Ironic hosts and one sqlite store.

Every machine gets a distinct host, no host is claimed twice, each claimed host
is deployed in Ironic; with fewer hosts than machines the losers wait and say
"No available host found".  Fake-hardware hosts; the machines wait for their
hosts only (``wait_for: provisioned``: no workload cluster in this test).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from lab.config import REPO

from .test_metal3_machines_lab import _machine_objects

pytestmark = pytest.mark.timeout(1500)

PROCS, PER_PROC = 8, 3


def _setup(ml, n_hosts: int) -> None:
    image = ml.inv["images"]["test_image"]
    objects = [
        ml.obj(
            "Cluster",
            ml.cluster,
            {"infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "Metal3Cluster",
                                   "name": ml.cluster}},
            "cluster.x-k8s.io/v1beta2",
        ),
        ml.secret("bootstrap", "#cloud-config\nruncmd: []\n"),
    ]  # fmt: skip
    for p in range(PROCS):
        for i in range(PER_PROC):
            machine, m3m = _machine_objects(ml, f"m{p}-{i}", False, "bootstrap", image)
            m3m["spec"].pop("dataTemplate")
            objects += [machine, m3m]
    host, port = ml.endpoint.split(":")
    ml.play(
        [{"baremetal.capi.baremetalhost": {"hosts": [ml.fake_host(i) for i in range(n_hosts)], "wait": True}}]
        + [{"baremetal.capi.object": {"definition": o}} for o in objects]
        + [{"baremetal.capi.metal3_cluster": {"name": ml.cluster,
                                              "control_plane_endpoint": {"host": host, "port": int(port)}}}]
    )  # fmt: skip


def _race(ml, timeout: int) -> list[dict]:
    """Start the 8 playbooks together; each one's metal3_machine result."""
    driver = {"ironic_url": ml.inv["ironic"]["url"], "boot_iso": ml.inv["images"]["boot_iso"], "poll": 1}
    env = dict(os.environ)
    env.update(ANSIBLE_COLLECTIONS_PATH=str(REPO / "build"), ANSIBLE_LOCALHOST_WARNING="False",
               ANSIBLE_INVENTORY_UNPARSED_WARNING="False")  # fmt: skip
    procs = []
    for p in range(PROCS):
        out = ml.tmp / f"race-{p}.json"
        task = {
            "baremetal.capi.metal3_machine": {
                "names": [f"m{p}-{i}" for i in range(PER_PROC)],
                "store": {"path": ml.db, "namespace": ml.ns},
                "host_driver_options": driver,
                "wait_for": "provisioned",
                "wait_sleep": 1,
                "no_host_retry": 2,
                "wait_timeout": timeout,
            },
            "register": "r",
            "ignore_errors": True,
        }
        save = {"ansible.builtin.copy": {"content": "{{ r | to_json }}", "dest": str(out)}}
        play = [{"hosts": "localhost", "gather_facts": False, "tasks": [task, save]}]
        path = ml.tmp / f"race-{p}.yml"
        path.write_text(yaml.safe_dump(play, sort_keys=False))
        argv = [str(Path(sys.executable).with_name("ansible-playbook")), str(path),
                "-e", json.dumps({"ansible_python_interpreter": sys.executable})]  # fmt: skip
        procs.append(
            (subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True), out)
        )
    results = []
    for proc, out in procs:
        output, _ = proc.communicate(timeout=timeout + 300)
        assert proc.returncode == 0, output[-4000:]
        results.append(json.loads(out.read_text()))
    return results


def _claims(ml):
    by_host = {h["metadata"]["name"]: h["spec"]["consumerRef"]["name"]
               for h in ml.store.list("BareMetalHost", ml.ns) if h["spec"].get("consumerRef")}  # fmt: skip
    by_machine = {}
    for m in ml.store.list("Metal3Machine", ml.ns):
        ann = (m["metadata"].get("annotations") or {}).get("metal3.io/BareMetalHost")
        if ann:
            by_machine[m["metadata"]["name"]] = ann.split("/")[1]
    return by_host, by_machine


def test_eight_playbooks_24_machines_24_hosts(mlab):
    ml = mlab
    _setup(ml, 24)
    results = _race(ml, timeout=600)
    machines = [m for r in results for m in r["machines"]]
    assert len(machines) == 24
    assert all(m["done"] and not m["failed"] for m in machines), [m for m in machines if not m["done"]]
    by_host, by_machine = _claims(ml)
    assert len(by_machine) == 24 and len(set(by_machine.values())) == 24
    assert {h: m for m, h in by_machine.items()} == by_host
    for host in by_machine.values():
        node = ml.node(host)
        assert node.provision_state == "active" and node.instance_id == ml.store.get(
            "BareMetalHost", host, ml.ns)["metadata"]["uid"]  # fmt: skip


def test_eight_playbooks_24_machines_20_hosts_losers_wait(mlab):
    ml = mlab
    _setup(ml, 20)
    results = _race(ml, timeout=180)
    machines = [m for r in results for m in r["machines"]]
    by_host, by_machine = _claims(ml)
    assert len(by_machine) == 20 and len(set(by_machine.values())) == 20
    assert {h: m for m, h in by_machine.items()} == by_host
    losers = [m for m in machines if m["name"].split("/")[1] not in by_machine]
    assert len(losers) == 4
    for m in losers:
        assert not m["done"] and "No available host found" in m["message"], m
    failed_tasks = [r for r in results if r.get("failed")]
    assert failed_tasks and all("No available host found" in r["msg"] for r in failed_tasks)
