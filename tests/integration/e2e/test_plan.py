"""The plan of a run: ``provision_cluster.yml --check`` of a new 3 control-plane + 2 worker cluster on each
provider, and ``scale_cluster.yml --check --diff`` of a scale-up, through ansible-playbook against the lab.

The plan is the last block of a check run (cluster_validate's ``lines``): every Machine that would be created
with the BareMetalHost / MAAS machine it would get, the addresses it would take and the metaData / networkData
it would receive. The tests check the hosts named against the description (failure domains, host selectors,
MAAS constraints), that two new machines are never promised one host or address, and that nothing was written:
no object in the store, no Ironic node, no MAAS machine taken. The outputs shown in docs/user-guide.md
("Plans") are these tests' own (written to the test's tmp dir as plan-*.txt).
"""

from __future__ import annotations

import ipaddress
import json
import random
import re
import subprocess

import pytest
import requests

from lab.config import REPO
from tests.integration.net import LOOP

from .conftest import E2E, Run, free_endpoint, metal3_description, new_names
from .test_e2e_metal3 import _ironic

pytestmark = pytest.mark.timeout(1200)

PLAN_TASK = "TASK [The plan of the run (check mode, nothing written)]"
MACHINE = re.compile(r"^  \+ (<new-\d+>) \((control-plane|worker)(?:, failure domain (\S+))?\): host (\S+)")


def plan_lines(run: Run) -> list[str]:
    """The msg list the plan task printed (the default callback's JSON after ``ok: [host] =>``)."""
    out = run.out
    at = out.index(PLAN_TASK)
    start = out.index("=> {", at) + 3
    end = out.index("\n}\n", start) + 2
    return json.loads(out[start:end])["msg"]


def new_machines(lines: list[str]) -> list[dict]:
    """Each ``+ <new-n>`` line with the address / data lines under it."""
    rows = []
    for line in lines:
        m = MACHINE.match(line)
        if m:
            rows.append({"machine": m[1], "role": m[2], "fd": m[3], "host": m[4], "lines": []})
        elif rows and line.startswith("      "):
            rows[-1]["lines"].append(line.strip())
    return rows


def play_diff(e: E2E, playbook: str, extra: dict) -> Run:
    argv = e.argv(playbook, extra, check=True)
    argv.insert(argv.index("--check") + 1, "--diff")
    run = Run(subprocess.run(argv, cwd=REPO, env=e.env, capture_output=True, text=True))
    assert run.rc == 0, run.out[-8000:]
    return run


