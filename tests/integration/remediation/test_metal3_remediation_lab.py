"""Metal3 remediation on the lab: Redfish hosts powered off and on through Ironic, Nodes from the node simulator.

One workload cluster: the control plane on a fake-hardware host (it keeps the workload API up), two workers on
Redfish hosts (sushy-tools behind the fault proxy).

* worker ``wa``: its kubelet is stopped (lab fault), the Node goes Unknown; ``playbooks/remediate.yml`` (health
  check -> metal3_remediation) powers the host off and on through Ironic/Redfish - seen in the emulated BMC's
  power state - taints the Node out-of-service while it is off and lifts the taint once it is back; the
  reboot cures the kubelet (the test starts it again once the BMC is off) and the remediation ends with the Node
  Ready.  Re-running the playbook changes nothing.
* worker ``wb``: its kubelet never comes back.  The engine runs with an injected clock (timeoutSeconds 100
  without waiting 100 s) and the delete fencing: Node labels backed up, Node deleted; two power cycles through
  Redfish (retryLimit 1), then ``Deleting machine``, the host annotated unhealthy, the Machine
  OwnerRemediated=False, and host choice passes the host over.
"""

from __future__ import annotations

import datetime
import json
import time

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.capi import workload as wl
from ansible_collections.baremetal.capi.plugins.module_utils.hosts.base import get_driver
from ansible_collections.baremetal.capi.plugins.module_utils.metal3 import choose
from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions
from ansible_collections.baremetal.capi.plugins.module_utils.remediation import reboot
from ansible_collections.baremetal.capi.plugins.module_utils.remediation.targets import Metal3Target
from lab.nodesim import client as nodesim
from tests.integration import cni

from .conftest import PowerHistory, bmc_power, eventually, free_redfish_hosts, redfish_entry, run_playbook

pytestmark = pytest.mark.timeout(2400)

INFRA = "infrastructure.cluster.x-k8s.io"
OOS = "node.kubernetes.io/out-of-service"


def _machine(ml, name: str, role: str, secret: str, control_plane: bool = False) -> list[dict]:
    labels = {"cluster.x-k8s.io/cluster-name": ml.cluster}
    if control_plane:
        labels["cluster.x-k8s.io/control-plane"] = ""
    image = ml.inv["images"]["test_image"]
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
            "hostSelector": {"matchLabels": {"role": role}},
            "automatedCleaningMode": "disabled",
        },
        f"{INFRA}/v1beta2",
    )
    return [machine, m3m]


def _host_of(ml, machine: str) -> str:
    return ml.store.get("Metal3Machine", machine, ml.ns)["metadata"]["annotations"]["metal3.io/BareMetalHost"].split(
        "/"
    )[1]


def _node(core, name):
    from kubernetes.client.exceptions import ApiException

    try:
        return core.api_client.sanitize_for_serialization(core.read_node(name))
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def _tainted(node) -> bool:
    return bool(node) and OOS in [t["key"] for t in (node["spec"].get("taints") or [])]


def _ready(node) -> str:
    return wl.node_ready(node) if node else "gone"


def _remediate_playbook(ml, *flags: str):
    """playbooks/remediate.yml as an AWX schedule would run it, on this test's store and cluster."""
    extra_vars = {
        "capi_cluster": ml.cluster,
        "capi_namespace": ml.ns,
        "capi_store": {"path": ml.db},
        "capi_unhealthy_timeout": 0,
        "capi_fencing": "taint",
        "capi_remediation_strategy": {"retryLimit": 1, "timeoutSeconds": 600},
        "capi_host_driver_options": {"ironic_url": ml.inv["ironic"]["url"], "poll": 1},
        "capi_remediation_timeout": 900,
    }
    return run_playbook("remediate.yml", ml.tmp, extra_vars, ["capi_health", "capi_remediated"], *flags)


