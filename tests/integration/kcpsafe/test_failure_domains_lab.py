"""Failure domains through provision_cluster.yml, on both providers: 3 control-plane machines, 3 domains.

Every domain has three candidates, as many as the whole control plane (BareMetalHosts labelled with CAPM3's
failure-domain label; MAAS machines in the zone), and the inventory lists them domain by domain: any one domain
could take every control-plane machine, and a domain-blind choice in inventory order (the MAAS simulator
allocates the first fitting machine) would put them all in the first. So the one-machine-per-domain spread can
only come from Cluster.status.failureDomains (mirrored from the Metal3Cluster / MaasCluster), KCP's placement, and
the provider honouring each Machine's failure domain.
"""

from __future__ import annotations

import random

import pytest
import requests

from tests.integration.e2e.conftest import E2E, free_endpoint, new_names, prov_network
from tests.integration.net import LOOP

pytestmark = pytest.mark.timeout(2400)

DOMAINS = ("fd-1", "fd-2", "fd-3")
PER_DOMAIN = 3  # = the control plane's replicas: more than enough candidates in every domain
FD_LABEL = "infrastructure.cluster.x-k8s.io/failure-domain"
CP_LABEL = "cluster.x-k8s.io/control-plane"


def _metal3_description(name, ns, endpoint, inv, octet):
    image = inv["images"]["test_image"]
    image = {k: image[k] for k in ("url", "checksum", "checksumType", "format")}
    hosts = []
    for i in range(PER_DOMAIN * len(DOMAINS)):  # domain by domain: fd-1's hosts first
        mac = f"52:54:00:{int(name[1:3], 16):02x}:{int(name[3:5], 16):02x}:{i:02x}"
        hosts.append({
            "name": f"{name}-host-{i}",
            "labels": {FD_LABEL: DOMAINS[i // PER_DOMAIN]},
            "spec": {"bmc": {"address": f"fake://{name}-host-{i}"}, "bootMACAddress": mac,
                     "automatedCleaningMode": "disabled", "inspectionMode": "disabled"},
            "hardware": {"hostname": f"{name}-host-{i}", "nics": [{"name": "enp1s0", "mac": mac,
                                                                      "ip": f"{LOOP}.{octet}.{10 + i}"}]},
        })  # fmt: skip
    return {
        "name": name,
        "namespace": ns,
        "provider": "metal3",
        "kubernetes_version": "v1.34.4",
        "control_plane_endpoint": {"host": endpoint, "port": 6443},
        "control_plane": {"replicas": 3, "image": image, "automated_cleaning_mode": "disabled",
                          "failure_domains": list(DOMAINS)},
        "workers": [],
        **prov_network(name, octet),
        "hosts": hosts,
    }  # fmt: skip


def _assert_cluster_domains(e: E2E) -> None:
    s = e.store()
    try:
        cluster = s.get("Cluster", e.name, e.ns)
    finally:
        s.close()
    assert cluster["status"]["failureDomains"] == [{"name": d, "controlPlane": True} for d in DOMAINS]


def _control_planes(e: E2E) -> dict[str, dict]:
    return {n: m for n, m in e.machines().items() if CP_LABEL in m["metadata"]["labels"]}


def test_metal3_control_plane_spread_over_failure_domains(e2e_lab, ironic_inventory, tmp_path):
    inv = ironic_inventory
    name, ns = new_names("f")
    desc = _metal3_description(name, ns, free_endpoint(f"{LOOP}.9"), inv, random.randint(100, 199))
    driver = {"ironic_url": inv["ironic"]["url"], "boot_iso": inv["images"]["boot_iso"], "poll": 1}
    e = E2E(e2e_lab, tmp_path, "metal3", desc, {"capi_host_driver_options": driver, "capi_no_log_hosts": False})
    try:
        e.play("provision_cluster.yml")
        _assert_cluster_domains(e)
        cps = _control_planes(e)
        assert len(cps) == 3
        assert sorted(m["spec"]["failureDomain"] for m in cps.values()) == list(DOMAINS)
        s = e.store()
        try:
            hosts = {h["metadata"]["name"]: h for h in s.list("BareMetalHost", ns)}
            for mname, m in cps.items():
                m3m = s.get("Metal3Machine", mname, ns)
                assert m3m["spec"]["failureDomain"] == m["spec"]["failureDomain"]
                host = hosts[m3m["metadata"]["annotations"]["metal3.io/BareMetalHost"].rpartition("/")[2]]
                # CAPM3 chose a host carrying the machine's failure-domain label
                assert host["metadata"]["labels"][FD_LABEL] == m["spec"]["failureDomain"], (mname, host["metadata"])
                assert m["status"].get("failureDomain") == m["spec"]["failureDomain"]
        finally:
            s.close()
        nodes = e.workload_nodes()
        assert {cps[n]["status"]["nodeRef"]["name"] for n in cps} <= set(nodes)
    finally:
        e.play("deprovision_cluster.yml", expect_ok=False)


def test_maas_control_plane_spread_over_zones(e2e_lab, tmp_path):
    control = e2e_lab.info["maas"]["control_url"]
    name, ns = new_names("z")
    tag = f"t{name}"
    # zone by zone, fd-1's machines first (the simulator allocates the first fitting machine, in creation order)
    specs = [{"hostname": f"{tag}-{i}", "zone": DOMAINS[i // PER_DOMAIN], "tags": [tag], "cpu_count": 4,
              "memory": 8192} for i in range(PER_DOMAIN * len(DOMAINS))]  # fmt: skip
    requests.post(control + "machines", json={"machines": specs}, timeout=30).raise_for_status()
    desc = {
        "name": name,
        "namespace": ns,
        "provider": "maas",
        "kubernetes_version": "v1.34.4",
        "dns_domain": "maas",
        "endpoint_via_maas_dns": True,
        "control_plane": {"replicas": 3, "image": "ubuntu/jammy", "constraints": {"tags": [tag]},
                          "failure_domains": list(DOMAINS)},
        "workers": [],
    }  # fmt: skip
    maas = e2e_lab.info["maas"]
    e = E2E(e2e_lab, tmp_path, "maas", desc, {"capi_maas_url": maas["url"], "capi_maas_api_key": maas["api_key"]})
    try:
        e.play("provision_cluster.yml")
        _assert_cluster_domains(e)
        cps = _control_planes(e)
        assert sorted(m["spec"]["failureDomain"] for m in cps.values()) == list(DOMAINS)
        sim = {m["system_id"]: m for m in requests.get(control + "machines", timeout=30).json() if tag in m["tags"]}
        s = e.store()
        try:
            for mname, m in cps.items():
                mm = s.get("MaasMachine", mname, ns)
                system_id = mm["spec"]["systemID"]
                # allocated in the machine's zone, and the providerID says so (maas:///<zone>/<system-id>)
                assert sim[system_id]["zone"] == m["spec"]["failureDomain"], (mname, sim[system_id])
                assert mm["spec"]["providerID"] == f"maas:///{m['spec']['failureDomain']}/{system_id}"
        finally:
            s.close()
    finally:
        e.play("deprovision_cluster.yml", expect_ok=False)
