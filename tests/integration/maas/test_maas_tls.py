"""A MAAS cluster over HTTPS with certificate verification on; a wrong CA, or none, refused with a clear error.

The simulator serves the same API on HTTPS with a certificate from the lab's CA
(``lab.info["maas"]["tls_url"]``, ``ca_file``). The modules run by ansible-playbook, the CA given through
``MAAS_CA_BUNDLE`` as an operator would.
"""

from __future__ import annotations

from lab.maas_sim import tls as lab_tls
from tests.integration.maas import objects
from tests.integration.nodesim import cabpk

NS = "default"


def test_cluster_over_https_verified(sim, play, store, tag, maas_lab, tmp_path):
    info = maas_lab.info["maas"]
    https = {"MAAS_URL": info["tls_url"], "MAAS_CA_BUNDLE": info["ca_file"]}
    cname = f"c{tag[1:7]}"
    cp_tags, w_tags = [f"{tag}cp"], [f"{tag}w"]
    s0 = sim.seed({"zone": "az-1", "tags": cp_tags}, tag=tag)[0]
    s1 = sim.seed({"zone": "az-2", "tags": w_tags}, tag=tag)[0]
    for obj in objects.cluster(cname, NS, ["az-1", "az-2"]):
        store.create(obj)

    # a CA that did not sign the region's certificate: refused before anything is written
    other_ca, _ = lab_tls.make_ca(tmp_path / "other-ca", "not the lab CA")
    r = play("maas_cluster", {"name": cname}, env={**https, "MAAS_CA_BUNDLE": str(other_ca)})
    assert r.get("failed"), r
    assert "TLS certificate is not trusted by the CA bundle" in r["msg"] and str(other_ca) in r["msg"], r["msg"]
    assert "maas_ca_bundle" in r["msg"]
    assert [d for d in sim.get("dnsresources/") if d["fqdn"].startswith(f"{cname}-")] == []
    # no CA at all: the system's CAs do not know the lab's
    r = play("maas_cluster", {"name": cname}, env={"MAAS_URL": info["tls_url"]})
    assert r.get("failed") and "not trusted by the system's CA certificates" in r["msg"], r
    # a CA bundle path that is no file: named as the field it came from
    r = play("maas_cluster", {"name": cname}, env={**https, "MAAS_CA_BUNDLE": str(tmp_path / "nope.pem")})
    assert r.get("failed") and "maas_ca_bundle" in r["msg"] and "is not a file" in r["msg"], r

    # the lab CA: the cluster's DNS record, then a control plane and a worker deployed over HTTPS
    r = play("maas_cluster", {"name": cname}, env=https)
    assert not r.get("failed"), r.get("msg") or r
    fqdn = r["dns_name"]
    assert len(sim.dns(fqdn)) == 1
    endpoint = f"{fqdn}:6443"
    ca, token = cabpk.new_cluster_ca(), cabpk.new_token()
    kubeconfig = objects.admin_kubeconfig(cname, f"{s0['ip']}:6443", ca)
    store.create(objects.secret(f"{cname}-kubeconfig", NS, cname, kubeconfig))
    data = {"cp-0": objects.init_data(cname, endpoint, ca),
            "w-0": objects.join_data(endpoint, ca, token, control_plane=False)}  # fmt: skip
    specs = {"cp-0": {"image": "ubuntu/jammy", "tags": [tag, *cp_tags], "systemID": s0["system_id"]},
             "w-0": {"image": "ubuntu/jammy", "tags": [tag, *w_tags], "failureDomain": "az-2"}}  # fmt: skip
    for name, text in data.items():
        store.create(objects.secret(f"{name}-bootstrap", NS, cname, text))
        for obj in objects.machine(name, NS, cname, control_plane=name.startswith("cp"), spec=specs[name]):
            store.create(obj)
    r = play("maas_machine", {"name": "cp-0", "wait_timeout": 300}, env=https)
    assert not r.get("failed"), r.get("msg")
    objects.create_token(kubeconfig, token)
    r = play("maas_machine", {"cluster": cname, "wait_timeout": 300}, env=https)
    assert not r.get("failed"), r.get("msg")
    for s, name in ((s0, "cp-0"), (s1, "w-0")):
        m = sim.machine(s["system_id"])
        assert (m["status_name"], m["power_state"], m["user_data"]) == ("Deployed", "on", data[name]), name
    assert sim.dns_ips(fqdn) == [s0["ip"]]
    assert not r.get("warnings"), r.get("warnings")

    # validate_certs=false works over HTTPS, and says so
    r = play("maas_machine_info", {"cluster": cname, "maas_validate_certs": False}, env={"MAAS_URL": info["tls_url"]})
    assert not r.get("failed"), r.get("msg")
    assert any("maas_validate_certs=false" in w for w in r.get("warnings", [])), r.get("warnings")
