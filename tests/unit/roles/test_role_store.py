"""The roles reach every module with the cluster's store through module_defaults (meta/runtime.yml's action
group), not a ``store:`` on each task: the objects land in the store ``capi_cluster.store`` names and nowhere else."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from ansible_collections.baremetal.capi.plugins.module_utils.store.base import open_store

REPO = Path(__file__).resolve().parents[3]


def run_play(
    tmp_path, tasks: list, extra: dict | None = None, verbosity: int = 0, env: dict | None = None
) -> subprocess.CompletedProcess:
    """ansible-playbook on one play of ``tasks`` against this work tree's collection, with no store in the
    environment (``env`` adds variables) and the default store under ``tmp_path/default-state``."""
    book = [{"hosts": "localhost", "gather_facts": False, "tasks": tasks}]
    path = tmp_path / "play.yml"
    path.write_text(yaml.safe_dump(book, sort_keys=False))
    env = dict(
        os.environ,
        **(env or {}),
        ANSIBLE_COLLECTIONS_PATH=str(REPO / "build"),
        ANSIBLE_LOCALHOST_WARNING="False",
        ANSIBLE_INVENTORY_UNPARSED_WARNING="False",
        XDG_STATE_HOME=str(tmp_path / "default-state"),
    )
    for var in ("BAREMETAL_CAPI_STORE_KIND", "BAREMETAL_CAPI_STORE_PATH", "K8S_AUTH_HOST", "K8S_AUTH_API_KEY"):
        env.pop(var, None)
    extra = {"ansible_python_interpreter": sys.executable, **(extra or {})}
    argv = [str(Path(sys.executable).with_name("ansible-playbook")), str(path), "-e", json.dumps(extra)]
    argv += ["-" + "v" * verbosity] if verbosity else []
    return subprocess.run(argv, env=env, capture_output=True, text=True, check=False)


def run_role(tmp_path, description: dict, role: str) -> subprocess.CompletedProcess:
    tasks = [{"name": role, "ansible.builtin.include_role": {"name": f"baremetal.capi.{role}"}}]
    return run_play(tmp_path, tasks, {"capi_cluster": description})


def test_cluster_role_writes_into_the_described_store(tmp_path):
    db = tmp_path / "described.db"
    description = {
        "name": "c1",
        "namespace": "ns1",
        "provider": "metal3",
        "store": {"kind": "sqlite", "path": str(db)},
        "control_plane_endpoint": {"host": "127.0.6.1", "port": 6443},
        "control_plane": {"replicas": 1, "image": {"url": "http://img/x.raw", "checksum": "abc"}},
    }
    proc = run_role(tmp_path, description, "cluster")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-3000:]
    store = open_store({"kind": "sqlite", "path": str(db)})
    try:
        assert store.get("Cluster", "c1", "ns1")["spec"]["infrastructureRef"]["name"] == "c1"
        assert store.get("Metal3Cluster", "c1", "ns1")["spec"]["controlPlaneEndpoint"]["host"] == "127.0.6.1"
    finally:
        store.close()
    assert not (tmp_path / "default-state" / "baremetal-capi" / "state.db").exists()
