"""The AWX job templates' playbooks run as AWX runs them, without AWX: ansible-runner, the survey's default
answers (plus the answers a required question needs) as extra vars, and the environment and files the
credential types inject (tests/unit/awx/awx_job.py renders awx/credential_types/*.yml as AWX does).

The management cluster is the lab's kube-apiserver: the kubeconfig credential carries the lab's kubeconfig
text, so the jobs use the kubernetes store, as AWX jobs must.  The workload API of the test clusters is the
same kube-apiserver (their ``<cluster>-kubeconfig`` Secret holds the lab kubeconfig).
"""

from __future__ import annotations

import base64
import sys
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "unit" / "awx"))
from awx_job import (  # noqa: E402
    inject,
    job_templates,
    load_credential_type,
    load_survey,
    run_job,
    stdout,
    survey_extra_vars,
    task_results,
)

from ansible_collections.baremetal.capi.plugins.module_utils.store.base import open_store  # noqa: E402

INFRA = "infrastructure.cluster.x-k8s.io"
TEMPLATES = {Path(t["playbook"]).stem: t for t in job_templates()}


@pytest.fixture
def mgmt(lab, tmp_path):
    """The lab's kube-apiserver as management cluster: the kubeconfig credential's env, a store, a namespace."""
    lab.need("kube")
    from lab.services import kube as kube_svc

    text = (lab.cfg.root / "kubeconfig").read_text()
    env, extra = inject(load_credential_type("kubeconfig"), {"kubeconfig": text}, tmp_path / "private" / "creds")
    assert extra == {}
    store = open_store({"kind": "kubernetes", "kubeconfig": env["K8S_AUTH_KUBECONFIG"]})
    ns = f"t-awx-{uuid.uuid4().hex[:8]}"
    client = kube_svc.api_client(lab.cfg)
    try:
        yield {"env": env, "store": store, "ns": ns, "kubeconfig_text": text, "client": client, "tmp": tmp_path}
    finally:
        store.close()
        kube_svc.delete_namespace(client, ns)
        client.close()


def _job(name: str, tmp: Path, env: dict, answers: dict):
    template = TEMPLATES[name]
    extra_vars = survey_extra_vars(load_survey(template["survey"]), answers)
    private = tmp / f"job-{name}-{uuid.uuid4().hex[:6]}"
    runner = run_job(template["playbook"], private, extra_vars, env)
    return runner, extra_vars


def _cluster_objects(ns: str, cluster: str, kubeconfig_text: str) -> list[dict]:
    return [
        {
            "apiVersion": "cluster.x-k8s.io/v1beta2",
            "kind": "Cluster",
            "metadata": {"name": cluster, "namespace": ns},
            "spec": {"infrastructureRef": {"apiGroup": INFRA, "kind": "Metal3Cluster", "name": cluster}},
        },
        {
            "apiVersion": f"{INFRA}/v1beta2",
            "kind": "Metal3Cluster",
            "metadata": {
                "name": cluster,
                "namespace": ns,
                "annotations": {"metal3.io/metal3-label-sync-prefixes": "rack.example.com"},
            },
            "spec": {"controlPlaneEndpoint": {"host": "127.0.0.1", "port": 6443}},
        },
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": f"{cluster}-kubeconfig", "namespace": ns},
            "type": "cluster.x-k8s.io/secret",
            "data": {"value": base64.b64encode(kubeconfig_text.encode()).decode()},
        },
    ]


