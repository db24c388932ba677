"""The MAAS flows against the lab: the MAAS simulator, the node simulator, and modules run by ansible-playbook.

Tests share one simulator with the rest of the run: each seeds its own
machines through the control API with a tag of its own, and its MaasMachines
ask for that tag.  Objects live in a sqlite store of the test's own.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from pathlib import Path
from urllib.parse import quote

import pytest
import requests
import yaml

REPO = Path(__file__).resolve().parents[3]
FAST = {"deploy": 1.0, "release": 0.3, "erase": 0.3, "commission": 0.3, "power": 0.1}
# How long to wait for the lab before calling it broken (not a timing assertion).
PATIENCE = 300.0


class Sim:
    """The simulator's control API (/MAAS/_sim/) and a plain OAuth client of its MAAS API (not python-libmaas)."""

    def __init__(self, info: dict):
        self.url = info["url"]
        self.api = self.url + "api/2.0/"
        self.control = info["control_url"]
        self.apikey = info["api_key"]
        self.http = requests.Session()

    def ctl(self, method: str, path: str, json_body=None):
        resp = self.http.request(method, self.control + path, json=json_body, timeout=30)
        assert resp.status_code == 200, (resp.status_code, resp.text)
        return resp.json()

    def seed(self, *specs: dict, tag: str) -> list[dict]:
        machines = []
        for spec in specs:
            spec = dict(spec)
            spec["tags"] = list(spec.get("tags", [])) + [tag]
            spec.setdefault("hostname", f"m-{uuid.uuid4().hex[:8]}")
            machines.append(spec)
        return self.ctl("POST", "machines", {"machines": machines})

    def machine(self, system_id: str) -> dict:
        return self.ctl("GET", f"machines/{system_id}")

    def tagged(self, tag: str) -> list[dict]:
        return [m for m in self.ctl("GET", "machines") if tag in m["tags"]]

    def get(self, path: str, **params):
        consumer, token, secret = self.apikey.split(":")
        auth = (
            f'OAuth oauth_consumer_key="{consumer}", oauth_token="{token}", oauth_signature_method="PLAINTEXT", '
            f'oauth_signature="{quote("&" + secret)}", oauth_nonce="{uuid.uuid4().hex}", '
            f'oauth_timestamp="{int(time.time())}", oauth_version="1.0"'
        )
        resp = self.http.get(self.api + path, params=params, headers={"Authorization": auth}, timeout=30)
        assert resp.status_code == 200, (resp.status_code, resp.text)
        return resp.json()

    def dns(self, fqdn: str) -> list[dict]:
        return self.get("dnsresources/", fqdn=fqdn)

    def dns_ips(self, fqdn: str) -> list[str]:
        found = self.dns(fqdn)
        assert len(found) == 1, found
        return sorted(a["ip"] for a in found[0]["ip_addresses"])


@pytest.fixture(scope="session")
def maas_sim_lab(lab):
    """The MAAS simulator alone, with short transitions for the run: enough for tests that deploy no node
    (the client's calls, or MaasMachine status written by the test itself)."""
    lab.need("maas")
    sim = Sim(lab.info["maas"])
    before = sim.ctl("GET", "timings")
    sim.ctl("POST", "timings", FAST)
    yield lab
    try:
        sim.ctl("POST", "timings", before)
    except (requests.RequestException, AssertionError):
        pass


@pytest.fixture(scope="session")
def maas_lab(maas_sim_lab):
    """The MAAS simulator and the node simulator (which needs kube)."""
    return maas_sim_lab.need("kube", "nodesim")


@pytest.fixture
def sim(maas_sim_lab):
    return Sim(maas_sim_lab.info["maas"])


@pytest.fixture
def tag(sim):
    """A tag of the test's own; the machines carrying it are removed from the simulator afterwards."""
    value = f"t{uuid.uuid4().hex[:10]}"
    yield value
    for m in sim.tagged(value):
        sim.ctl("DELETE", f"machines/{m['system_id']}")


class Play:
    """Runs module tasks through ansible-playbook against the test's sqlite store and the simulator."""

    def __init__(self, tmp: Path, store_path: str, maas_info: dict):
        self.tmp = tmp
        self.store_path = store_path
        self.env = dict(
            os.environ,
            ANSIBLE_COLLECTIONS_PATH=str(REPO / "build"),
            ANSIBLE_LOCALHOST_WARNING="false",
            ANSIBLE_INVENTORY_UNPARSED_WARNING="false",
            BAREMETAL_CAPI_STORE_PATH=store_path,
            MAAS_URL=maas_info["url"],
            MAAS_API_KEY=maas_info["api_key"],
        )
        self.runs = 0
        self.last_stdout = ""

    def __call__(self, module: str, args: dict, *, check: bool = False, env: dict | None = None) -> dict:
        """The result of one task (``failed`` set when it failed)."""
        self.runs += 1
        task = {"name": module, f"baremetal.capi.{module}": args, "ignore_errors": True, "register": "result"}
        if check:
            task["check_mode"] = True
        out_file = self.tmp / f"result-{self.runs}.json"
        save = {"ansible.builtin.copy": {"content": "{{ result | to_json }}", "dest": str(out_file)}}
        book = [
            {
                "hosts": "localhost",
                "gather_facts": False,
                "connection": "local",
                "vars": {"ansible_python_interpreter": str(REPO / ".venv" / "bin" / "python")},
                "tasks": [task, save],
            }
        ]
        path = self.tmp / f"play-{self.runs}.yml"
        path.write_text(yaml.safe_dump(book))
        proc = subprocess.run(
            [str(REPO / ".venv" / "bin" / "ansible-playbook"), "-i", "localhost,", str(path)],
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=1800,
        )
        self.last_stdout = proc.stdout + proc.stderr
        if not out_file.exists():
            pytest.fail(f"ansible-playbook did not run the task:\n{proc.stdout}\n{proc.stderr}")
        return json.loads(out_file.read_text())


@pytest.fixture
def play(tmp_path, store, maas_lab):
    return Play(tmp_path, store.path, maas_lab.info["maas"])


@pytest.fixture
def play_maas(tmp_path, store, maas_sim_lab):
    """Play against the simulator alone (no nodes: the test writes the MaasMachines' status itself)."""
    return Play(tmp_path, store.path, maas_sim_lab.info["maas"])


def eventually(check, what: str, patience: float = PATIENCE, last=lambda: None):
    deadline = time.monotonic() + patience
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not after {patience:.0f}s; last seen: {last()}")
        time.sleep(0.5)
