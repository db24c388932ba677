"""provision_cluster.yml and deprovision_cluster.yml through an Ironic that drops connections, and at -vvv --diff
with every secret of the cluster looked for in what the run printed and wrote.

- Through lab/faultproxy.py in front of Ironic (one request in 12 closed without an answer: the
  "RemoteDisconnected ... Remote end closed connection without response" a busy Ironic gave; one in 25 a 503),
  host registration, provisioning and deprovisioning converge with no failed host, and the proxy shows the
  faults happened.
- In the same runs, at -vvv --diff (every module's invocation and result printed, the diffs, the progress
  callback's lines), with BMC credentials on the hosts; and a MAAS provision and deprovision likewise: no BMC
  password, MAAS API key, bootstrap token, private key or bootstrap user data in the output or in any file the
  run wrote outside the store; the store and the kubeconfig files are mode 0600.
"""

from __future__ import annotations

import base64
import os
import random
import re
import secrets
import socket
import stat
import subprocess
from pathlib import Path

import openstack
import pytest
import requests

from lab import faultproxy, process
from lab.config import REPO
from tests.integration.net import LOOP

from .conftest import E2E, free_endpoint, metal3_description, new_names

pytestmark = pytest.mark.timeout(2400)

# One Ironic request in 12 answered with nothing (closed) and one in 25 with a 503, at random: hundreds of faults
# over a provision, each a transient failure the step must requeue. Not more: a registration or deploy step
# makes several Ironic calls, and 8 failed steps in a row (about a minute of backoff) are a persistent failure
# that fails the host by design; at 30% of requests lost that happened within minutes (seen here).
FAULTS = {"drop_rate": 0.08, "status_rate": 0.04, "status": 503, "seed": 20}

