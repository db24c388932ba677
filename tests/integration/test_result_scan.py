"""The anonymous-failure scan (conftest.py) itself: it catches a failure without a message and lets a named one by.

A task whose ``until`` runs out of retries while the module succeeds fails with no message at all - ansible-core
prints "Unknown error" - which is how a converge loop's deadline used to end. A task that succeeds but prints a
Python traceback is caught from the run's output; the printed "Unknown error" of the first task is that task's
own finding, not a second one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from lab.config import REPO

PLAY = [
    {
        "name": "scan",
        "hosts": "localhost",
        "connection": "local",
        "gather_facts": False,
        "tasks": [
            {"name": "until runs out", "ansible.builtin.debug": {"var": "inventory_hostname"}, "register": "r",
             "until": "false", "retries": 1, "delay": 0, "ignore_errors": True},
            {"name": "a named failure", "ansible.builtin.fail": {"msg": "IPPool ns/p: spec.prefix: out of range"},
             "ignore_errors": True},
            {"name": "prints a traceback", "ansible.builtin.debug": {
                "msg": 'Traceback (most recent call last):\n  File "x.py", line 1\nAttributeError: boom'}},
            {"name": "prints a named error", "ansible.builtin.debug": {"msg": "Ironic said: node locked"}},
        ],
    }
]  # fmt: skip


def scanned_since(offset: int) -> list[dict]:
    with open(os.environ["BMCAPI_RESULT_SCAN_LOG"], encoding="utf-8") as fh:
        fh.seek(offset)
        return [json.loads(line) for line in fh if line.strip()]


@pytest.mark.anonymous_failures_expected
def test_the_scan_names_the_anonymous_failure_only(tmp_path):
    playbook = tmp_path / "scan.yml"
    playbook.write_text(yaml.safe_dump(PLAY, sort_keys=False))
    offset = Path(os.environ["BMCAPI_RESULT_SCAN_LOG"]).stat().st_size
    argv = [str(Path(sys.executable).with_name("ansible-playbook")), "-i", "localhost,", str(playbook)]
    argv += ["-e", f"ansible_python_interpreter={sys.executable}"]
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"))
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=REPO)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Task failed: Action failed: Unknown error." in proc.stdout + proc.stderr  # what an operator sees
    found = scanned_since(offset)
    assert [f["task"] for f in found] == ["until runs out", "prints a traceback"], found
    assert "failed without a message" in found[0]["problems"][0]
    assert found[1]["host"] == "(output)" and found[1]["problems"][0].startswith(
        "the playbook output shows a Python traceback: "
    ), found[1]
    assert "AttributeError: boom" in found[1]["problems"][0]
