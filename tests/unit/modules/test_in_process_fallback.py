"""When the worker cannot run a module as a module process would, or ansible-core fails to read what the
module printed, the task still reports what the module did (plugins/plugin_utils/in_process.py).

ansible-core is changed in the ansible-playbook process only, by a ``sitecustomize`` on PYTHONPATH (the
workers are forked from it): its result parser raising once ``main()`` has written (what a missing private
import after ``main()`` did on 2.21), and the interfaces the worker needs taken away (found missing when the
plugin loads, so every task runs as a module process)."""

from __future__ import annotations

import json

from ansible_collections.baremetal.capi.plugins.module_utils.store.base import open_store
from tests.unit.roles.test_role_store import run_play

# applied in ansible-playbook only: module processes (the fallback) run the real ansible-core
SITECUSTOMIZE = """\
import os, sys
if os.path.basename(sys.argv[0]) == "ansible-playbook":
{body}
"""

BREAK_PARSER = """\
    import functools
    from ansible.plugins.action import ActionBase

    real = ActionBase._parse_returned_data

    @functools.wraps(real)  # the same signature: the plugin's check at load passes
    def _parse_returned_data(self, *args, **kwargs):
        if self._task.resolved_action.startswith("baremetal.capi."):  # the copy of the result parses
            raise RuntimeError("the test broke ansible-core's result parser")
        return real(self, *args, **kwargs)

    ActionBase._parse_returned_data = _parse_returned_data
"""

# neither public hand-over (ansible.module_utils.testing, >= 2.19) nor basic._ANSIBLE_ARGS (< 2.19)
NO_HAND_OVER = """\
    from ansible.module_utils import basic
    sys.modules["ansible.module_utils.testing"] = None
    del basic._ANSIBLE_ARGS
"""


def _play(tmp_path, body: str, check_mode: bool = False):
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE.format(body=body))
    store = {"kind": "sqlite", "path": str(tmp_path / "state.db"), "namespace": "ns1"}
    out = tmp_path / "result.json"
    spec = {"clusterName": "c1", "namePrefix": "c1-prov", "pools": [{"start": "10.9.0.10", "end": "10.9.0.20"}]}
    tasks = [
        {
            "name": "an IPPool",
            "baremetal.capi.ippool": {"name": "pool1", "spec": spec, "store": store},
            "register": "created",
            "check_mode": check_mode,
        },
        {"name": "result", "ansible.builtin.copy": {"dest": str(out), "content": "{{ created | to_json }}"}},
    ]
    proc = run_play(tmp_path, tasks, verbosity=3, env={"PYTHONPATH": str(site)})
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-5000:]
    return json.loads(out.read_text()), log, store


def _pools(store: dict) -> list:
    s = open_store(store)
    try:
        return [p["metadata"]["name"] for p in s.list("IPPool", "ns1")]
    finally:
        s.close()


def test_a_write_is_reported_when_ansible_core_cannot_read_the_result(tmp_path):
    result, log, store = _play(tmp_path, BREAK_PARSER)
    assert "run in the controller process" in log and "AnsiballZ_ippool.py" not in log
    # the parser did fail, after main() wrote
    assert "the test broke ansible-core's result parser" in log and "the module's own JSON result" in log
    assert _pools(store) == ["pool1"]
    # the task is not failed, and names what it wrote
    assert not result.get("failed"), result
    assert result["changed"] is True
    assert result["object"]["kind"] == "IPPool" and result["object"]["metadata"]["name"] == "pool1"
    assert result["object"]["metadata"]["namespace"] == "ns1"
    assert result["object"]["spec"]["pools"] == [{"start": "10.9.0.10", "end": "10.9.0.20"}]
    assert not any(k.startswith("_ansible_") for k in result), sorted(result)


def test_a_check_run_reports_the_plan_when_ansible_core_cannot_read_the_result(tmp_path):
    result, _log, store = _play(tmp_path, BREAK_PARSER, check_mode=True)
    assert _pools(store) == []
    assert not result.get("failed") and result["changed"] is True and result["object"]["kind"] == "IPPool"


def test_without_the_hand_over_every_task_is_a_module_process(tmp_path):
    result, log, store = _play(tmp_path, NO_HAND_OVER)
    assert "run in the controller process" not in log
    assert "AnsiballZ_ippool.py" in log
    assert "a module process: ansible-core lacks what the worker needs" in log
    assert _pools(store) == ["pool1"]
    assert not result.get("failed") and result["changed"] is True
    assert result["object"]["metadata"]["name"] == "pool1"
