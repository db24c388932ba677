"""The provision, scale and deprovision job templates run as AWX runs them (ansible-runner, survey answers,
injected credentials), on a 1 control-plane + 1 worker Metal3 cluster of the lab's Ironic (fake hardware).

The AWX inventory of cluster descriptions is one host with its ``capi_cluster`` and no store: the kubeconfig
credential (the lab's kube-apiserver) selects the kubernetes store, the Ironic clouds.yaml credential the
Ironic (no ironic_url or cloud in the variables: OS_CLOUD / OS_CLIENT_CONFIG_FILE only).  Asserted against the
real state: the Machines in the kubernetes store, the Ironic nodes.
"""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "unit" / "awx"))
from awx_job import (  # noqa: E402
    inject,
    job_templates,
    load_credential_type,
    load_survey,
    run_job,
    stdout,
    survey_extra_vars,  # noqa: E402
)

from ansible_collections.baremetal.capi.plugins.module_utils.store.base import open_store  # noqa: E402
from tests.integration import cni  # noqa: E402

pytestmark = pytest.mark.timeout(2400)
TEMPLATES = {Path(t["playbook"]).stem: t for t in job_templates()}


@pytest.fixture
def awx_metal3(lab, tmp_path):
    """Two fake-hardware hosts of the lab's Ironic, reached through the Ironic clouds.yaml credential."""
    lab.need("kube", "ironic", "nodesim")
    from lab.services import kube as kube_svc

    ironic = json.loads((lab.cfg.root / "inventory" / "ironic.json").read_text())
    suffix = uuid.uuid4().hex[:6]
    ns, name = f"t-awxc-{suffix}", f"awx-{suffix}"
    env = {}
    creds = tmp_path / "private" / "creds"
    clouds = {"clouds": {"lab": {"auth_type": "none", "baremetal_endpoint_override": ironic["ironic"]["url"]}}}
    for key, inputs in (
        ("kubeconfig", {"kubeconfig": (lab.cfg.root / "kubeconfig").read_text()}),
        ("ironic", {"clouds_yaml": yaml.safe_dump(clouds), "cloud": "lab"}),
    ):
        injected, _extra = inject(load_credential_type(key), inputs, creds)
        env.update(injected)
    image = {k: ironic["images"]["test_image"][k] for k in ("url", "checksum", "checksumType", "format")}
    mac = f"52:54:00:{suffix[0:2]}:{suffix[2:4]}:%02x"
    hosts = [
        {
            "name": f"{name}-h{i}",
            "spec": {
                "bmc": {"address": f"fake://{name}-h{i}"},
                "bootMACAddress": mac % i,
                "online": False,
                "automatedCleaningMode": "disabled",
                "inspectionMode": "disabled",
            },
            "hardware": {
                "hostname": f"{name}-h{i}",
                "nics": [{"name": "enp1s0", "mac": mac % i, "ip": f"127.0.10.{i + 1}"}],
            },
        }
        for i in range(2)
    ]
    description = {
        "name": name,
        "namespace": ns,
        "provider": "metal3",
        # a loopback address of its own: the node simulator serves the cluster's workload API there
        "control_plane_endpoint": {
            "host": f"127.0.{11 + int(suffix[:2], 16) % 40}.{1 + int(suffix[2:4], 16) % 250}",
            "port": 6443,
        },
        "control_plane": {"replicas": 1, "image": image, "automated_cleaning_mode": "disabled"},
        "workers": [{"name": "md-0", "replicas": 1, "image": image, "automated_cleaning_mode": "disabled"}],
        "ip_pools": [
            {
                "name": f"{name}-prov",
                "spec": {
                    "namePrefix": f"{name}-prov",
                    "pools": [{"start": "127.0.10.100", "end": "127.0.10.110"}],
                    "prefix": 24,
                },
            }
        ],
        "data_template": {
            "spec": {
                "metaData": {"strings": [{"key": "cluster", "value": name}]},
                "networkData": {
                    "links": {
                        "ethernets": [{"type": "phy", "id": "enp1s0", "macAddress": {"fromHostInterface": "enp1s0"}}]
                    },
                    "networks": {"ipv4": [{"id": "prov", "link": "enp1s0", "ipAddressFromIPPool": f"{name}-prov"}]},
                },
            }
        },
        "hosts": hosts,
        "addons": [cni.ADDON],  # the lab's Nodes are NotReady until a CNI runs
    }
    inventory = tmp_path / "clusters.yml"
    host_vars = {
        "ansible_connection": "local",
        "ansible_python_interpreter": sys.executable,
        "capi_cluster": description,
        # no ironic_url and no cloud: the driver reads OS_CLOUD / OS_CLIENT_CONFIG_FILE from the credential
        "capi_host_driver_options": {"boot_iso": ironic["images"]["boot_iso"], "poll": 1},
        "capi_round_delay": 1,
    }
    inventory.write_text(yaml.safe_dump({"all": {"hosts": {name: host_vars}}}))
    store = open_store({"kind": "kubernetes", "kubeconfig": env["K8S_AUTH_KUBECONFIG"]})
    world = {"env": env, "ns": ns, "name": name, "inventory": str(inventory), "store": store, "ironic": ironic}
    try:
        yield world
    finally:
        store.close()
        import openstack

        conn = openstack.connect(auth_type="none", baremetal_endpoint_override=ironic["ironic"]["url"])
        for host in hosts:
            node = conn.baremetal.find_node(f"{ns}~{host['name']}")
            if node is not None:  # left by a failed run: do not leak lab hosts
                if node.provision_state not in ("enroll", "manageable", "available"):
                    conn.baremetal.set_node_maintenance(node, reason="test cleanup")
                conn.baremetal.delete_node(node)
        client = kube_svc.api_client(lab.cfg)
        kube_svc.delete_namespace(client, ns)
        client.close()


