"""IPAM through a whole Metal3 cluster's life on the lab, on the sqlite store and on the kubernetes store.

provision_cluster.yml makes a 1 control-plane + 1 worker cluster (fake-hardware lab hosts, node simulator) whose
networkData takes one network from a Metal3 IPPool through ``ipAddressFromIPPool`` and a second from another
Metal3 IPPool through ``fromPoolRef`` (group ``ipam.metal3.io``, kind ``IPPool``: CAPM3's isMetal3IPPoolRef makes
a Metal3 IPClaim of it, as upstream does).  A user of the Cluster API IPAM contract claims an address of that
second pool with an ``ipam.cluster.x-k8s.io`` IPAddressClaim (a VIP, say), answered by the pool as
ip-address-manager answers it.  Every claim answered, every host's network data (what Ironic hands the host)
carrying both of its addresses, nothing handed out twice; a second run changes nothing; the user gives the VIP
back (its claim deleted: IPAM's finalizer holds it until the pool lets the address go); deprovision_cluster.yml
(deregistering the hosts) leaves no IPClaim, IPAddressClaim, IPAddress (either group) or IPPool behind.
"""

from __future__ import annotations

import base64
import ipaddress
import random

import openstack
import pytest
import yaml

from ansible_collections.baremetal.capi.plugins.module_utils.errors import NotFound
from ansible_collections.baremetal.capi.plugins.module_utils.metal3.ipam_capi import CLAIM_KIND
from ansible_collections.baremetal.capi.plugins.module_utils.model import kinds, meta, names
from lab.ironic import iso
from lab.services import kube as kube_svc
from tests.integration.e2e.conftest import E2E, free_endpoint, metal3_description, new_names
from tests.integration.net import LOOP

pytestmark = pytest.mark.timeout(1800)

CP_LABEL = "cluster.x-k8s.io/control-plane"
EXT_GATEWAY = "192.0.2.1"
EXT_RANGE = ("192.0.2.10", "192.0.2.20")


def _description(name, ns, inv, octet):
    desc = metal3_description(name, ns, free_endpoint(f"{LOOP}.9"), inv, octet, hosts=2)
    ext = f"{name}-ext"
    ext_ref = {"apiGroup": kinds.M3IPAM_GROUP, "kind": "IPPool", "name": ext}
    desc["ip_pools"].append(
        {
            "name": ext,
            "spec": {
                "namePrefix": ext,
                "prefix": 24,
                "gateway": EXT_GATEWAY,
                "pools": [{"start": EXT_RANGE[0], "end": EXT_RANGE[1]}],
            },
        }
    )
    networks = desc["data_template"]["spec"]["networkData"]["networks"]["ipv4"]
    networks.append(
        {
            "id": "ext",
            "link": "enp1s0",
            "fromPoolRef": ext_ref,
            "routes": [{"network": "0.0.0.0", "prefix": 0, "gateway": {"fromPoolRef": ext_ref}}],
        }
    )
    return desc, f"{name}-prov", ext


def _in(ip: str, first: str, last: str) -> bool:
    return ipaddress.ip_address(first) <= ipaddress.ip_address(ip) <= ipaddress.ip_address(last)


def _claimed(s, ns: str, pools: tuple[str, str]) -> dict[str, dict[str, str]]:
    """{Metal3Data: {pool: address}} from the IPClaims and their Metal3 IPAddresses, checked on the way."""
    out = {}
    for data in s.list("Metal3Data", ns):
        dname = meta.name(data)
        out[dname] = {}
        for pool in pools:
            claim = s.get("IPClaim", f"{dname}-{pool}", ns)
            assert [r["uid"] for r in claim["metadata"]["ownerReferences"]] == [data["metadata"]["uid"]]
            assert names.METAL3_DATA_FINALIZER in meta.finalizers(claim)
            assert names.IPCLAIM_FINALIZER in meta.finalizers(claim)
            addr = s.get(kinds.M3_IPADDRESS, claim["status"]["address"]["name"], ns)
            assert addr["spec"]["pool"]["name"] == pool and addr["spec"]["claim"]["name"] == meta.name(claim)
            out[dname][pool] = addr["spec"]["address"]
            # fromPoolRef to a Metal3 pool is a Metal3 IPClaim, never a Cluster API claim (isMetal3IPPoolRef)
            with pytest.raises(NotFound):
                s.get(CLAIM_KIND, f"{dname}-{pool}", ns)
    return out


