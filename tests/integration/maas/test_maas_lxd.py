"""A MAAS cluster whose worker pool is composed on an LXD VM host, scaled down: VMs decomposed, resources back.

The control plane is bare metal; the workers' MaasMachines carry ``spec.lxd.enabled`` (CAPMAAS's LXD VM
path): the flow picks the VM host, composes the VM (MAAS commissions it), allocates and deploys it by its
system_id. Deleting a worker releases and deletes its VM, which returns its cores, memory and disk to the
host.
"""

from __future__ import annotations

import time
import uuid
from urllib.parse import quote

from tests.integration.maas import objects
from tests.integration.net import LOOP
from tests.integration.nodesim import cabpk

NS = "default"


def _auth(apikey: str) -> dict:
    consumer, token, secret = apikey.split(":")
    return {"Authorization": (
        f'OAuth oauth_consumer_key="{consumer}", oauth_token="{token}", oauth_signature_method="PLAINTEXT", '
        f'oauth_signature="{quote("&" + secret)}", oauth_nonce="{uuid.uuid4().hex}", '
        f'oauth_timestamp="{int(time.time())}", oauth_version="1.0"')}  # fmt: skip


def _host(sim, host_id: int) -> dict:
    return sim.get(f"vm-hosts/{host_id}/")


def test_worker_pool_on_an_lxd_vm_host(sim, play, store, tag, maas_lab):
    address = f"{LOOP}.3.{int(tag[1:3], 16) % 250 + 1}:{8443 + int(tag[3:6], 16) % 1000}"
    sim.ctl("POST", "lxd-hosts", {"address": address, "cores": 8, "memory": 16384, "storage": 200_000_000_000})
    resp = sim.http.post(sim.api + "vm-hosts/", headers=_auth(sim.apikey), timeout=30,
                         data={"type": "lxd", "power_address": f"https://{address}", "name": f"lxd-{tag}",
                               "zone": "az-1", "password": "trust-me"})  # fmt: skip
    assert resp.status_code == 200, resp.text
    host = resp.json()
    try:
        assert host["total"] == {"cores": 8, "memory": 16384, "local_storage": 200_000_000_000}
        _run(sim, play, store, tag, host)
    finally:
        sim.http.delete(sim.api + f"vm-hosts/{host['id']}/", headers=_auth(sim.apikey), timeout=30)


def _run(sim, play, store, tag, host):
    cname = f"c{tag[1:7]}"
    cp_tags = [f"{tag}cp"]
    s0 = sim.seed({"zone": "az-1", "tags": cp_tags}, tag=tag)[0]
    for obj in objects.cluster(cname, NS, ["az-1"]):
        store.create(obj)
    r = play("maas_cluster", {"name": cname})
    assert not r.get("failed"), r.get("msg") or r
    fqdn = r["dns_name"]
    endpoint = f"{fqdn}:6443"
    ca, token = cabpk.new_cluster_ca(), cabpk.new_token()
    kubeconfig = objects.admin_kubeconfig(cname, f"{s0['ip']}:6443", ca)
    store.create(objects.secret(f"{cname}-kubeconfig", NS, cname, kubeconfig))
    vm = {"minCPU": 2, "minMemory": 4096, "failureDomain": "az-1", "image": "ubuntu/jammy",
          "lxd": {"enabled": True, "vmConfig": {"diskSize": 20}}, "deployInMemory": True}  # fmt: skip
    specs = {"cp-0": {"image": "ubuntu/jammy", "tags": [tag, *cp_tags], "systemID": s0["system_id"]},
             "w-0": vm, "w-1": vm}  # fmt: skip
    data = {"cp-0": objects.init_data(cname, endpoint, ca)}
    data.update({w: objects.join_data(endpoint, ca, token, control_plane=False) for w in ("w-0", "w-1")})
    for name, text in data.items():
        store.create(objects.secret(f"{name}-bootstrap", NS, cname, text))
        for obj in objects.machine(name, NS, cname, control_plane=name.startswith("cp"), spec=specs[name]):
            store.create(obj)
    r = play("maas_machine", {"name": "cp-0", "wait_timeout": 300})
    assert not r.get("failed"), r.get("msg")
    objects.create_token(kubeconfig, token)

    # check mode names the VM it would compose and composes nothing
    r = play("maas_machine", {"name": "w-0"}, check=True)
    assert not r.get("failed") and r["changed"], r
    assert _host(sim, host["id"])["used"]["cores"] == 0

    r = play("maas_machine", {"cluster": cname, "wait_timeout": 300})
    assert not r.get("failed"), r.get("msg")
    vms = {}
    for name in ("w-0", "w-1"):
        mm = store.get("MaasMachine", name, NS)
        sid = mm["spec"]["providerID"].rsplit("/", 1)[-1]
        m = sim.machine(sid)
        vms[name] = sid
        uid = mm["metadata"]["uid"].replace("-", "")[:5]
        assert m["hostname"] == f"vm-{name}-{uid}", m["hostname"]
        assert (m["status_name"], m["power_state"], m["user_data"]) == ("Deployed", "on", data[name])
        assert (m["cpu_count"], m["memory"], m["zone"]) == (2, 4096, "az-1")
        assert m["ephemeral_deploy"] is False  # CAPMAAS deploys a composed VM to disk
        assert sim.get(f"machines/{sid}/")["pod"]["id"] == host["id"]
        assert sim.get(f"machines/{sid}/")["power_type"] == "lxd"
    used = _host(sim, host["id"])["used"]
    assert used == {"cores": 4, "memory": 8192, "local_storage": 40_000_000_000}
    assert sim.machine(s0["system_id"])["status_name"] == "Deployed"

    # scale the pool down by one: the VM is released and decomposed, its resources go back to the host
    r = play("maas_machine", {"name": "w-1", "state": "absent", "wait_timeout": 300})
    assert not r.get("failed"), r.get("msg")
    assert sim.http.get(sim.control + f"machines/{vms['w-1']}", timeout=30).status_code == 404
    assert _host(sim, host["id"])["used"] == {"cores": 2, "memory": 4096, "local_storage": 20_000_000_000}
    assert sim.machine(vms["w-0"])["status_name"] == "Deployed"
    r = play("maas_machine", {"name": "w-0", "state": "absent", "wait_timeout": 300})
    assert not r.get("failed"), r.get("msg")
    assert _host(sim, host["id"])["used"] == {"cores": 0, "memory": 0, "local_storage": 0}
    assert _host(sim, host["id"])["available"]["cores"] == 8
