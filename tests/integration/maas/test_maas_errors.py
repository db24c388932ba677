"""MAAS errors as a user sees them: a refused API key, MAAS answering 503 while the cluster is made."""

from __future__ import annotations

from tests.integration.maas import objects

NS = "default"


def test_wrong_api_key_fails_clearly_without_the_secret(sim, play, store, tag):
    cname = f"k{tag[1:7]}"
    for obj in objects.cluster(cname, NS, ["az-1"]):
        store.create(obj)
    bad = "wrongconsumer:wrongtoken:wrongsecret123"
    r = play("maas_cluster", {"name": cname}, env={"MAAS_API_KEY": bad})
    assert r.get("failed"), r
    assert "refused the API key (401 Unauthorized)" in r["msg"], r["msg"]
    assert "maas_api_key" in r["msg"]
    assert "wrongsecret123" not in play.last_stdout and "wrongsecret123" not in str(r)
    assert sim.apikey.split(":")[2] not in play.last_stdout
    # the failure is on the MaasCluster (LoadBalancerFailed, as CAPMAAS records it); nothing was made in MAAS
    status = store.get("MaasCluster", cname, NS)["status"]
    cond = next(c for c in status["conditions"] if c["type"] == "LoadBalancerReady")
    assert (cond["status"], cond["reason"]) == ("False", "LoadBalancerFailed")
    assert "wrongsecret123" not in cond["message"]
    assert sim.dns(status["network"]["dnsName"]) == []


def test_503s_while_the_cluster_is_made_are_retried(sim, play, store, tag):
    cname = f"r{tag[1:7]}"
    for obj in objects.cluster(cname, NS, ["az-1"]):
        store.create(obj)
    # the DNS lookup and the create each answer 503 twice before MAAS does the work
    sim.ctl("POST", "faults", {"status": 503, "count": 2, "method": "GET", "path": "dnsresources/$"})
    sim.ctl("POST", "faults", {"status": 503, "count": 2, "method": "POST", "path": "dnsresources/$"})
    r = play("maas_cluster", {"name": cname})
    assert not r.get("failed"), r
    assert not [f for f in sim.ctl("GET", "faults") if f.get("path") == "dnsresources/$"], "the 503s were not answered"
    record = sim.dns(r["dns_name"])
    assert len(record) == 1 and record[0]["address_ttl"] == 10
    r = play("maas_cluster", {"name": cname, "state": "absent"})
    assert not r.get("failed"), r
    assert sim.dns(record[0]["fqdn"]) == []
    assert store.list("MaasCluster", NS) == [] and store.list("Cluster", NS) == []
