"""A cluster description that is not a mapping (null, a list, a string) ends provision, scale and deprovision at
their first task with an error naming capi_cluster, before any store is opened (ansible-playbook, no lab)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


def run_playbook(tmp_path: Path, book: str, capi_cluster) -> subprocess.CompletedProcess:
    env = dict(
        os.environ,
        ANSIBLE_COLLECTIONS_PATH=str(REPO / "build"),
        ANSIBLE_LOCALHOST_WARNING="False",
        ANSIBLE_INVENTORY_UNPARSED_WARNING="False",
        ANSIBLE_NOCOLOR="1",
        XDG_STATE_HOME=str(tmp_path / "default-state"),
    )
    for var in ("BAREMETAL_CAPI_STORE_KIND", "BAREMETAL_CAPI_STORE_PATH", "K8S_AUTH_HOST", "K8S_AUTH_API_KEY",
                "MAAS_API_KEY", "MAAS_URL"):  # fmt: skip
        env.pop(var, None)
    extra = {"ansible_python_interpreter": sys.executable, "capi_targets": "localhost", "capi_cluster": capi_cluster}
    argv = [str(Path(sys.executable).with_name("ansible-playbook")), str(REPO / "playbooks" / book),
            "-e", json.dumps(extra)]  # fmt: skip
    return subprocess.run(argv, env=env, capture_output=True, text=True, check=False, cwd=tmp_path)


@pytest.mark.parametrize(
    ("book", "value", "words"),
    [
        ("provision_cluster.yml", None, "got null"),
        ("provision_cluster.yml", [{"name": "c1", "provider": "metal3"}], "got a list"),
        ("scale_cluster.yml", "c1", "got a string"),
        ("deprovision_cluster.yml", None, "got null"),
    ],
)
def test_a_description_that_is_not_a_mapping_is_named(tmp_path, book, value, words):
    result = run_playbook(tmp_path, book, value)
    out = result.stdout + result.stderr
    assert result.returncode != 0, out
    assert "TASK [The cluster description is a mapping]" in out, out
    assert "capi_cluster: must be a mapping" in out and words in out, out
    assert "NoneType" not in out and "has no attribute" not in out, out
    assert not (tmp_path / "default-state").exists()  # no store was opened, let alone written
