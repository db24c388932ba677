"""The MAAS simulator from the lab, plus small clients for the tests.

Tests share one simulator with the rest of the run, so none resets it: each
seeds its own machines through the control API, tagged with a tag of its own,
and allocates by that tag. Timed transitions are made short for the run of a
test and put back afterwards.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from urllib.parse import quote

import pytest
import requests

FAST = {"deploy": 0.4, "release": 0.3, "erase": 0.3, "commission": 0.3, "power": 0.1}


class Sim:
    """The control API (/MAAS/_sim/) and an OAuth PLAINTEXT HTTP client for the MAAS API."""

    def __init__(self, info: dict):
        self.url = info["url"]  # http://127.0.0.1:25240/MAAS/
        self.api = self.url + "api/2.0/"
        self.control = info["control_url"]
        self.apikey = info["api_key"]
        self.http = requests.Session()

    # -- control API ---------------------------------------------------------

    def ctl(self, method: str, path: str, json=None):
        resp = self.http.request(method, self.control + path, json=json, timeout=30)
        assert resp.status_code == 200, (resp.status_code, resp.text)
        return resp.json()

    def seed(self, *specs: dict, tag: str | None = None) -> list[dict]:
        """Machines for one test; every one carries ``tag`` so allocations can target them."""
        machines = []
        for spec in specs:
            spec = dict(spec)
            spec["tags"] = list(spec.get("tags", [])) + ([tag] if tag else [])
            spec.setdefault("hostname", f"t-{uuid.uuid4().hex[:8]}")
            machines.append(spec)
        return self.ctl("POST", "machines", {"machines": machines})

    def state(self, system_id: str) -> dict:
        return self.ctl("GET", f"machines/{system_id}")

    # -- MAAS API, signed the way the maas.maas collection signs ----------------

    def auth_header(self, apikey: str | None = None, realm: bool = False) -> str:
        consumer, token, secret = (apikey or self.apikey).split(":")
        parts = ['realm="OAuth"'] if realm else []
        parts += [
            f'oauth_consumer_key="{consumer}"',
            f'oauth_token="{token}"',
            'oauth_signature_method="PLAINTEXT"',
            f'oauth_signature="{quote("&" + secret)}"',
            f'oauth_nonce="{uuid.uuid4().hex}"',
            f'oauth_timestamp="{int(time.time())}"',
            'oauth_version="1.0"',
        ]
        return "OAuth " + ", ".join(parts)

    def call(self, method: str, path: str, *, params=None, data=None, files=None, headers=None, auth=True, **kw):
        hdrs = dict(headers or {})
        if auth:
            hdrs.setdefault("Authorization", self.auth_header())
        return self.http.request(
            method, self.api + path, params=params, data=data, files=files, headers=hdrs, timeout=30, **kw
        )

    def wait_status(self, system_id: str, wanted: str, timeout: float = 30.0) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            state = self.state(system_id)
            if state["status_name"] == wanted or time.monotonic() > deadline:
                return state
            time.sleep(0.05)


@pytest.fixture(scope="session")
def maas_info(lab) -> dict:
    return lab.need("maas").info["maas"]


@pytest.fixture
def sim(maas_info):
    s = Sim(maas_info)
    before = s.ctl("GET", "timings")
    s.ctl("POST", "timings", FAST)
    yield s
    s.ctl("POST", "timings", before)


@pytest.fixture
def tag() -> str:
    return f"t{uuid.uuid4().hex[:10]}"


@pytest.fixture
def client(sim):
    """python-libmaas's high-level client, connected with the API key."""
    from maas.client import connect

    # python-libmaas runs each call through asyncio.get_event_loop(); give the test one.
    asyncio.set_event_loop(asyncio.new_event_loop())
    yield connect(sim.url, apikey=sim.apikey)
    asyncio.get_event_loop().close()
    asyncio.set_event_loop(None)
