"""The user data of the demo clusters, rendered from their descriptions by the collection's own controllers.

The descriptions are the ones ``make demo`` provisions (lab.demo.INVENTORY: inventory/lab, each host's
``capi_cluster``), templated by ansible-playbook on that inventory as provision_cluster.yml sees them.
Each goes through what the playbook makes of it: capi_objects (Cluster, infrastructure cluster,
KubeadmControlPlane, KubeadmConfigTemplates, MachineDeployments) through the object webhooks into a
sqlite store, the infrastructure cluster provisioned, KCP's first Machine (init) and, once that one has
a Node, its second (control-plane join), a MachineDeployment's Machine (worker join), the Machine
controller's reconcile of each (it takes its KubeadmConfig) and CABPK's reconcile of each KubeadmConfig.
What differs from a real run is only what a workload cluster would answer: a Node for the first Machine,
the bootstrap-token Secrets kept here, no etcd.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from ansible_collections.baremetal.capi.plugins.module_utils import objects, webhooks
from ansible_collections.baremetal.capi.plugins.module_utils.bootstrap import kubeadm
from ansible_collections.baremetal.capi.plugins.module_utils.capi import cluster as capi_cluster
from ansible_collections.baremetal.capi.plugins.module_utils.capi import control_plane, deployment, etcd
from ansible_collections.baremetal.capi.plugins.module_utils.capi import description_objects as cluster_description
from ansible_collections.baremetal.capi.plugins.module_utils.capi import machine as capi_machine
from ansible_collections.baremetal.capi.plugins.module_utils.maas import cluster as maas_cluster
from ansible_collections.baremetal.capi.plugins.module_utils.metal3 import cluster as metal3_cluster
from ansible_collections.baremetal.capi.plugins.module_utils.model import kinds, meta
from ansible_collections.baremetal.capi.plugins.module_utils.store.sqlite import SqliteStore
from lab.config import REPO


def demo_descriptions(inventory: Path, lab_root: Path, tmp: Path) -> dict[str, dict]:
    """{inventory host: its capi_cluster as the play sees it} for every host of the inventory with one.

    ansible-playbook templates each host's variables (the repository's ansible.cfg, as ``make demo`` runs);
    ``lab_root`` is given as an extra variable (``-e lab_root=...``): the lab this run uses.
    """
    out_dir = tmp / "descriptions"
    out_dir.mkdir()
    play = [
        {
            "name": "The cluster descriptions as provision_cluster.yml sees them",
            "hosts": "all",
            "gather_facts": False,
            "tasks": [
                {
                    "name": "Write the description",
                    "when": "capi_cluster is defined",
                    "ansible.builtin.copy": {
                        "content": "{{ capi_cluster | to_json }}",
                        "dest": str(out_dir) + "/{{ inventory_hostname }}.json",
                        "mode": "0600",
                    },
                }
            ],
        }
    ]
    path = tmp / "descriptions.yml"
    path.write_text(yaml.safe_dump(play, sort_keys=False))
    argv = [str(Path(sys.executable).with_name("ansible-playbook")), "-i", str(inventory), str(path)]
    argv += ["-e", json.dumps({"lab_root": str(lab_root), "ansible_python_interpreter": sys.executable})]
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"))
    proc = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    return {p.stem: json.loads(p.read_text()) for p in sorted(out_dir.glob("*.json"))}


class WorkloadTokens:
    """The bootstrap-token Secrets a workload cluster's kube-system would hold (kubeadm.TokenWriter)."""

    def __init__(self):
        self.secrets: dict[str, dict] = {}

    def create(self, secret: dict) -> None:
        self.secrets[secret["metadata"]["name"]] = secret

    def expiration(self, token_id: str) -> str | None:
        secret = self.secrets.get(f"bootstrap-token-{token_id}")
        return secret["stringData"]["expiration"] if secret else None

    def set_expiration(self, token_id: str, expiration: str) -> None:
        self.secrets[f"bootstrap-token-{token_id}"]["stringData"]["expiration"] = expiration


def _no_etcd(_machines):
    raise etcd.EtcdUnavailable("no workload cluster runs here")