def test_metal3_plan_new_3_2_and_scale_up_diff(e2e_lab, ironic_inventory, tmp_path):
    inv = ironic_inventory
    name, ns = new_names("p")
    octet = random.randint(100, 199)
    desc = metal3_description(name, ns, free_endpoint(f"{LOOP}.9"), inv, octet, hosts=7)
    # three domains for the control plane (one host each), and a pool of three hosts for the workers
    for i, host in enumerate(desc["hosts"]):
        host["labels"] = (
            {"infrastructure.cluster.x-k8s.io/failure-domain": f"az-{i + 1}"} if i < 3 else {"pool": "md-0"}
        )
    desc["hosts"][6]["labels"] = {"pool": "other"}  # matches neither: never named
    desc["control_plane"].update(replicas=3, failure_domains=["az-1", "az-2", "az-3"])
    desc["workers"][0].update(replicas=2, host_selector={"matchLabels": {"pool": "md-0"}})
    driver = {"ironic_url": inv["ironic"]["url"], "boot_iso": inv["images"]["boot_iso"], "poll": 1}
    e = E2E(e2e_lab, tmp_path, "metal3", desc, {"capi_host_driver_options": driver, "capi_no_log_hosts": False})
    hosts = {h["name"]: h for h in desc["hosts"]}
    pool = [str(ipaddress.ip_address(f"{LOOP}.{octet}.100") + i) for i in range(21)]
    try:
        plan = e.play("provision_cluster.yml", check=True)
        lines = plan_lines(plan)
        (tmp_path / "plan-metal3-new.txt").write_text("\n".join(lines) + "\n")
        assert lines[0] == (
            f"plan of {ns}/{name} (metal3, new cluster): 5 machine(s) to create, 0 to delete - nothing written "
            "(check mode)"
        ), lines
        assert f"KubeadmControlPlane {name}-control-plane: replicas 3 (new), 0 machine(s) now, create 3" in lines
        assert f"MachineDeployment {name}-md-0: replicas 2 (new), 0 machine(s) now, create 2" in lines
        rows = new_machines(lines)
        assert [r["role"] for r in rows] == ["control-plane"] * 3 + ["worker"] * 2, lines
        # KCP spreads the control plane over the domains, each machine on a host of its domain
        cps = rows[:3]
        assert sorted(r["fd"] for r in cps) == ["az-1", "az-2", "az-3"], lines
        for r in cps:
            assert hosts[r["host"]]["labels"]["infrastructure.cluster.x-k8s.io/failure-domain"] == r["fd"], r
        # the workers on hosts their selector matches; no host promised twice
        assert all(hosts[r["host"]]["labels"] == {"pool": "md-0"} for r in rows[3:]), lines
        assert len({r["host"] for r in rows}) == 5
        # each machine: one address of the pool (none twice), the metaData CAPM3 renders, its host's NIC
        seen = set()
        for r in rows:
            addr = next(x for x in r["lines"] if x.startswith("address: "))
            ip = addr.split()[1].split("/")[0]
            assert ip in pool and ip not in seen and f"(IPPool {name}-prov)" in addr, r
            seen.add(ip)
            md = json.loads(next(x for x in r["lines"] if x.startswith("metaData")).split(": ", 1)[1])
            assert md == {"cluster": name, "providerid": f"{ns}/{r['host']}/{r['machine']}"}, md
            nd = json.loads(next(x for x in r["lines"] if x.startswith("networkData: ")).split(": ", 1)[1])
            mac = hosts[r["host"]]["spec"]["bootMACAddress"]
            assert nd["links"][0]["ethernet_mac_address"] == mac and nd["networks"][0]["ip_address"] == ip, nd
        assert lines[-1].startswith("(hosts: the first candidate by name is shown; CAPM3 picks at random")
        # nothing written: no object, no Ironic node
        s = e.store()
        try:
            kinds = ("Cluster", "BareMetalHost", "Machine", "IPAddress.ipam.metal3.io", "Secret", "Metal3DataTemplate")
            for kind in kinds:
                assert s.list(kind, ns) == [], kind
        finally:
            s.close()
        assert _ironic(e, inv) == {}

        # a small cluster for real (1 + 1), then the plan of a scale-up with --diff
        desc = e.host_vars["capi_cluster"]  # with the CNI add-on E2E adds
        small = {**desc, "control_plane": {**desc["control_plane"], "replicas": 1},
                 "workers": [{**desc["workers"][0], "replicas": 1}]}  # fmt: skip
        e.rewrite(small)
        e.play("provision_cluster.yml")
        before = e.machines()
        s = e.store()
        try:
            used = {h["metadata"]["name"] for h in s.list("BareMetalHost", ns) if h["spec"].get("consumerRef")}
            addresses = sorted(a["spec"]["address"] for a in s.list("IPAddress.ipam.metal3.io", ns))
            md_rv = s.get("MachineDeployment", f"{name}-md-0", ns)["metadata"]["resourceVersion"]
        finally:
            s.close()
        up = play_diff(e, "scale_cluster.yml", {"capi_worker_replicas": {"md-0": 2}})
        (tmp_path / "plan-metal3-scale-diff.txt").write_text(up.out)
        # the real before/after of the MachineDeployment
        assert re.search(r"^-\s+\"?replicas\"?: 1,?$", up.out, re.M), up.out[-8000:]
        assert re.search(r"^\+\s+\"?replicas\"?: 2,?$", up.out, re.M), up.out[-8000:]
        lines = plan_lines(up)
        assert lines[0].endswith("1 machine(s) to create, 0 to delete - nothing written (check mode)"), lines
        assert lines[0].startswith(f"plan of {ns}/{name} (metal3, existing cluster)"), lines
        assert f"MachineDeployment {name}-md-0: replicas 1 -> 2, 1 machine(s) now, create 1" in lines, lines
        assert f"KubeadmControlPlane {name}-control-plane: replicas 1 (unchanged), 1 machine(s) now" in lines, lines
        (row,) = new_machines(lines)
        assert row["role"] == "worker" and row["host"] not in used, (row, used)
        assert hosts[row["host"]]["labels"] == {"pool": "md-0"}, row
        ip = next(x for x in row["lines"] if x.startswith("address: ")).split()[1].split("/")[0]
        # the next free address of the pool: the running machines hold the ones before it
        assert ip in pool and ip not in addresses and len(addresses) == 2, (ip, addresses)
        assert pool.index(ip) == max(pool.index(a) for a in addresses) + 1, (ip, addresses)
        # nothing written by the check run
        s = e.store()
        try:
            assert s.get("MachineDeployment", f"{name}-md-0", ns)["metadata"]["resourceVersion"] == md_rv
            assert sorted(a["spec"]["address"] for a in s.list("IPAddress.ipam.metal3.io", ns)) == addresses
        finally:
            s.close()
        assert set(e.machines()) == set(before)
    finally:
        e.play("deprovision_cluster.yml", {"capi_deregister_hosts": True}, expect_ok=False)


