"""Modules run in the ansible-playbook worker (plugins/plugin_utils/in_process.py) give what a module process
gives: the same tasks run once in the worker and once as module processes (a task ``environment`` sends a task
to a module process) and their registered results compared, on a sqlite store of the test's own."""

from __future__ import annotations

import json

from tests.unit.roles.test_role_store import run_play

VOLATILE = {"uid", "creationTimestamp", "resourceVersion"}
SECRET_VALUE = "s3cr3t-in-process-value"


def _steady(value):
    """The result without what differs between two runs (uids, timestamps, resourceVersions), a traceback
    (ansible-core < 2.19 returns a module's) as its last line: its file paths are the worker's or AnsiballZ's."""
    if isinstance(value, dict):
        return {
            k: value[k].strip().splitlines()[-1] if k == "exception" and isinstance(value[k], str) else _steady(v)
            for k, v in value.items()
            if k not in VOLATILE
        }
    if isinstance(value, list):
        return [_steady(v) for v in value]
    return value


def _tasks(store: dict, environment: dict, out: str) -> list:
    def task(name: str, module: str, args: dict, **extra) -> dict:
        return {"name": name, module: args, "environment": environment, **extra}

    def obj(name: str, kind: str, obj_name: str, definition: dict, register: str, **extra) -> dict:
        args = {"kind": kind, "name": obj_name, "definition": definition, "store": store}
        return task(name, "baremetal.capi.object", args, register=register, **extra)

    return [
        obj("create", "ConfigMap", "cm", {"data": {"a": "1"}}, "created"),
        obj("update with a diff", "ConfigMap", "cm", {"data": {"a": "2"}}, "updated", diff=True),
        obj("update in check mode", "ConfigMap", "cm", {"data": {"a": "3"}}, "planned", check_mode=True, diff=True),
        obj("a Secret", "Secret", "sec", {"stringData": {"password": SECRET_VALUE}}, "secret"),
        task("read", "baremetal.capi.object_info", {"kind": "ConfigMap", "store": store}, register="read"),
        obj("a bad kind", "Nope", "x", {}, "bad", ignore_errors=True),
        task(
            "a plan for two clusters an earlier task would create",
            "baremetal.capi.kubeadm_bootstrap",
            {"cluster": "{{ item }}", "store": store},
            loop=["missing-1", "missing-2"],
            register="looped",
            check_mode=True,
        ),
        {
            "name": "results",
            "ansible.builtin.copy": {
                "dest": out,
                "content": "{{ {'created': created, "
                "'updated': updated, 'planned': planned, 'secret': secret, 'read': read, 'bad': bad, "
                "'looped': looped} | to_json }}",
            },
        },
    ]


def _run(tmp_path, name: str, environment: dict) -> tuple[dict, str]:
    store = {"kind": "sqlite", "path": str(tmp_path / f"{name}.db"), "namespace": "ns1"}
    out = tmp_path / f"{name}.json"
    proc = run_play(tmp_path, _tasks(store, environment, str(out)), verbosity=3)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-3000:]
    return json.loads(out.read_text()), proc.stdout + proc.stderr


def test_a_module_in_the_worker_returns_what_its_process_returns(tmp_path):
    in_worker, worker_log = _run(tmp_path, "worker", {})
    in_process, process_log = _run(tmp_path, "process", {"BAREMETAL_CAPI_TEST_VAR": "1"})

    # the first ran every task in the worker, the second none
    assert worker_log.count("run in the controller process") >= 8
    assert "run in the controller process" not in process_log
    assert "AnsiballZ_object.py" in process_log and "AnsiballZ_object.py" not in worker_log

    for key in ("created", "updated", "planned", "secret", "read", "bad"):
        assert _steady(in_worker[key]) == _steady(in_process[key]), key
    assert in_worker["created"]["changed"] is True and in_worker["read"]["objects"][0]["data"] == {"a": "2"}
    assert in_worker["updated"]["diff"]["before"]["data"] == {"a": "1"}
    assert in_worker["updated"]["diff"]["after"]["data"] == {"a": "2"}
    assert in_worker["planned"]["changed"] is True and in_worker["planned"]["object"]["data"] == {"a": "3"}
    assert in_worker["bad"]["failed"] is True and "unknown kind 'Nope'" in in_worker["bad"]["msg"]
    # the Secret's value reaches neither the result nor the -vvv output
    assert SECRET_VALUE not in json.dumps(in_worker["secret"]) and SECRET_VALUE not in worker_log

    # each loop item has its own warnings, not those of the item before it (a warning is shown once)
    w_items, p_items = in_worker["looped"]["results"], in_process["looped"]["results"]
    assert [i["msg"] for i in w_items] == [i["msg"] for i in p_items]
    assert all(i["changed"] is True and not i.get("failed") for i in w_items)
    # (ansible-core < 2.19 wraps a warning's lines at 80 columns)
    worker_words, process_words = " ".join(worker_log.split()), " ".join(process_log.split())
    for name in ("missing-1", "missing-2"):
        warning = f'check mode: Cluster ns1/{name}: clusters.cluster.x-k8s.io "{name}" not found'
        assert worker_words.count(warning) == process_words.count(warning) == 1, name


def test_a_venvs_python_by_either_name_is_the_controllers_interpreter(tmp_path):
    """A venv made from python3.12 has bin/python and bin/python3.12 (its scripts name either); its base Python,
    which resolves to the same file, has other packages and is not the controller's."""
    from ansible_collections.baremetal.capi.plugins.plugin_utils.in_process import same_interpreter

    base = tmp_path / "base" / "bin"
    base.mkdir(parents=True)
    (base / "python3.12").write_text("")
    venv = tmp_path / "venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "python3.12").symlink_to(base / "python3.12")
    (venv / "python").symlink_to("python3.12")
    assert same_interpreter(str(venv / "python"), str(venv / "python3.12"))
    assert same_interpreter(str(venv / "python"), str(tmp_path / "venv" / "bin" / ".." / "bin" / "python"))
    assert not same_interpreter(str(venv / "python"), str(base / "python3.12"))