@pytest.fixture
def labelled_machine(mgmt):
    """A Metal3 machine of cluster ``c`` whose host carries a rack label and whose Node is Ready in the lab."""
    from kubernetes import client as k8s

    store, ns = mgmt["store"], mgmt["ns"]
    core = k8s.CoreV1Api(mgmt["client"])
    node = f"awx-{uuid.uuid4().hex[:8]}"
    core.create_node({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node, "labels": {"plain": "keep"}}})
    core.patch_node_status(
        node, {"status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": ""}]}}
    )
    for obj in _cluster_objects(ns, "c", mgmt["kubeconfig_text"]):
        store.create(obj)
    machine = store.create(
        {
            "apiVersion": "cluster.x-k8s.io/v1beta2",
            "kind": "Machine",
            "metadata": {"name": "m", "namespace": ns, "labels": {"cluster.x-k8s.io/cluster-name": "c"}},
            "spec": {
                "clusterName": "c",
                "bootstrap": {"dataSecretName": "m-bootstrap"},
                "infrastructureRef": {"apiGroup": INFRA, "kind": "Metal3Machine", "name": "m"},
            },
        }
    )
    machine["spec"]["providerID"] = f"metal3://{ns}/h/m"
    machine = store.update(machine)
    machine["status"] = {"nodeRef": {"name": node}, "phase": "Running"}
    store.update_status(machine)
    store.create(
        {
            "apiVersion": f"{INFRA}/v1beta2",
            "kind": "Metal3Machine",
            "metadata": {
                "name": "m",
                "namespace": ns,
                "ownerReferences": [
                    {
                        "apiVersion": "cluster.x-k8s.io/v1beta2",
                        "kind": "Machine",
                        "name": "m",
                        "uid": machine["metadata"]["uid"],
                    }
                ],
            },
            "spec": {},
        }
    )
    store.create(
        {
            "apiVersion": "metal3.io/v1alpha1",
            "kind": "BareMetalHost",
            "metadata": {
                "name": "h",
                "namespace": ns,
                "labels": {"cluster.x-k8s.io/cluster-name": "c", "rack.example.com/row": "7"},
            },
            "spec": {
                "consumerRef": {"apiVersion": f"{INFRA}/v1beta2", "kind": "Metal3Machine", "name": "m", "namespace": ns}
            },
        }
    )
    try:
        yield node, core
    finally:
        core.delete_node(node)


def test_sync_labels_job_template(mgmt, labelled_machine):
    node, core = labelled_machine
    runner, extra_vars = _job(
        "sync_labels", mgmt["tmp"], mgmt["env"], {"capi_cluster": "c", "capi_namespace": mgmt["ns"]}
    )
    assert extra_vars == {"capi_cluster": "c", "capi_namespace": mgmt["ns"]}
    assert runner.status == "successful", stdout(runner)
    labels = core.read_node(node).metadata.labels
    assert labels["rack.example.com/row"] == "7" and labels["plain"] == "keep"
    (result,) = task_results(runner, "Sync the labels")
    assert result["event"] == "runner_on_ok" and result["res"]["changed"] is True

    # AWX schedules this job: the next run finds nothing to do
    runner, _extra = _job("sync_labels", mgmt["tmp"], mgmt["env"], {"capi_cluster": "c", "capi_namespace": mgmt["ns"]})
    assert runner.status == "successful", stdout(runner)
    (result,) = task_results(runner, "Sync the labels")
    assert result["res"]["changed"] is False


def test_remediate_job_template_leaves_healthy_machines(mgmt, labelled_machine):
    """The scheduled remediation job over a healthy cluster: judged healthy, no remediation object written."""
    answers = {"capi_cluster": "c", "capi_namespace": mgmt["ns"]}
    runner, extra_vars = _job("remediate", mgmt["tmp"], mgmt["env"], answers)
    assert extra_vars["capi_provider"] == "metal3" and extra_vars["capi_unhealthy_timeout"] == 300
    assert runner.status == "successful", stdout(runner)
    (health,) = task_results(runner, "Judge the machines (MachineHealthCheck rule)")
    assert health["res"]["unhealthy"] == []
    assert [(m["machine"], m["healthy"]) for m in health["res"]["machines"]] == [("m", True)]
    assert mgmt["store"].list("Metal3Remediation", namespace=mgmt["ns"]) == []


def test_remediate_job_without_store_credential_reads_the_sqlite_path(lab, tmp_path):
    """No kubeconfig credential: the sqlite store named by BAREMETAL_CAPI_STORE_PATH (set on the job's
    environment, e.g. an AWX instance-wide extra environment variable), empty here: nothing to remediate."""
    path = tmp_path / "state.db"
    store = open_store({"kind": "sqlite", "path": str(path)})
    for obj in _cluster_objects("default", "c", "apiVersion: v1\nkind: Config\n"):
        store.create(obj)
    runner, _extra = _job("remediate", tmp_path, {"BAREMETAL_CAPI_STORE_PATH": str(path)}, {})
    assert runner.status == "successful", stdout(runner)
    (health,) = task_results(runner, "Judge the machines (MachineHealthCheck rule)")
    assert health["res"]["unhealthy"] == []
    assert store.list("Metal3Remediation") == []
    assert [m["machine"] for m in health["res"]["machines"]] == []
    store.close()