PEM_KEY = re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----(.*?)-----END", re.S)
TOKEN = re.compile(r"\b[a-z0-9]{6}\.[a-z0-9]{16}\b")
B64_RUN = re.compile(r"[A-Za-z0-9+/=]{60,}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ironic_nodes(url: str, ns: str) -> dict[str, str]:
    conn = openstack.connect(auth_type="none", baremetal_endpoint_override=url)
    try:
        return {n.name.split("~", 1)[1]: n.provision_state
                for n in conn.baremetal.nodes(fields=["name", "provision_state"])
                if (n.name or "").startswith(ns + "~")}  # fmt: skip
    finally:
        conn.close()


def _converged(e: E2E, count: int = 2) -> dict[str, dict]:
    machines = e.machines()
    nodes = e.workload_nodes()
    assert len(machines) == count and len(nodes) == count, (sorted(machines), sorted(nodes))
    for name, m in machines.items():
        assert m["status"]["phase"] == "Running", (name, m["status"])
        assert nodes[m["status"]["nodeRef"]["name"]]["ready"] == "True", (name, nodes)
    return machines


@pytest.fixture
def faulty_ironic(e2e_lab, ironic_inventory):
    name = f"faultproxy-ironic-{secrets.token_hex(3)}"
    url = faultproxy.start(e2e_lab.cfg, name, ironic_inventory["ironic"]["url"], _free_port())
    try:
        yield url
    finally:
        process.stop(e2e_lab.cfg, name)


# -- secrets --------------------------------------------------------------------------------------------------


def secret_atoms(e: E2E, given: dict[str, str]) -> dict[str, str]:
    """What must never be printed: ``given`` (passwords, API keys) and, from every Secret of the cluster's
    namespace, private-key material, bootstrap tokens and the bootstrap user data (its base64 and its long
    base64 runs, which are keys and certificates of the cluster)."""
    atoms = dict(given)
    s = e.store()
    try:
        stored = s.list("Secret", e.ns)
    finally:
        s.close()
    assert stored, "no Secret in the store: nothing was looked for"
    for sec in stored:
        name = sec["metadata"]["name"]
        for key, b64 in (sec.get("data") or {}).items():
            text = base64.b64decode(b64).decode(errors="replace")
            texts = [text] + [
                base64.b64decode(v).decode(errors="replace") for v in re.findall(r"client-key-data: (\S+)", text)
            ]
            for t in texts:
                for i, m in enumerate(PEM_KEY.finditer(t)):
                    lines = [ln.strip() for ln in m.group(1).split() if len(ln.strip()) >= 40]
                    if lines:
                        atoms[f"{name}/{key}: private key {i}"] = lines[len(lines) // 2]
                for tok in TOKEN.findall(t):
                    atoms[f"{name}/{key}: bootstrap token"] = tok
            if key == "password":
                atoms[f"{name}/{key}"] = text
            if sec.get("type") == "cluster.x-k8s.io/secret" and key == "value" and "kubeadm" in text:
                atoms[f"{name}: user data (base64)"] = b64[:80]
                for j, run in enumerate(B64_RUN.findall(text)[:20]):
                    atoms[f"{name}: user data run {j}"] = run[:60]
    return atoms


def leaks(text: str, atoms: dict[str, str]) -> list[str]:
    return [label for label, value in atoms.items() if value and value in text]


def files_written(root: Path, skip: set[Path]) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and not any(p == s or s in p.parents for s in skip)]


def vvv(e: E2E, playbook: str, extra: dict | None = None) -> str:
    argv = e.argv(playbook, extra) + ["-vvv", "--diff"]
    proc = subprocess.run(argv, cwd=REPO, env=e.env, capture_output=True, text=True)
    out = proc.stdout + proc.stderr
    (e.tmp / f"vvv-{playbook}.log").write_text(out)
    assert proc.returncode == 0, out[-6000:]
    assert "Traceback" not in out and "Unknown error" not in out
    return out


def _check_files(e: E2E, atoms: dict[str, str], credential_files: set[Path]) -> None:
    skip = {e.tmp / "inventory", Path(e.db), Path(e.db + "-wal"), Path(e.db + "-shm")}
    skip |= {p for p in e.tmp.glob("vvv-*.log")}  # the output itself, checked apart
    assert stat.S_IMODE(os.stat(e.db).st_mode) == 0o600
    for path in files_written(e.tmp, skip):
        found = leaks(path.read_text(errors="replace"), atoms)
        if path in credential_files:  # a kubeconfig the user asked for: a credential, so 0600
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
            continue
        assert not found, (path, found)


def test_metal3_through_a_faulty_ironic_at_vvv(e2e_lab, ironic_inventory, faulty_ironic, tmp_path):
    """Provision and deprovision with Ironic behind the fault proxy, at -vvv --diff: no failed host, and no
    secret in what was printed or written."""
    inv = ironic_inventory
    name, ns = new_names("v")
    desc = metal3_description(name, ns, free_endpoint(f"{LOOP}.9"), inv, random.randint(100, 199))
    password = f"bmc-{secrets.token_hex(8)}"
    for h in desc["hosts"]:
        h["bmc_username"], h["bmc_password"] = "admin", password
    driver = {"ironic_url": faulty_ironic, "boot_iso": inv["images"]["boot_iso"], "poll": 1}
    e = E2E(e2e_lab, tmp_path, "metal3", desc, {"capi_host_driver_options": driver})
    e.env["XDG_STATE_HOME"] = str(tmp_path / "xdg-state")  # whatever the run writes by default lands here
    done = False
    try:
        faultproxy.control(faulty_ironic, "PUT", FAULTS)
        out = vvv(e, "provision_cluster.yml")
        seen = faultproxy.control(faulty_ironic)
        print(f"provision: {seen['requests']} Ironic requests, {seen['dropped']} dropped, {seen['statuses']} 503s")
        assert seen["dropped"] >= 3 and seen["statuses"] >= 2, seen  # the faults happened
        machines = _converged(e)
        s = e.store()
        try:
            hosts = s.list("BareMetalHost", ns)
            assert not [h["metadata"]["name"] for h in hosts if (h.get("status") or {}).get("errorType")], hosts
            claimed = {h["metadata"]["name"] for h in hosts if h["spec"].get("consumerRef")}
        finally:
            s.close()
        assert len(claimed) == len(machines)
        ironic = _ironic_nodes(inv["ironic"]["url"], ns)
        assert {h for h, st in ironic.items() if st == "active"} == claimed, ironic

        atoms = secret_atoms(e, {"BMC password": password})
        assert any("private key" in a for a in atoms) and any("token" in a for a in atoms), sorted(atoms)
        assert "<localhost> EXEC" in out or "invocation" in out  # it was -vvv
        assert "Machines of" in out  # the progress callback's table is in there
        assert leaks(out, atoms) == [], leaks(out, atoms)
        _check_files(e, atoms, {Path(e.kubeconfig)})

        faultproxy.control(faulty_ironic, "PUT", FAULTS)
        out = vvv(e, "deprovision_cluster.yml", {"capi_deregister_hosts": True})
        seen = faultproxy.control(faulty_ironic)
        print(f"deprovision: {seen['requests']} Ironic requests, {seen['dropped']} dropped, {seen['statuses']} 503s")
        assert seen["dropped"] >= 1, seen
        assert leaks(out, atoms) == [], leaks(out, atoms)
        _check_files(e, atoms, {Path(e.kubeconfig)})
        s = e.store()
        try:
            assert s.list("Machine", ns) == [] and s.list("BareMetalHost", ns) == []
        finally:
            s.close()
        assert _ironic_nodes(inv["ironic"]["url"], ns) == {}
        done = True
    finally:
        faultproxy.control(faulty_ironic, "DELETE")
        if not done:
            e.play("deprovision_cluster.yml", {"capi_deregister_hosts": True}, expect_ok=False)


def test_maas_provision_at_vvv_shows_no_secret(e2e_lab, tmp_path):
    maas = e2e_lab.info["maas"]
    control = maas["control_url"]
    name, ns = new_names("k")
    tag = f"t{name}"
    specs = [{"hostname": f"{tag}-{i}", "zone": "az-1", "tags": [tag], "cpu_count": 4, "memory": 8192}
             for i in range(3)]  # fmt: skip
    requests.post(control + "machines", json={"machines": specs}, timeout=30).raise_for_status()
    desc = {
        "name": name,
        "namespace": ns,
        "provider": "maas",
        "kubernetes_version": "v1.34.4",
        "dns_domain": "maas",
        "endpoint_via_maas_dns": True,
        "control_plane": {"replicas": 1, "image": "ubuntu/jammy", "constraints": {"tags": [tag]}},
        "workers": [{"name": "md-0", "replicas": 0, "image": "ubuntu/jammy", "constraints": {"tags": [tag]}}],
    }
    e = E2E(e2e_lab, tmp_path, "maas", desc, {"capi_maas_url": maas["url"], "capi_maas_api_key": maas["api_key"]})
    e.env["XDG_STATE_HOME"] = str(tmp_path / "xdg-state")
    done = False
    try:
        out = vvv(e, "provision_cluster.yml")
        _converged(e, 1)
        given = {"MAAS API key": maas["api_key"], "MAAS API key's secret": maas["api_key"].rsplit(":", 1)[1]}
        atoms = secret_atoms(e, given)
        # one control-plane machine and no worker: nothing joins, so no bootstrap token is made (CABPK makes
        # one per join); the keys and the user data are there
        assert any("private key" in a for a in atoms) and any("user data" in a for a in atoms), sorted(atoms)
        assert leaks(out, atoms) == [], leaks(out, atoms)
        _check_files(e, atoms, {Path(e.kubeconfig)})
        out = vvv(e, "deprovision_cluster.yml")
        assert leaks(out, atoms) == [], leaks(out, atoms)
        _check_files(e, atoms, {Path(e.kubeconfig)})
        done = True
    finally:
        if not done:
            e.play("deprovision_cluster.yml", expect_ok=False)
