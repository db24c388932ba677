"""Metal3Machines on the lab, through ansible-playbook: hosts in Ironic, a workload cluster from the node simulator.

A 3-machine group (one control plane, two workers) with a data template and
an IP pool: the hosts are claimed, deployed through Ironic (fake-hardware),
the simulator runs kubeadm init/join from the bootstrap data in the config
drive and registers the Nodes, the collection sets their providerID; re-run
is no change; delete gives the hosts back.  Asserted on Ironic, the workload
kube-apiserver and the store.
"""

from __future__ import annotations

import base64

import pytest
import yaml
from kubernetes.client.exceptions import ApiException

from tests.integration.net import LOOP

from .conftest import INFRA, eventually

pytestmark = pytest.mark.timeout(1500)

POOL = {"namePrefix": "prov", "pools": [{"start": f"{LOOP}.4.100", "end": f"{LOOP}.4.120"}], "prefix": 24}
TEMPLATE = {
    "metaData": {"strings": [{"key": "cluster-role", "value": "lab"}]},
    "networkData": {
        "links": {"ethernets": [{"type": "phy", "id": "enp1s0", "macAddress": {"fromHostInterface": "enp1s0"}}]},
        "networks": {"ipv4": [{"id": "prov", "link": "enp1s0", "ipAddressFromIPPool": "prov"}]},
    },
}


def _machine_objects(ml, name: str, control_plane: bool, secret: str, image: dict) -> list[dict]:
    labels = {"cluster.x-k8s.io/cluster-name": ml.cluster}
    if control_plane:
        labels["cluster.x-k8s.io/control-plane"] = ""
    machine = ml.obj(
        "Machine",
        name,
        {
            "clusterName": ml.cluster,
            "bootstrap": {"dataSecretName": secret},
            "infrastructureRef": {"apiGroup": INFRA, "kind": "Metal3Machine", "name": name},
            "version": "v1.34.4",
        },
        "cluster.x-k8s.io/v1beta2",
        labels=labels,
    )
    m3m = ml.obj(
        "Metal3Machine",
        name,
        {
            "image": {
                "url": image["url"],
                "checksum": image["checksum"],
                "checksumType": image["checksumType"],
                "diskFormat": image["format"],
            },
            "dataTemplate": {"name": "nodes"},
            "automatedCleaningMode": "disabled",
        },
        f"{INFRA}/v1beta2",
    )
    return [machine, m3m]


def _setup(ml, n_hosts: int, redfish: bool = False) -> list[str]:
    """Hosts (fake-hardware, or the lab's Redfish BMCs), the Cluster and its objects; the host names."""
    host, port = ml.endpoint.split(":")
    objects = [
        ml.obj(
            "Cluster",
            ml.cluster,
            {"infrastructureRef": {"apiGroup": INFRA, "kind": "Metal3Cluster", "name": ml.cluster}},
            "cluster.x-k8s.io/v1beta2",
        ),
        ml.secret(f"{ml.cluster}-kubeconfig", ml.kubeconfig),
    ]
    # The bootstrap data holds cloud-init's own Jinja ({{ ds.meta_data.* }}), which Ansible would try to
    # render in a task: these two go into the store directly, as CABPK would write them.
    ml.store.create(ml.secret("cp-bootstrap", ml.init_data(), format="cloud-config"))
    ml.store.create(ml.secret("worker-bootstrap", ml.join_data(), format="cloud-config"))
    image = ml.inv["images"]["test_image"]
    if redfish:
        # Every lab host no Ironic node uses now (all 12 on a lab of its own; others' tests may hold some)
        def free():
            used = {p.address.lower() for p in ml.conn.baremetal.ports()}
            found = [i for i, h in enumerate(ml.inv["hosts"]) if h["boot_mac"].lower() not in used][:n_hosts]
            return found if len(found) >= 4 else None

        hosts = [ml.redfish_host(i) for i in eventually(free, "4 lab Redfish hosts no other test holds")]
    else:
        hosts = [ml.fake_host(i) for i in range(n_hosts)]
    objects += _machine_objects(ml, "cp-0", True, "cp-bootstrap", image)
    for i in range(2):
        objects += _machine_objects(ml, f"worker-{i}", False, "worker-bootstrap", image)
    ml.play(
        [{"baremetal.capi.baremetalhost": {"hosts": hosts, "wait": True}}]
        + [{"baremetal.capi.object": {"definition": o}, "no_log": True} for o in objects]
        + [
            {
                "baremetal.capi.metal3_cluster": {
                    "name": ml.cluster,
                    "control_plane_endpoint": {"host": host, "port": int(port)},
                }
            },
            {"baremetal.capi.ippool": {"name": "prov", "spec": POOL}},
            {"baremetal.capi.metal3_data_template": {"name": "nodes", "spec": TEMPLATE}},
        ]
    )
    return [h["name"] for h in hosts]


