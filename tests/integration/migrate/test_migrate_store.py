"""playbooks/migrate_store.yml: a sqlite store copied into the lab's kube-apiserver (the kubernetes store).

Names, labels, annotations, spec, status and Secret data arrive unchanged; owner references point at the
owners' new uids, so the real garbage collector (the lab's kube-controller-manager) deletes a dependent with
its owner; objects being deleted are left behind; a second run changes nothing.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.errors import NotFound
from ansible_collections.baremetal.capi.plugins.module_utils.model import kinds
from ansible_collections.baremetal.capi.plugins.module_utils.store.base import open_store

REPO = Path(__file__).resolve().parents[3]
INFRA = "infrastructure.cluster.x-k8s.io"


def _owner(obj: dict, controller=True) -> dict:
    return {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "name": obj["metadata"]["name"],
        "uid": obj["metadata"]["uid"],
        "controller": controller,
        "blockOwnerDeletion": True,
    }


@pytest.fixture
def source(tmp_path):
    """A sqlite store with a small cluster: Cluster <- MachineSet <- Machine <- Metal3Machine, a Secret, a host."""
    ns = f"t-mig-{uuid.uuid4().hex[:8]}"
    store = open_store({"kind": "sqlite", "path": str(tmp_path / "state.db")})
    cluster = store.create(
        {
            "apiVersion": "cluster.x-k8s.io/v1beta2",
            "kind": "Cluster",
            "metadata": {"name": "c1", "namespace": ns, "labels": {"env": "test"}, "annotations": {"note": "x"}},
            "spec": {"infrastructureRef": {"apiGroup": INFRA, "kind": "Metal3Cluster", "name": "c1"}},
        }
    )
    cluster["status"] = {"phase": "Provisioned", "initialization": {"infrastructureProvisioned": True}}
    store.update_status(cluster)
    ms = store.create(
        {
            "apiVersion": "cluster.x-k8s.io/v1beta2",
            "kind": "MachineSet",
            "metadata": {"name": "c1-md-0-abc", "namespace": ns, "ownerReferences": [_owner(cluster, False)]},
            "spec": {
                "clusterName": "c1",
                "replicas": 1,
                "selector": {"matchLabels": {"pool": "md-0"}},
                "template": {
                    "metadata": {"labels": {"pool": "md-0"}},
                    "spec": {
                        "clusterName": "c1",
                        "bootstrap": {"dataSecretName": "b"},
                        "infrastructureRef": {"apiGroup": INFRA, "kind": "Metal3MachineTemplate", "name": "t"},
                    },
                },
            },
        }
    )
    machine = store.create(
        {
            "apiVersion": "cluster.x-k8s.io/v1beta2",
            "kind": "Machine",
            "metadata": {
                "name": "c1-md-0-abc-x1",
                "namespace": ns,
                "labels": {"cluster.x-k8s.io/cluster-name": "c1", "pool": "md-0"},
                "finalizers": ["machine.cluster.x-k8s.io"],
                "ownerReferences": [_owner(ms)],
            },
            "spec": {
                "clusterName": "c1",
                "bootstrap": {"dataSecretName": "c1-md-0-abc-x1"},
                "infrastructureRef": {"apiGroup": INFRA, "kind": "Metal3Machine", "name": "c1-md-0-abc-x1"},
            },
        }
    )
    machine["status"] = {"phase": "Running", "addresses": [{"type": "InternalIP", "address": "192.0.2.7"}]}
    store.update_status(machine)
    store.create(
        {
            "apiVersion": f"{INFRA}/v1beta2",
            "kind": "Metal3Machine",
            "metadata": {"name": "c1-md-0-abc-x1", "namespace": ns, "ownerReferences": [_owner(machine)]},
            "spec": {"image": {"url": "http://192.0.2.1/i.img", "checksum": "x", "checksumType": "sha256"}},
        }
    )
    store.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "c1-md-0-abc-x1", "namespace": ns, "ownerReferences": [_owner(machine)]},
            "type": "cluster.x-k8s.io/secret",
            "data": {
                "value": base64.b64encode(b"#cloud-config\n").decode(),
                "format": base64.b64encode(b"cloud-config").decode(),
            },
        }
    )
    store.create(
        {
            "apiVersion": "metal3.io/v1alpha1",
            "kind": "BareMetalHost",
            "metadata": {"name": "h1", "namespace": ns, "labels": {"rack": "a"}},
            "spec": {"online": False, "bootMACAddress": "52:54:00:00:00:07", "bmc": {"address": "fake://h1"}},
        }
    )
    doomed = store.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "doomed", "namespace": ns, "finalizers": ["example.com/hold"]},
            "data": {"k": "v"},
        }
    )
    store.delete("ConfigMap", doomed["metadata"]["name"], ns)
    yield store, ns
    store.close()


@pytest.fixture
def dest(lab):
    lab.need("kube")
    from lab.services import kube as kube_svc

    spec = {"kind": "kubernetes", "kubeconfig": str(kube_svc.kubeconfig_path(lab.cfg))}
    store = open_store(spec)
    client = kube_svc.api_client(lab.cfg)
    yield store, spec
    store.close()
    client.close()


def _migrate(src: dict, dst: dict, tmp: Path) -> tuple[int, str, dict]:
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(REPO / "build"), ANSIBLE_LOCALHOST_WARNING="false")
    extra = {"capi_source_store": src, "capi_dest_store": dst, "ansible_python_interpreter": sys.executable}
    proc = subprocess.run(
        [
            str(Path(sys.executable).with_name("ansible-playbook")),
            str(REPO / "playbooks" / "migrate_store.yml"),
            "-e",
            json.dumps(extra),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp,
        timeout=900,
    )
    recap = {}
    for line in proc.stdout.splitlines():
        if line.startswith("localhost") and "changed=" in line:
            recap = dict(part.split("=") for part in line.split(":", 1)[1].split())
    return proc.returncode, proc.stdout + proc.stderr, recap


def test_every_model_kind_is_migrated():
    import yaml

    play = yaml.safe_load((REPO / "playbooks" / "migrate_store.yml").read_text())[0]
    listed = set(play["vars"]["capi_migrate_kinds"])
    expected = {k.key for k in kinds.BY_KEY.values() if k.kind not in ("Node", "Namespace")}
    assert {kinds.resolve(k).key for k in listed} == expected


def test_sqlite_to_kubernetes(source, dest, tmp_path, lab):
    src_store, ns = source
    dst_store, dst_spec = dest
    src_spec = {"kind": "sqlite", "path": src_store.path}
    try:
        rc, out, recap = _migrate(src_spec, dst_spec, tmp_path)
        assert rc == 0, out

        # Same objects, same content; uids new
        for kind in ("Cluster", "MachineSet", "Machine", "Metal3Machine", "Secret", "BareMetalHost"):
            before = {o["metadata"]["name"]: o for o in src_store.list(kind, ns)}
            after = {o["metadata"]["name"]: o for o in dst_store.list(kind, ns)}
            assert set(after) == set(before), kind
            for name, old in before.items():
                new = after[name]
                assert new["metadata"]["uid"] != old["metadata"]["uid"]
                for field in ("labels", "annotations", "finalizers"):
                    assert new["metadata"].get(field) == old["metadata"].get(field), (kind, name, field)
                for field in ("spec", "status", "data", "type"):
                    assert new.get(field) == old.get(field), (kind, name, field)
        assert dst_store.list("ConfigMap", ns) == []  # being deleted in the source: left behind

        # Owner references follow the owners' new uids
        def uid(kind, name):
            return dst_store.get(kind, name, ns)["metadata"]["uid"]

        machine = dst_store.get("Machine", "c1-md-0-abc-x1", ns)
        assert [(r["kind"], r["name"], r["uid"], r["controller"]) for r in machine["metadata"]["ownerReferences"]] == [
            ("MachineSet", "c1-md-0-abc", uid("MachineSet", "c1-md-0-abc"), True)
        ]
        m3m = dst_store.get("Metal3Machine", "c1-md-0-abc-x1", ns)
        assert m3m["metadata"]["ownerReferences"][0]["uid"] == machine["metadata"]["uid"]
        ms = dst_store.get("MachineSet", "c1-md-0-abc", ns)
        assert ms["metadata"]["ownerReferences"][0]["uid"] == uid("Cluster", "c1")

        # Run again: nothing to change
        rc, out, recap = _migrate(src_spec, dst_spec, tmp_path)
        assert rc == 0, out
        assert recap.get("changed") == "0", out[-3000:]

        # The real garbage collector deletes the Secret with its (new) owner Machine
        machine["metadata"]["finalizers"] = []
        dst_store.update(machine)
        try:
            dst_store.delete("Machine", "c1-md-0-abc-x1", ns)
        except NotFound:
            pass
        deadline = time.monotonic() + 120
        while True:
            try:
                dst_store.get("Secret", "c1-md-0-abc-x1", ns)
            except NotFound:
                break
            if time.monotonic() > deadline:
                pytest.fail("the Secret owned by the deleted Machine was not garbage-collected")
            time.sleep(1)
    finally:
        from lab.services import kube as kube_svc

        client = kube_svc.api_client(lab.cfg)
        kube_svc.delete_namespace(client, ns)
        client.close()
