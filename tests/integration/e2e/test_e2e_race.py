"""Eight provision_cluster.yml runs at once, one namespace and one store, fewer hosts than machines (issue 20).

Each run is one cluster (1 control plane, no workers) choosing among the same five BareMetalHosts, which the
first cluster's description registers. No host is claimed twice; the five winners converge; the three losers
end at their deadline saying no host matched. Then eight deprovision_cluster.yml runs at once, and the store
holds only what the user registered: the five hosts (unclaimed) and their BMC Secrets, nothing of the clusters,
nothing stuck deleting on a finalizer."""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.integration.net import LOOP

from .conftest import E2E, free_endpoint, metal3_description, new_names

pytestmark = pytest.mark.timeout(3600)

CLUSTERS, HOSTS = 8, 5
WAIT = 480  # seconds: the winners converge within it on a loaded machine; the losers end there
OWNED = ("Cluster", "Metal3Cluster", "KubeadmControlPlane", "Machine", "Metal3Machine", "Metal3MachineTemplate",
         "KubeadmConfig", "KubeadmConfigTemplate", "Metal3DataTemplate", "Metal3DataClaim", "Metal3Data", "IPClaim",
         "IPAddress.ipam.metal3.io")  # fmt: skip


def _clusters(lab, tmp_path, inv) -> list[E2E]:
    _, ns = new_names("r")
    driver = {"ironic_url": inv["ironic"]["url"], "boot_iso": inv["images"]["boot_iso"], "poll": 1}
    store = {"kind": "sqlite", "path": str(tmp_path / "shared.db")}
    # the day-2 tests run beside the other lines: endpoints and pools of their own (lab/addresses.py USES)
    octets = random.sample(range(230, 250), CLUSTERS)
    endpoints: set[str] = set()
    out = []
    for i in range(CLUSTERS):
        name, _ = new_names("r")
        endpoint = free_endpoint(f"{LOOP}.13")
        while endpoint in endpoints:
            endpoint = free_endpoint(f"{LOOP}.13")
        endpoints.add(endpoint)
        desc = metal3_description(name, ns, endpoint, inv, octets[i], hosts=HOSTS if i == 0 else 0)
        desc["workers"] = []
        if i:
            desc.pop("hosts")
        extra = {"capi_host_driver_options": driver, "capi_wait_timeout": WAIT}
        (tmp_path / name).mkdir()
        out.append(E2E(lab, tmp_path / name, "metal3", desc, extra, store=store))
    return out


def _all(clusters: list[E2E], playbook: str) -> list:
    with ThreadPoolExecutor(len(clusters)) as pool:
        return list(pool.map(lambda e: e.play(playbook, expect_ok=False), clusters))


def test_eight_playbooks_race_for_five_hosts_then_all_deprovision(e2e_lab, ironic_inventory, tmp_path):
    clusters = _clusters(e2e_lab, tmp_path, ironic_inventory)
    ns, hosts = clusters[0].ns, {f"{clusters[0].name}-host-{i}" for i in range(HOSTS)}
    try:
        runs = _all(clusters, "provision_cluster.yml")
        won = [e.name for e, r in zip(clusters, runs, strict=True) if r.failed == 0]
        lost = {e.name: r for e, r in zip(clusters, runs, strict=True) if r.failed != 0}
        assert len(won) == HOSTS and len(lost) == CLUSTERS - HOSTS, {n: r.out[-3000:] for n, r in lost.items()}
        for name, run in lost.items():
            assert f"not converged after {WAIT}s" in run.out, (name, run.out[-6000:])
            assert "No available host found: no available host matching" in run.out, (name, run.out[-6000:])
            assert "Unknown error" not in run.out and "Traceback" not in run.out
        s = clusters[0].store()
        try:
            claims = [
                h["spec"]["consumerRef"]["name"] for h in s.list("BareMetalHost", ns) if h["spec"].get("consumerRef")
            ]
            m3ms = {m["metadata"]["name"]: m for m in s.list("Metal3Machine", ns)}
            # every host claimed once, by a Metal3Machine that exists, one of each winner's
            assert len(claims) == len(set(claims)) == HOSTS and set(claims) <= set(m3ms), (claims, sorted(m3ms))
            owners = {m3ms[c]["metadata"]["labels"]["cluster.x-k8s.io/cluster-name"] for c in claims}
            assert owners == set(won), (owners, won)
        finally:
            s.close()
        for e in clusters:
            if e.name in won:
                assert [n["ready"] for n in e.workload_nodes().values()] == ["True"], e.name

        runs = _all(clusters, "deprovision_cluster.yml")
        assert [r.failed for r in runs] == [0] * CLUSTERS, [r.out[-3000:] for r in runs if r.failed]
        s = clusters[0].store()
        try:
            left = {kind: [o["metadata"]["name"] for o in s.list(kind, ns)] for kind in OWNED}
            assert {k: v for k, v in left.items() if v} == {}, left
            stored = s.list("BareMetalHost", ns)
            assert {h["metadata"]["name"] for h in stored} == hosts
            assert [h["metadata"]["name"] for h in stored if h["spec"].get("consumerRef")] == []
            stuck = [f"{o['kind']} {o['metadata']['name']}" for kind in ("BareMetalHost", "Secret", "IPPool")
                     for o in s.list(kind, ns) if o["metadata"].get("deletionTimestamp")]  # fmt: skip
            assert stuck == []
            secrets = {o["metadata"]["name"] for o in s.list("Secret", ns)}
            assert all(any(sec.startswith(h) for h in hosts) for sec in secrets), sorted(secrets)
        finally:
            s.close()
    finally:
        _all(clusters[1:], "deprovision_cluster.yml")
        clusters[0].play("deprovision_cluster.yml", {"capi_deregister_hosts": True}, expect_ok=False)
