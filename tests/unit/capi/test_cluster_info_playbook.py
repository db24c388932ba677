"""playbooks/cluster_info.yml through ansible-playbook against a sqlite store file: the module process reads the
store the world wrote (no lab service, no network: connection local) and prints the tree the engine renders."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from describe_world import NS, WORKERS, build, cells

from ansible_collections.baremetal.capi.plugins.module_utils.capi import describe, describe_text
from ansible_collections.baremetal.capi.plugins.module_utils.store.sqlite import SqliteStore

REPO = Path(__file__).resolve().parents[3]
KINDS = ("Cluster", "Metal3Cluster", "KubeadmControlPlane", "MachineDeployment", "MachineSet", "Machine",
         "Metal3Machine", "BareMetalHost", "Secret")  # fmt: skip


def run_playbook(tmp_path, db: Path, *args: str, **extra) -> subprocess.CompletedProcess:
    env = dict(
        os.environ,
        ANSIBLE_COLLECTIONS_PATH=str(REPO / "build"),
        ANSIBLE_LOCALHOST_WARNING="False",
        ANSIBLE_INVENTORY_UNPARSED_WARNING="False",
        ANSIBLE_NOCOLOR="1",
        XDG_STATE_HOME=str(tmp_path / "default-state"),
    )
    for var in ("BAREMETAL_CAPI_STORE_KIND", "BAREMETAL_CAPI_STORE_PATH", "K8S_AUTH_HOST", "K8S_AUTH_API_KEY"):
        env.pop(var, None)
    extra = {"ansible_python_interpreter": sys.executable, "capi_cluster": "c1", "capi_namespace": NS,
             "capi_store": {"kind": "sqlite", "path": str(db)}, **extra}  # fmt: skip
    book = REPO / "playbooks" / "cluster_info.yml"
    argv = [str(Path(sys.executable).with_name("ansible-playbook")), str(book), "-e", json.dumps(extra), *args]
    return subprocess.run(argv, env=env, capture_output=True, text=True, check=False, cwd=tmp_path)


def printed_lines(stdout: str) -> list[str]:
    """The lines the "Print the tree" task printed (the default callback's JSON of its msg)."""
    task = stdout[stdout.index("TASK [Print the tree]") :]
    start = task.index('"msg": [') + len('"msg": ')
    end = task.index("\n    ]", start) + len("\n    ]")
    return json.loads(task[start:end])


def versions(db: Path) -> dict:
    store = SqliteStore(str(db))
    try:
        return {(k, o["metadata"]["name"]): o["metadata"]["resourceVersion"] for k in KINDS for o in store.list(k, NS)}
    finally:
        store.close()


def expected(db: Path) -> list[tuple]:
    store = SqliteStore(str(db))
    try:
        return [row[:7] + row[8:] for row in cells(describe_text.render(describe.describe(store, "c1", NS)))]
    finally:
        store.close()


def world(tmp_path, stuck: bool) -> Path:
    db = tmp_path / "state.db"
    store = SqliteStore(str(db))
    build(store, stuck=stuck)
    store.close()
    return db


def assert_tree(proc, db: Path, stuck: bool) -> None:
    lines = printed_lines(proc.stdout)
    # the same tree as the engine renders (SINCE aside: the module's clock is its own)
    assert [row[:7] + row[8:] for row in cells(lines)] == expected(db)
    assert any(line.startswith("Cluster/c1 ") for line in lines)
    stuck_line = next(line for line in lines if f"Metal3Machine/{WORKERS[1]}" in line)
    assert ("AssociateBareMetalHost=False" in stuck_line) is stuck
    assert ("No available host found: no available host matching rack=r9;" in stuck_line) is stuck


@pytest.mark.parametrize("stuck, args", [(False, ()), (True, ("--check",))], ids=["healthy", "no-host-check-mode"])
def test_the_playbook_prints_the_tree_and_writes_nothing(tmp_path, stuck, args):
    db = world(tmp_path, stuck)
    before = versions(db)
    proc = run_playbook(tmp_path, db, *args)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-3000:]
    assert_tree(proc, db, stuck)
    assert "changed=0" in proc.stdout and "failed=0" in proc.stdout
    assert versions(db) == before


def test_the_playbook_fails_on_request_naming_the_failing_objects(tmp_path):
    db = world(tmp_path, stuck=True)
    proc = run_playbook(tmp_path, db, capi_fail_on_failing=True)
    assert proc.returncode == 2, proc.stdout[-4000:]
    assert_tree(proc, db, stuck=True)
    w1 = WORKERS[1]
    assert f"2 failing: Machine/{w1}; MachineInfrastructure - Metal3Machine/{w1}" in proc.stdout


def test_an_unknown_cluster_fails_naming_it(tmp_path):
    db = tmp_path / "state.db"
    SqliteStore(str(db)).close()
    proc = run_playbook(tmp_path, db, capi_cluster="nope")
    assert proc.returncode == 2 and "Cluster demo/nope not found" in proc.stdout, proc.stdout[-3000:]