def test_metal3_reboot_remediation_through_redfish(mlab):
    ml = mlab
    wa_host, wb_host = free_redfish_hosts(ml, 2)
    host, port = ml.endpoint.split(":")
    cp_host = ml.fake_host(0, role="cp")
    spare = ml.fake_host(1, role="wb")
    objects = [
        ml.obj(
            "Cluster",
            ml.cluster,
            {"infrastructureRef": {"apiGroup": INFRA, "kind": "Metal3Cluster", "name": ml.cluster}},
            "cluster.x-k8s.io/v1beta2",
        ),
        ml.secret(f"{ml.cluster}-kubeconfig", ml.kubeconfig),
        *_machine(ml, "cp-0", "cp", "cp-bootstrap", control_plane=True),
        *_machine(ml, "wa", "wa", "worker-bootstrap"),
        *_machine(ml, "wb", "wb", "worker-bootstrap"),
    ]
    ml.store.create(ml.secret("cp-bootstrap", ml.init_data(), format="cloud-config"))
    ml.store.create(ml.secret("worker-bootstrap", ml.join_data(), format="cloud-config"))
    hosts = [cp_host, redfish_entry(wa_host, role="wa"), redfish_entry(wb_host, role="wb")]
    ml.play(
        [{"baremetal.capi.baremetalhost": {"hosts": hosts, "wait": True, "workers": 3}}]
        + [{"baremetal.capi.object": {"definition": o}, "no_log": True} for o in objects]
        + [
            {
                "baremetal.capi.metal3_cluster": {
                    "name": ml.cluster,
                    "control_plane_endpoint": {"host": host, "port": int(port)},
                }
            }
        ]
    )
    ml.play([{"baremetal.capi.metal3_machine": {"name": "cp-0"}}])
    core = ml.workload()
    from ansible_collections.baremetal.capi.plugins.module_utils.bootstrap import pki

    def token_created():
        try:
            core.create_namespaced_secret("kube-system", pki.token_secret(ml.token, 3600))
        except Exception:  # noqa: BLE001 - the workload API server is still starting
            return False
        return True

    eventually(token_created, "the workload API (kubeadm init on cp-0)")
    cni.apply(ml.kubeconfig)  # the lab's Nodes are NotReady until a CNI runs
    ml.play([{"baremetal.capi.metal3_machine": {"cluster": ml.cluster}}])
    assert (_host_of(ml, "wa"), _host_of(ml, "wb")) == (wa_host["name"], wb_host["name"])
    for name in (wa_host["name"], wb_host["name"]):
        eventually(lambda n=name: _ready(_node(core, n)) == "True", f"Node {name} Ready")
    # the spare host is registered after provisioning so that it is the only other choice for role=wb later
    ml.play([{"baremetal.capi.baremetalhost": {"hosts": [spare], "wait": True}}])

    # --- wa: kubelet hangs; the playbook reboots the host, the Node comes back ----------------------------
    nodesim.stop_kubelet(ml.cfg, wa_host["name"], cluster=ml.endpoint)
    eventually(lambda: _ready(_node(core, wa_host["name"])) == "Unknown", "wa's Node Unknown")
    time.sleep(2)  # Unknown for a moment: the health check's clock has moved past the transition
    # check mode: the playbook says what it would do and nothing is written or powered
    _proc, read_check = _remediate_playbook(ml, "--check")
    rc, preview, output = read_check(timeout=600)
    assert rc == 0, output
    assert (
        preview["capi_remediated"]["changed"]
        and "would create" in preview["capi_remediated"]["remediations"][0]["message"]
    )
    assert ml.store.list("Metal3Remediation", ml.ns) == [] and bmc_power(wa_host) == "On"
    taint = PowerHistory(lambda: "tainted" if _tainted(_node(core, wa_host["name"])) else "clear")
    with PowerHistory(lambda: bmc_power(wa_host)) as power, taint:
        proc, read = _remediate_playbook(ml)
        # the reboot cures the kubelet: once the BMC reports the host off, the kubelet will start with it
        eventually(lambda: power.offs() >= 1 or proc.poll() is not None, "wa powered off (BMC)")
        nodesim.start_kubelet(ml.cfg, wa_host["name"], cluster=ml.endpoint)
        rc, results, output = read(timeout=1200)
        eventually(lambda: power.values[-1:] == ["On"], "wa back on (BMC)", patience=30)
    assert rc == 0, output
    health = results["capi_health"]
    assert [m["machine"] for m in health["unhealthy"]] == ["wa"], health["machines"]
    rem_res = results["capi_remediated"]
    assert rem_res["changed"] and rem_res["remediations"][0]["outcome"] == "remediated", rem_res
    # the BMC saw exactly one power cycle; the Node was tainted while off and is Ready and untainted now
    assert power.values[-3:] == ["On", "Off", "On"] and power.offs() == 1, power.values
    # fenced while off, the taint lifted once the host was back
    assert taint.values == ["clear", "tainted", "clear"], taint.values
    node = _node(core, wa_host["name"])
    assert _ready(node) == "True" and not _tainted(node)
    assert (rem_res["remediations"][0]["phase"], rem_res["remediations"][0]["retryCount"]) == ("Waiting", 0)
    # healthy again: the remediation is deleted, as MachineHealthCheck deletes it (its finalizer was let go)
    assert ml.store.list("Metal3Remediation", ml.ns) == []
    bmh = ml.store.get("BareMetalHost", wa_host["name"], ml.ns)
    assert bmh["status"]["poweredOn"] is True
    assert not [k for k in bmh["metadata"].get("annotations", {}) if k.startswith("reboot.metal3.io")]
    assert ml.node(wa_host["name"]).power_state == "power on"
    # converged: the playbook again finds nothing to do and powers nothing
    with PowerHistory(lambda: bmc_power(wa_host)) as quiet:
        _again, read_again = _remediate_playbook(ml)
        rc2, results2, output2 = read_again(timeout=600)
    assert rc2 == 0, output2
    assert results2["capi_health"]["unhealthy"] == []
    assert results2["capi_remediated"].get("skipped") is True  # nothing to remediate
    assert quiet.offs() == 0

    # --- wb: never comes back; injected clock, delete fencing --------------------------------------------
    old_node = _node(core, wb_host["name"])
    nodesim.stop_kubelet(ml.cfg, wb_host["name"], cluster=ml.endpoint)
    eventually(lambda: _ready(_node(core, wb_host["name"])) == "Unknown", "wb's Node Unknown")
    time.sleep(2)
    machine = ml.store.get("Machine", "wb", ml.ns)
    reboot.ensure(
        ml.store, "Metal3Remediation", machine, strategy={"type": "Reboot", "retryLimit": 1, "timeoutSeconds": 100}
    )
    clock_t = [datetime.datetime.now(datetime.UTC)]
    driver = get_driver("ironic", {"ironic_url": ml.inv["ironic"]["url"], "poll": 1})
    r = reboot.Remediator(
        ml.store, Metal3Target(ml.store, driver), fencing_mode="delete", clock=lambda: clock_t[0], poll=1
    )
    saw_backup = []
    try:
        with PowerHistory(lambda: bmc_power(wb_host)) as power_b:
            deadline = time.monotonic() + 1200
            while True:
                step = r.step("wb", ml.ns)
                if step.done:
                    break
                rem = ml.store.get("Metal3Remediation", "wb", ml.ns)
                if "remediation.metal3.io/node-labels-backup" in rem["metadata"].get("annotations", {}):
                    saw_backup.append(
                        json.loads(rem["metadata"]["annotations"]["remediation.metal3.io/node-labels-backup"])
                    )
                if not step.changed and step.data.get("phase") == "Waiting" and step.data.get("poweredOn"):
                    clock_t[0] += datetime.timedelta(seconds=101)  # the timeout passes without waiting for it
                assert time.monotonic() < deadline, step.message
                time.sleep(0 if step.changed else 1)
            time.sleep(1)
    finally:
        driver.close()
    assert step.data["outcome"] == "Deleting machine", step.message
    assert power_b.offs() == 2 and power_b.values[-1] == "On", power_b.values  # first attempt + 1 retry
    rem = ml.store.get("Metal3Remediation", "wb", ml.ns)
    assert rem["status"]["phase"] == "Deleting machine" and rem["status"]["retryCount"] == 1
    # fenced by deletion: the Node is gone (its kubelet never registered again), its labels were saved
    assert _node(core, wb_host["name"]) is None
    assert saw_backup and saw_backup[0]["metal3.io/uuid"] == old_node["metadata"]["labels"]["metal3.io/uuid"]
    bmh = ml.store.get("BareMetalHost", wb_host["name"], ml.ns)
    assert bmh["metadata"]["annotations"]["capm3.metal3.io/unhealthy"] == "capm3/UnhealthyNode"
    cond = conditions.get(ml.store.get("Machine", "wb", ml.ns), "OwnerRemediated")
    assert (cond["status"], cond["reason"]) == ("False", "WaitingForRemediation")
    # host choice passes it over: a new machine for role=wb gets the spare host
    newm = {
        "apiVersion": f"{INFRA}/v1beta2",
        "kind": "Metal3Machine",
        "metadata": {"name": "wb-2", "namespace": ml.ns},
        "spec": {"hostSelector": {"matchLabels": {"role": "wb"}}},
    }
    for _ in range(20):
        chosen, _reason = choose.choose_host(ml.store, newm, None)
        assert chosen is not None and chosen["metadata"]["name"] == spare["name"]