def _job(world: dict, name: str, tmp: Path, answers: dict):
    template = TEMPLATES[name]
    extra_vars = survey_extra_vars(load_survey(template["survey"]), answers)
    return run_job(
        template["playbook"],
        tmp / f"job-{name}-{uuid.uuid4().hex[:6]}",
        extra_vars,
        world["env"],
        inventory=world["inventory"],
    )


def _machines(world: dict) -> list[dict]:
    return [m for m in world["store"].list("Machine", world["ns"]) if not m["metadata"].get("deletionTimestamp")]


def _ironic(world: dict) -> dict:
    """provision_state of the cluster's Ironic nodes, straight from Ironic."""
    import openstack

    conn = openstack.connect(auth_type="none", baremetal_endpoint_override=world["ironic"]["ironic"]["url"])
    prefix = f"{world['ns']}~"
    return {
        n.name[len(prefix) :]: n.provision_state
        for n in conn.baremetal.nodes(details=True)
        if n.name.startswith(prefix)
    }


def test_provision_scale_deprovision_job_templates(awx_metal3, tmp_path):
    world = awx_metal3
    name = world["name"]
    # Provision, with the survey's defaults only (capi_targets: all)
    runner = _job(world, "provision_cluster", tmp_path, {})
    assert runner.status == "successful", stdout(runner)[-6000:]
    machines = _machines(world)
    assert sorted(m["status"]["phase"] for m in machines) == ["Running", "Running"]
    assert all(m["spec"]["providerID"].startswith(f"metal3://{world['ns']}/") for m in machines)
    assert _ironic(world) == {f"{name}-h0": "active", f"{name}-h1": "active"}

    # Scale the workers to 0 (the survey's textarea answer is a JSON string, as AWX sends it)
    answers = {"capi_targets": name, "capi_worker_replicas": '{"md-0": 0}'}
    runner = _job(world, "scale_cluster", tmp_path, answers)
    assert runner.status == "successful", stdout(runner)[-6000:]
    machines = _machines(world)
    assert len(machines) == 1 and "cluster.x-k8s.io/control-plane" in machines[0]["metadata"]["labels"]
    states = sorted(_ironic(world).values())  # the worker's host deprovisioned (cleaning disabled: back to available)
    assert states[0] == "active" and states[1] in ("available", "manageable"), states

    # Deprovision, deregistering the hosts: the cluster's objects and the Ironic nodes go
    runner = _job(world, "deprovision_cluster", tmp_path, {"capi_targets": name, "capi_deregister_hosts": "true"})
    assert runner.status == "successful", stdout(runner)[-6000:]
    assert world["store"].list("Machine", world["ns"]) == []
    assert world["store"].list("Cluster", world["ns"]) == []
    assert _ironic(world) == {}