def _host_network_data(cfg, conn, ns: str, bmh: dict) -> dict:
    """The network_data of the config drive Ironic holds for the host (what cloud-init on it reads)."""
    node = conn.baremetal.get_node(f"{ns}~{meta.name(bmh)}")
    drive = iso.stored_config_drive(cfg, node.id)
    assert drive is not None, f"no config drive on Ironic node {node.name}"
    return drive["network_data"]


def _versions(s, ns: str) -> dict[str, str]:
    """{kind/name: resourceVersion} of every object in the namespace (what a run wrote shows as a new version)."""
    out = {}
    for k in kinds.ALL:
        if k.namespaced:
            for obj in s.list(k.key, ns):
                out[f"{k.key}/{meta.name(obj)}"] = obj["metadata"].get("resourceVersion")
    return out


def _ironic_states(conn, ns: str) -> dict[str, str]:
    nodes = conn.baremetal.nodes(fields=["name", "provision_state"])
    return {n.name.split("~", 1)[1]: n.provision_state for n in nodes if (n.name or "").startswith(ns + "~")}


@pytest.mark.parametrize("store_kind", ["sqlite", "kubernetes"])
def test_ipam_claims_of_a_metal3_cluster_answered_rendered_and_released(
    store_kind, lab, machine_lab_inventory, tmp_path
):
    inv = machine_lab_inventory
    name, ns = new_names("i")
    desc, prov, ext = _description(name, ns, inv, random.randint(100, 199))
    store = None
    if store_kind == "kubernetes":
        store = {"kind": "kubernetes", "kubeconfig": str(kube_svc.kubeconfig_path(lab.cfg))}
    driver = {"ironic_url": inv["ironic"]["url"], "boot_iso": inv["images"]["boot_iso"], "poll": 1}
    e = E2E(lab, tmp_path, "metal3", desc, {"capi_host_driver_options": driver, "capi_no_log_hosts": False}, store)
    conn = openstack.connect(auth_type="none", baremetal_endpoint_override=inv["ironic"]["url"])
    s = e.store()
    vip = f"{name}-vip"
    deprovisioned = None
    try:
        # the contract's other user: its claim waits in the namespace for the pool that answers it
        s.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        s.create(
            {
                "apiVersion": f"{kinds.CAPI_IPAM_GROUP}/v1beta2",
                "kind": "IPAddressClaim",
                "metadata": {"name": vip, "namespace": ns, "labels": {names.CLUSTER_NAME_LABEL: name}},
                "spec": {"poolRef": {"apiGroup": kinds.M3IPAM_GROUP, "kind": "IPPool", "name": ext}},
            }
        )

        e.play("provision_cluster.yml")
        machines = e.machines()
        assert sorted(CP_LABEL in m["metadata"]["labels"] for m in machines.values()) == [False, True]
        nodes = e.workload_nodes()
        for mname, m in machines.items():
            assert m["status"]["phase"] == "Running", (mname, m["status"])
            assert nodes[m["status"]["nodeRef"]["name"]]["ready"] == "True", (mname, nodes)

        # every Metal3Data has both addresses, each from its pool's range; none handed out twice
        claimed = _claimed(s, ns, (prov, ext))
        assert len(claimed) == 2, claimed
        prov_entry = desc["ip_pools"][0]["spec"]["pools"][0]
        for pools in claimed.values():
            assert _in(pools[prov], prov_entry["start"], prov_entry["end"]) and _in(pools[ext], *EXT_RANGE), pools
        assert len({pools[prov] for pools in claimed.values()}) == 2

        # the Cluster API claim, answered as ip-address-manager answers it
        claim = s.get(CLAIM_KIND, vip, ns)
        assert names.CAPI_IPADDRESSCLAIM_FINALIZER in meta.finalizers(claim)
        [cond] = claim["status"]["deprecated"]["v1beta1"]["conditions"]
        assert (cond["type"], cond["status"], cond["reason"]) == ("ErrorMessage", "False", "ErrorMessage")
        vip_addr = s.get(kinds.CAPI_IPADDRESS, claim["status"]["addressRef"]["name"], ns)
        assert vip_addr["spec"]["poolRef"] == {"apiGroup": kinds.M3IPAM_GROUP, "kind": "IPPool", "name": ext}
        assert vip_addr["spec"]["claimRef"] == {"name": vip}
        assert (vip_addr["spec"]["prefix"], vip_addr["spec"]["gateway"]) == (24, EXT_GATEWAY)
        assert names.CAPI_IPADDRESS_FINALIZER in meta.finalizers(vip_addr)
        vip_ip = vip_addr["spec"]["address"]
        assert _in(vip_ip, *EXT_RANGE)
        ext_record = {f"{d}-{ext}": pools[ext] for d, pools in claimed.items()}
        assert s.get("IPPool", ext, ns)["status"]["indexes"] == {**ext_record, vip: vip_ip}
        assert len(set(ext_record.values()) | {vip_ip}) == 3

        # each host's network data - the rendered Secret and the config drive Ironic gives the host - carries both
        hosts = [h for h in s.list("BareMetalHost", ns) if h["spec"].get("consumerRef")]
        assert len(hosts) == 2
        for bmh in hosts:
            data = s.get("Metal3Machine", bmh["spec"]["consumerRef"]["name"], ns)["status"]["renderedData"]["name"]
            secret = s.get("Secret", bmh["spec"]["networkData"]["name"], ns)
            rendered = yaml.safe_load(base64.b64decode(secret["data"]["networkData"]))
            on_host = _host_network_data(lab.cfg, conn, ns, bmh)
            assert on_host["networks"] == rendered["networks"], (on_host, rendered)
            nets = {n["id"]: n for n in on_host["networks"]}
            assert nets["prov"]["ip_address"] == claimed[data][prov]
            assert nets["ext"]["ip_address"] == claimed[data][ext]
            assert nets["ext"]["netmask"] == "255.255.255.0"
            assert nets["ext"]["routes"] == [
                {"network": "0.0.0.0", "netmask": "0.0.0.0", "gateway": EXT_GATEWAY, "services": []}
            ]

        # converged: a second run changes nothing, and answers nothing again
        before = _versions(s, ns)
        again = e.play("provision_cluster.yml")
        after = _versions(s, ns)
        written = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
        assert again.changed == 0, f"objects written: {written}\n{again.out[-6000:]}"
        assert s.get(CLAIM_KIND, vip, ns)["status"]["addressRef"] == claim["status"]["addressRef"]

        # the VIP's user gives it back: IPAM's finalizer keeps the claim until the pool lets the address go
        assert meta.is_deleting(s.delete(CLAIM_KIND, vip, ns))
        deprovisioned = e.play("deprovision_cluster.yml", {"capi_deregister_hosts": True})
        for kind in (
            "Machine",
            "Metal3Data",
            "IPClaim",
            kinds.M3_IPADDRESS,
            CLAIM_KIND,
            kinds.CAPI_IPADDRESS,
            "IPPool",
            "Cluster",
        ):
            assert s.list(kind, ns) == [], (kind, s.list(kind, ns))
        assert s.list("BareMetalHost", ns) == [] and _ironic_states(conn, ns) == {}  # deregistered
    finally:
        if deprovisioned is None:  # a failure above: the VIP too goes, so that the pools and hosts can
            try:
                s.delete(CLAIM_KIND, vip, ns)
            except NotFound:
                pass
            e.play("deprovision_cluster.yml", {"capi_deregister_hosts": True}, expect_ok=False)
        s.close()
        conn.close()
        if store_kind == "kubernetes":
            client = kube_svc.api_client(lab.cfg)
            kube_svc.delete_namespace(client, ns)
            client.close()
