"""The kubeadm_bootstrap module in-process: options -> bootstrap/task.py run -> result, on a sqlite store."""

from __future__ import annotations

import os

import yaml
from test_kubeadm import CP_SPEC, NS, make_cluster

from ansible_collections.baremetal.capi.plugins.module_utils.model import meta, names
from ansible_collections.baremetal.capi.plugins.modules import kubeadm_bootstrap


def control_plane_machine(store, name="c1-cp-0"):
    labels = {names.CLUSTER_NAME_LABEL: "c1", names.CONTROL_PLANE_LABEL: ""}
    store.create(meta.new("KubeadmConfig", name, NS, labels=labels, spec=CP_SPEC))
    ref = {"apiGroup": "bootstrap.cluster.x-k8s.io", "kind": "KubeadmConfig", "name": name}
    spec = {"clusterName": "c1", "version": "v1.34.1", "bootstrap": {"configRef": ref}}
    return store.create(meta.new("Machine", name, NS, labels=labels, spec=spec))


def test_certificates_kubeconfig_and_the_init_data_then_nothing_to_do(run, store, tmp_path):
    make_cluster(store)
    control_plane_machine(store)
    dest = str(tmp_path / "out" / "c1.kubeconfig")
    args = {"cluster": "c1", "namespace": NS, "kubeconfig_dest": dest, "kubeconfig_server": "https://127.0.3.1:6443"}

    planned = run(kubeadm_bootstrap, args, check=True)
    assert planned["changed"] is True and planned["certificates_created"] is True
    assert store.list("Secret", NS) == [] and not os.path.exists(dest)

    done = run(kubeadm_bootstrap, args)
    assert done["changed"] is True and done["certificates_created"] is True
    assert done["kubeconfig_secret"] == "c1-kubeconfig"
    assert [(c["machine"], c["bootstrap"]) for c in done["configs"]] == [("c1-cp-0", "init")]
    assert store.get("Machine", "c1-cp-0", NS)["spec"]["bootstrap"]["dataSecretName"]
    assert done["kubeconfig_server"] == "https://127.0.3.1:6443"
    written = yaml.safe_load(open(dest, encoding="utf-8"))
    assert written["clusters"][0]["cluster"]["server"] == "https://127.0.3.1:6443"
    assert os.stat(dest).st_mode & 0o777 == 0o600

    again = run(kubeadm_bootstrap, args)
    assert again["changed"] is False and again["certificates_created"] is False


def test_a_missing_cluster_fails_naming_it(run, store):
    out = run(kubeadm_bootstrap, {"cluster": "nope", "namespace": NS})
    assert out["failed"] and "nope" in out["msg"] and out["error"] == "NotFound"
