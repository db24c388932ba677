"""The python-libmaas client against the simulator: worker threads, retries, the errors a user sees."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.maas import client as maas_client


@pytest.fixture
def client(sim):
    return maas_client.Client(sim.url, sim.apikey, backoff=0.05)


def test_calls_from_many_worker_threads(client, sim, tag):
    seeded = sim.seed(*({"cpu_count": 2} for _ in range(6)), tag=tag)
    with ThreadPoolExecutor(max_workers=6) as pool:
        read = list(pool.map(lambda m: client.read_machine(m["system_id"]), seeded))
    assert [m["system_id"] for m in read] == [m["system_id"] for m in seeded]
    assert client.read_machine("nosuchid") is None


def test_5xx_is_retried_and_gives_up_with_a_requeue(client, sim, tag):
    (m,) = sim.seed({}, tag=tag)
    path = f"machines/{m['system_id']}/$"
    sim.ctl("POST", "faults", {"status": 500, "count": 3, "method": "GET", "path": path})
    client.session  # noqa: B018 - connect first: the description fetch is a call too
    before = client.calls
    assert client.read_machine(m["system_id"])["system_id"] == m["system_id"]
    assert client.calls - before == 4  # three 500s, then the answer
    sim.ctl("POST", "faults", {"status": 503, "count": client.retries + 1, "method": "GET", "path": path})
    with pytest.raises(maas_client.MaasUnavailable) as err:
        client.read_machine(m["system_id"])
    assert "HTTP 503" in str(err.value)


def test_allocate_all_tags_dry_run_and_no_match(client, sim, tag):
    a, b = sim.seed({"tags": ["x"]}, {"tags": ["x", "y"]}, tag=tag)
    got = client.allocate({"tags": [tag, "x", "y"]}, dry_run=True)
    assert got["system_id"] == b["system_id"]
    assert sim.machine(b["system_id"])["owner"] is None  # dry_run allocates nothing
    got = client.allocate({"tags": [tag, "x"], "not_tags": ["y"]}, agent_name="me")
    assert got["system_id"] == a["system_id"] and sim.machine(a["system_id"])["owner"] == "admin"
    assert [m["system_id"] for m in client.list_machines(agent_name="me")] == [a["system_id"]]
    with pytest.raises(maas_client.MaasConflict):
        client.allocate({"tags": [tag], "cpu_count": "999"})


def test_refused_key_and_unreachable_region(sim):
    bad = maas_client.Client(sim.url, "aa:bb:topsecret", backoff=0.01)
    with pytest.raises(maas_client.MaasAuthError) as err:
        bad.list_machines()
    assert "401" in str(err.value) and "topsecret" not in str(err.value)
    gone = maas_client.Client("http://127.0.0.1:9/MAAS/", sim.apikey, retries=1, backoff=0.01)
    with pytest.raises(maas_client.MaasUnavailable) as err:
        gone.list_machines()
    assert sim.apikey.split(":")[2] not in str(err.value)


def test_allocate_is_retried_on_503_only(client, sim, tag):
    (m,) = sim.seed({}, tag=tag)
    client.session  # noqa: B018 - connect first
    sim.ctl("POST", "faults", {"status": 503, "count": 2, "method": "POST", "path": "machines/$"})
    before = client.calls
    assert client.allocate({"tags": [tag]}, agent_name=tag)["system_id"] == m["system_id"]
    assert client.calls - before == 3
    client.release(m["system_id"])
    sim.ctl("POST", f"machines/{m['system_id']}", {"status": "Ready", "owner": None})
    # a 500 may come after MAAS did the work: not repeated blindly; the flow looks for it by agent_name next time
    sim.ctl("POST", "faults", {"status": 500, "count": 1, "method": "POST", "path": "machines/$"})
    before = client.calls
    with pytest.raises(maas_client.MaasUnavailable):
        client.allocate({"tags": [tag]}, agent_name=tag)
    assert client.calls - before == 1
