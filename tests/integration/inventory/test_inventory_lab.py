"""The baremetal.capi.machines inventory over the kubernetes store (the lab's kube-apiserver), then an ad-hoc
``ansible -i <inventory> all -m ping -c local`` that must reach every machine entry.

The Machines are written through the kubernetes store as the machine flows leave them (addresses, providerID,
phase, nodeRef) in a namespace of this test's own; the store options come once from the inventory file and once
from K8S_AUTH_KUBECONFIG, the variable AWX's credential injects.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import yaml

from ansible_collections.baremetal.capi.plugins.module_utils.store.base import open_store

REPO = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent
INFRA = "infrastructure.cluster.x-k8s.io"


@pytest.fixture
def kube_world(lab):
    lab.need("kube")
    from lab.services import kube

    kubeconfig = str(kube.kubeconfig_path(lab.cfg))
    store = open_store({"kind": "kubernetes", "kubeconfig": kubeconfig})
    ns = f"t-inv-{uuid.uuid4().hex[:8]}"
    cluster = f"inv{uuid.uuid4().hex[:4]}"
    names = []
    for i, cp in enumerate((True, False, False)):
        name = f"{cluster}-{'cp' if cp else 'md'}-{i}"
        labels = {"cluster.x-k8s.io/cluster-name": cluster}
        if cp:
            labels["cluster.x-k8s.io/control-plane"] = ""
        store.create(
            {
                "apiVersion": f"{INFRA}/v1beta2",
                "kind": "Metal3Machine",
                "metadata": {"name": name, "namespace": ns, "annotations": {"metal3.io/BareMetalHost": f"{ns}/h{i}"}},
                "spec": {"image": {"url": "http://192.0.2.1/i.img", "checksum": "x", "checksumType": "sha256"}},
            }
        )
        obj = store.create(
            {
                "apiVersion": "cluster.x-k8s.io/v1beta2",
                "kind": "Machine",
                "metadata": {"name": name, "namespace": ns, "labels": labels},
                "spec": {
                    "clusterName": cluster,
                    "bootstrap": {"dataSecretName": f"{name}-bootstrap"},
                    "infrastructureRef": {"apiGroup": INFRA, "kind": "Metal3Machine", "name": name},
                },
            }
        )
        obj["spec"]["providerID"] = f"metal3://{ns}/h{i}/{name}"
        obj = store.update(obj)
        obj["status"] = {
            "addresses": [{"type": "InternalIP", "address": f"127.0.0.{40 + i}"}],
            "phase": "Running",
            "nodeRef": {"name": name},
        }
        store.update_status(obj)
        names.append(name)
    try:
        yield {"kubeconfig": kubeconfig, "ns": ns, "cluster": cluster, "machines": names}
    finally:
        store.close()
        from lab.services import kube as kube_svc

        client = kube_svc.api_client(lab.cfg)
        kube_svc.delete_namespace(client, ns)
        client.close()


def _env(**extra) -> dict:
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(REPO / "build"), ANSIBLE_INVENTORY_UNPARSED_FAILED="true")
    env.update(extra)
    return env


def _unwrap(value):
    if isinstance(value, dict):
        if set(value) == {"__ansible_unsafe"}:
            return value["__ansible_unsafe"]
        return {k: _unwrap(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unwrap(v) for v in value]
    return value


def _check_inventory_and_ping(src: Path, world: dict, env: dict) -> None:
    proc = subprocess.run(
        [str(BIN / "ansible-inventory"), "-i", str(src), "--list"], capture_output=True, text=True, env=env
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    inv = _unwrap(json.loads(proc.stdout))
    hv = inv["_meta"]["hostvars"]
    assert set(hv) == set(world["machines"])
    assert set(inv[f"cluster_{world['cluster']}"]["hosts"]) == set(world["machines"])
    assert inv[f"{world['cluster']}_control_plane"]["hosts"] == [world["machines"][0]]
    assert {hv[m]["ansible_host"] for m in world["machines"]} == {"127.0.0.40", "127.0.0.41", "127.0.0.42"}
    assert hv[world["machines"][1]]["capi_host"] == f"{world['ns']}/h1"

    proc = subprocess.run(
        [
            str(BIN / "ansible"),
            "-i",
            str(src),
            "all",
            "-m",
            "ansible.builtin.ping",
            "-c",
            "local",
            "-e",
            f"ansible_python_interpreter={sys.executable}",
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    reached = set(re.findall(r"^(\S+) \| SUCCESS => \{", proc.stdout, re.M))
    assert reached == set(world["machines"]), proc.stdout
    assert proc.stdout.count('"ping": "pong"') == len(world["machines"]), proc.stdout


def test_kubernetes_store_inventory_and_ad_hoc_ping(kube_world, tmp_path):
    src = tmp_path / "lab.capi.machines.yml"
    src.write_text(
        yaml.safe_dump(
            {
                "plugin": "baremetal.capi.machines",
                "store": {"kind": "kubernetes", "kubeconfig": kube_world["kubeconfig"]},
                "namespaces": [kube_world["ns"]],
            }
        )
    )
    _check_inventory_and_ping(src, kube_world, _env())


def test_kubernetes_store_from_awx_variables(kube_world, tmp_path):
    """Nothing but the kind in the file: the kubeconfig comes from K8S_AUTH_KUBECONFIG as AWX injects it."""
    src = tmp_path / "awx.capi.machines.yml"
    src.write_text(yaml.safe_dump({"plugin": "baremetal.capi.machines", "clusters": [kube_world["cluster"]]}))
    env = _env(BAREMETAL_CAPI_STORE_KIND="kubernetes", K8S_AUTH_KUBECONFIG=kube_world["kubeconfig"])
    _check_inventory_and_ping(src, kube_world, env)