def _provision_infrastructure(store, desc: dict, cluster: dict) -> dict:
    """The infrastructure cluster as the cluster role leaves it; returns the Cluster after CAPI's reconcile."""
    name, ns = meta.name(cluster), meta.namespace(cluster)
    if desc["provider"] == "metal3":
        m3c = meta.new("Metal3Cluster", name, ns, spec={"controlPlaneEndpoint": desc["control_plane_endpoint"]})
        metal3_cluster.apply(store, m3c)
        metal3_cluster.reconcile(store, name, ns)
    else:
        # MaasCluster's reconcile once its DNS resource exists (maas.cluster.step): the DNS name is the endpoint
        mc = store.get("MaasCluster", name, ns)
        fqdn = maas_cluster.dns_name_for(cluster, mc)
        mc["spec"]["controlPlaneEndpoint"] = {"host": fqdn, "port": maas_cluster.api_port(cluster)}
        mc = store.update(mc)
        mc.setdefault("status", {}).update({"ready": True, "initialization": {"provisioned": True}})
        store.update_status(mc)
        capi_cluster.reconcile(store, store.get("Cluster", name, ns))
    return store.get("Cluster", name, ns)


def _render(store, machine_name: str, ns: str, tokens: WorkloadTokens, template) -> tuple[str, str]:
    """The Machine controller (it owns its KubeadmConfig from now on), then CABPK's reconcile of the config:
    (init / join-control-plane / join, the user data)."""
    capi_machine.reconcile(store, store.get("Machine", machine_name, ns))
    config = store.get("KubeadmConfig", machine_name, ns)
    step = kubeadm.reconcile_config(store, config, tokens=tokens, user_data_template=template)
    secret = store.get("Secret", step.data["dataSecretName"], ns)
    return step.data["bootstrap"], base64.b64decode(secret["data"]["value"]).decode()


def render_user_data(desc: dict, db: Path) -> dict[str, str]:
    """{init, join-control-plane, join: user data} of one cluster description."""
    store = SqliteStore(str(db))
    try:
        for obj in cluster_description.objects(desc, "all"):
            if obj["kind"] != "Namespace":
                objects.apply(store, obj, kinds.of(obj), admit=webhooks.admit)
        names_ = cluster_description.names(desc)
        ns = names_["namespace"]
        cluster = _provision_infrastructure(store, desc, store.get("Cluster", names_["cluster"], ns))
        template = kubeadm.user_data_template((desc.get("kubeadm") or {}).get("user_data_template"))
        tokens = WorkloadTokens()
        out = {}

        kcp = store.get("KubeadmControlPlane", names_["control_plane"], ns)
        first = control_plane.reconcile_control_plane(store, kcp, cluster, etcd_factory=_no_etcd).data["created"]
        role, out["init"] = _render(store, first, ns, tokens, template)
        assert role == "init", role
        # kubeadm init ran: the Machine has its Node and KCP marks the control plane initialized
        machine = store.get("Machine", first, ns)
        machine.setdefault("status", {})["nodeRef"] = {"name": first}
        store.update_status(machine)
        cluster = store.get("Cluster", meta.name(cluster), ns)
        cluster["status"].setdefault("initialization", {})["controlPlaneInitialized"] = True
        cluster = store.update_status(cluster)

        if (kcp["spec"].get("replicas") or 1) > 1:
            kcp = store.get("KubeadmControlPlane", names_["control_plane"], ns)
            step = control_plane.reconcile_control_plane(store, kcp, cluster, etcd_factory=_no_etcd)
            role, out["join-control-plane"] = _render(store, step.data["created"], ns, tokens, template)
            assert role == "join-control-plane", role
        for md_name in names_["machine_deployments"]:
            md = store.get("MachineDeployment", md_name, ns)
            if not md["spec"].get("replicas"):
                continue
            created = deployment.reconcile_deployment(store, md, cluster).data["created"]
            role, out[f"join {md_name}"] = _render(store, created[0], ns, tokens, template)
            assert role == "join", role
        assert tokens.secrets or not any(k.startswith("join") for k in out), "a join rendered without a token"
        return out
    finally:
        store.close()