def _secret_payload(ml, name: str, key: str):
    return yaml.safe_load(base64.b64decode(ml.store.get("Secret", name, ml.ns)["data"][key]).decode())


@pytest.mark.parametrize(
    "redfish, n_hosts",
    [pytest.param(False, 4, id="fake-hardware"), pytest.param(True, 12, id="redfish-12-hosts")],
)
def test_three_machines_provision_provider_id_rerun_delete(mlab, redfish, n_hosts):
    ml = mlab
    all_hosts = _setup(ml, n_hosts, redfish)

    # check mode: each machine would get its own host; nothing is written, Ironic untouched
    (preview,) = ml.play([{"baremetal.capi.metal3_machine": {"cluster": ml.cluster}}], check=True)
    assert preview["changed"] is True
    would = [m["host"] for m in preview["machines"]]
    assert len(set(would)) == 3 and all(would), preview["machines"]
    assert all("consumerRef" not in h["spec"] for h in ml.store.list("BareMetalHost", ml.ns))
    assert all(ml.node(h).provision_state == "manageable" for h in all_hosts)

    # the control plane first (kubeadm init brings up the workload API), then the rest
    (cp,) = ml.play([{"baremetal.capi.metal3_machine": {"name": "cp-0"}}])
    assert cp["changed"] and cp["machines"][0]["done"], cp["machines"]
    core = ml.workload()
    core.create_namespaced_secret("kube-system", _token_secret(ml.token))
    (all3,) = ml.play([{"baremetal.capi.metal3_machine": {"cluster": ml.cluster}}])
    assert all3["changed"] and all(m["done"] for m in all3["machines"]), all3["machines"]

    hosts_used = set()
    nodes = {n.metadata.name: n for n in core.list_node().items}
    for name in ("cp-0", "worker-0", "worker-1"):
        m3m = ml.store.get("Metal3Machine", name, ml.ns)
        host = m3m["metadata"]["annotations"]["metal3.io/BareMetalHost"].split("/")[1]
        hosts_used.add(host)
        bmh = ml.store.get("BareMetalHost", host, ml.ns)
        provider_id = f"metal3://{ml.ns}/{host}/{name}"
        # the store
        assert bmh["spec"]["consumerRef"]["name"] == name
        assert bmh["status"]["provisioning"]["state"] == "provisioned"
        assert m3m["spec"]["providerID"] == provider_id
        assert m3m["status"]["initialization"]["provisioned"] is True
        machine = ml.store.get("Machine", name, ml.ns)
        assert machine["spec"]["providerID"] == provider_id
        assert machine["status"]["phase"] == "Running"
        assert machine["status"]["nodeRef"]["name"] == host
        md = _secret_payload(ml, f"{name}-metadata", "metaData")
        assert md["providerid"] == f"{ml.ns}/{host}/{name}" and md["cluster-role"] == "lab"
        nd = _secret_payload(ml, f"{name}-networkdata", "networkData")
        assert nd["networks"][0]["ip_address"].startswith(f"{LOOP}.4.1")
        # Ironic: deployed (the lab deploys with the ramdisk interface from its boot ISO); the Node below
        # joined with the bootstrap data, which only the config drive of this deploy carried
        node = ml.node(host)
        assert node.provision_state == "active" and node.instance_id == bmh["metadata"]["uid"]
        assert node.instance_info["boot_iso"] == ml.inv["images"]["boot_iso"]
        # the workload cluster: the Node of the host has the providerID, no uninitialized taint
        wnode = nodes[host]
        assert wnode.spec.provider_id == provider_id
        assert wnode.metadata.labels["metal3.io/uuid"] == bmh["metadata"]["uid"]
        assert "node.cluster.x-k8s.io/uninitialized" not in [t.key for t in wnode.spec.taints or []]
        assert wnode.metadata.annotations["cluster.x-k8s.io/machine"] == name
    assert len(hosts_used) == 3
    assert all(ml.node(h).provision_state == "manageable" for h in set(all_hosts) - hosts_used)
    assert len(ml.store.list("IPClaim", ml.ns)) == 3
    assert ml.store.get("Cluster", ml.cluster, ml.ns)["status"]["initialization"]["infrastructureProvisioned"]

    # converged: the same task again changes nothing
    (again,) = ml.play([{"baremetal.capi.metal3_machine": {"cluster": ml.cluster}}])
    assert again["changed"] is False, again["machines"]
    (info,) = ml.play([{"baremetal.capi.metal3_machine_info": {"cluster": ml.cluster}}])
    assert sorted(m["machine_phase"] for m in info["machines"]) == ["Running"] * 3

    # delete the workers (the control plane stays, so their Nodes go too), then the control plane
    worker_hosts = {n: ml.store.get("Metal3Machine", n, ml.ns)["metadata"]["annotations"]["metal3.io/BareMetalHost"]
                    .split("/")[1] for n in ("worker-0", "worker-1")}  # fmt: skip
    ml.play([{"baremetal.capi.metal3_machine": {"name": n, "state": "absent"}} for n in worker_hosts])
    for name, host in worker_hosts.items():
        # undeployed in Ironic (cleaning is off in the lab, so the node goes straight to available)
        assert ml.node(host).provision_state in ("available", "manageable")
        bmh = ml.store.get("BareMetalHost", host, ml.ns)
        assert bmh["status"]["provisioning"]["state"] == "available"
        assert "consumerRef" not in bmh["spec"] and "image" not in bmh["spec"]
        for kind, obj in (("Metal3Machine", name), ("Machine", name), ("Secret", f"{name}-metadata"),
                          ("Secret", f"{name}-networkdata"), ("Metal3DataClaim", name)):  # fmt: skip
            assert not _exists(ml, kind, obj), (kind, obj)
        with pytest.raises(ApiException) as gone:
            core.read_node(host)
        assert gone.value.status == 404
    assert len(ml.store.list("IPClaim", ml.ns)) == 1

    (last,) = ml.play([{"baremetal.capi.metal3_machine": {"cluster": ml.cluster, "state": "absent"}}])
    assert last["changed"]
    assert ml.store.list("Metal3Machine", ml.ns) == [] and ml.store.list("IPClaim", ml.ns) == []
    assert all(ml.node(h).provision_state in ("available", "manageable") for h in all_hosts)
    assert all(h["status"]["provisioning"]["state"] == "available" for h in ml.store.list("BareMetalHost", ml.ns))
    (absent,) = ml.play([{"baremetal.capi.metal3_machine": {"cluster": ml.cluster, "state": "absent"}}])
    assert absent["changed"] is False


def _exists(ml, kind, name) -> bool:
    from ansible_collections.baremetal.capi.plugins.module_utils.capi import refs

    return refs.get_or_none(ml.store, kind, name, ml.ns) is not None


def _token_secret(token: str) -> dict:
    from ansible_collections.baremetal.capi.plugins.module_utils.bootstrap import pki

    return pki.token_secret(token, 3600)


def test_no_available_host_then_a_host_frees_up(mlab):
    """Two machines, one host: the loser waits and says "No available host found"."""
    ml = mlab
    _setup(ml, 1)
    (res,) = ml.play(
        [{"baremetal.capi.metal3_machine": {"cluster": ml.cluster, "wait_timeout": 20}}], expect_failure=True
    )
    assert res["failed"]
    msgs = {m["name"].split("/")[1]: m["message"] for m in res["machines"]}
    losers = [n for n, msg in msgs.items() if "No available host found" in msg]
    assert len(losers) == 2, msgs  # three machines, one host
    eventually(lambda: ml.node("host-0").provision_state == "active", "the winner's host deployed", patience=120)
