"""provision_cluster.yml and scale_cluster.yml on bad descriptions: the run fails in its first task, naming the
object and the field, and the store holds nothing afterwards.

The descriptions are the ones of tests/unit/capi/bad_descriptions.py (the seven that ended in "Unknown error"
before, the filter crash, and a missing credential). Nothing here needs a lab service: the point is that the
playbook stops before it would use one.
"""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from lab.config import REPO

from .conftest import E2E

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "unit" / "capi"))
import bad_descriptions as bd  # noqa: E402

FIRST_TASK = "Validate the cluster description and every object it makes"
PICKED = [
    "overlapping IP pools",
    "networkData pool that does not exist",
    "IP pool prefix 33",
    "IP pool gateway outside the subnet",
    "IP pool start outside its subnet",
    "invalid pod CIDR",
    "two worker pools with one name",
    "kubelet extra args a string",
    "BMC credentials Secret not stored",
    "add-on manifest not YAML",
]
CASES = {c[0]: c for c in bd.CASES}


def objects_in(db: str) -> int:
    if not os.path.exists(db):
        return 0
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT count(*) FROM objects").fetchone()[0]


# what localhost (no description) runs, and the check that the description is a mapping at all (no module)
PRELUDE = {"Skip hosts without a cluster description", "The cluster description is a mapping"}


def tasks_run(out: str) -> list[str]:
    return [t for t in re.findall(r"^TASK \[(.+?)\]", out, re.M) if t not in PRELUDE]


def failed_hosts(out: str) -> dict:
    return {
        h: int(n) for h, n in re.findall(r"^(\S+)\s+: ok=\d+\s+changed=\d+\s+unreachable=\d+\s+failed=(\d+)", out, re.M)
    }


@pytest.mark.parametrize("kind", PICKED)
def test_provision_fails_in_the_first_task_with_nothing_written(tmp_path, kind):
    _k, _base, _mutate, obj, field = CASES[kind]
    e2e = E2E(None, tmp_path, "metal3", bd.bad(CASES[kind]), {})
    run = e2e.play("provision_cluster.yml", expect_ok=False)
    assert run.rc != 0 and failed_hosts(run.out)["v1"] == 1, run.out[-4000:]
    assert tasks_run(run.out) == [FIRST_TASK], run.out[-4000:]
    assert obj in run.out and field in run.out, run.out[-4000:]
    assert "Unknown error" not in run.out and "Traceback" not in run.out
    assert objects_in(e2e.db) == 0


def test_scale_checks_the_scaled_description_first(tmp_path):
    e2e = E2E(None, tmp_path, "metal3", bd.metal3(), {})
    run = e2e.play("scale_cluster.yml", {"capi_control_plane_replicas": 2}, expect_ok=False)
    assert run.rc != 0 and tasks_run(run.out) == [FIRST_TASK], run.out[-4000:]
    assert "control_plane.replicas: must be odd" in run.out
    run = e2e.play("scale_cluster.yml", {"capi_worker_replicas": {"md-9": 1}}, expect_ok=False)
    assert run.rc != 0 and tasks_run(run.out) == [FIRST_TASK], run.out[-4000:]
    assert "no worker pool named md-9" in run.out
    assert objects_in(e2e.db) == 0


def test_the_bmc_password_is_not_shown_at_vvv(tmp_path):
    """At -vvv the module's invocation (the whole description, hosts with their BMC passwords) is printed."""
    desc = bd.metal3()
    desc["ip_pools"][0]["spec"]["prefix"] = 33
    e2e = E2E(None, tmp_path, "metal3", desc, {})
    argv = e2e.argv("provision_cluster.yml") + ["-vvv"]
    proc = subprocess.run(argv, cwd=REPO, env=e2e.env, capture_output=True, text=True)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "spec.prefix: prefix 33 is out of range" in out, out[-4000:]
    assert "s3cret-bmc" not in out
    assert objects_in(e2e.db) == 0