def _seed(control: str, tag: str) -> None:
    specs = [{"hostname": f"{tag}-cp-{i}", "zone": "az-1", "tags": [f"{tag}c"], "cpu_count": 4, "memory": 8192}
             for i in range(3)]  # fmt: skip
    specs += [{"hostname": f"{tag}-w-{i}", "zone": "az-1", "tags": [f"{tag}w"], "cpu_count": c, "memory": 8192}
              for i, c in enumerate((8, 2, 8))]  # fmt: skip
    requests.post(control + "machines", json={"machines": specs}, timeout=30).raise_for_status()


def test_maas_plan_new_3_2(e2e_lab, tmp_path):
    maas = e2e_lab.info["maas"]
    control = maas["control_url"]
    name, ns = new_names("q")
    tag = f"t{name}"
    _seed(control, tag)
    desc = {
        "name": name,
        "namespace": ns,
        "provider": "maas",
        "kubernetes_version": "v1.34.4",
        "dns_domain": "maas",
        "endpoint_via_maas_dns": True,
        "control_plane": {"replicas": 3, "image": "ubuntu/jammy", "constraints": {"tags": [f"{tag}c"]}},
        "workers": [{"name": "md-0", "replicas": 2, "image": "ubuntu/jammy",
                     "constraints": {"tags": [f"{tag}w"], "minCPU": 4}}],
    }  # fmt: skip
    e = E2E(e2e_lab, tmp_path, "maas", desc, {"capi_maas_url": maas["url"], "capi_maas_api_key": maas["api_key"]})
    plan = e.play("provision_cluster.yml", check=True)
    lines = plan_lines(plan)
    (tmp_path / "plan-maas-new.txt").write_text("\n".join(lines) + "\n")
    assert lines[0] == (
        f"plan of {ns}/{name} (maas, new cluster): 5 machine(s) to create, 0 to delete - nothing written (check mode)"
    ), lines
    sim = {m["system_id"]: m for m in requests.get(control + "machines", timeout=30).json()}
    rows = []
    for line in lines:
        m = re.match(r"^  \+ (<new-\d+>) \((control-plane|worker)\): host (\S+) \((\w+), zone az-1\) - (.*)$", line)
        if m:
            rows.append(m.groups())
    assert [r[1] for r in rows] == ["control-plane"] * 3 + ["worker"] * 2, lines
    for _machine, role, hostname, sid, why in rows:
        assert sim[sid]["hostname"] == hostname, (sid, hostname)
        if role == "control-plane":
            assert f"{tag}c" in sim[sid]["tags"] and "candidate(s) left: Ready MAAS machines matching" in why, why
        else:  # the 2-CPU machine does not fit minCPU 4
            assert f"{tag}w" in sim[sid]["tags"] and sim[sid]["cpu_count"] >= 4, (sid, sim[sid])
    assert len({r[3] for r in rows}) == 5
    assert f"{tag}-w-1" not in {r[2] for r in rows}
    # nothing written, nothing taken
    s = e.store()
    try:
        for kind in ("Cluster", "MaasCluster", "Machine", "MaasMachine", "Secret"):
            assert s.list(kind, ns) == [], kind
    finally:
        s.close()
    mine = [m for m in sim.values() if m["hostname"].startswith(f"{tag}-")]
    assert len(mine) == 6 and all(m["status_name"] == "Ready" and not m.get("owner") for m in mine), mine

    # one worker more than MAAS can give: the plan says which machine fails and why, naming each candidate
    desc["workers"][0]["replicas"] = 3
    e.rewrite(desc)
    short = plan_lines(e.play("provision_cluster.yml", check=True))
    missing = [x for x in short if "NO HOST" in x]
    assert len(missing) == 1 and f"{tag}-w-1" in missing[0] and "2 CPUs" in missing[0], short
