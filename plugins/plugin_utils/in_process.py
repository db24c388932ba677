# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# The Apache License 2.0 is compatible with the GNU General Public License version 3 (GPLv3).
"""A module of the collection run inside the ansible-playbook worker instead of a new Python process.

Every task of the collection's playbooks runs on the controller (``connection: local``) with the controller's
own interpreter (``ansible_python_interpreter: "{{ ansible_playbook_python }}"``).  There a module process
costs a Python start, the AnsiballZ unpacking and every import again, for each task and each loop item (about
half a second on a 2-CPU machine, most of a re-run of a converged cluster).  This action plugin runs the same module
code, its ``main()``, in the worker that ansible-core forked for the task: the arguments are handed over as
AnsiballZ hands them (``ansible.module_utils.basic._ANSIBLE_ARGS``, the same serialization), the JSON the
module prints is read back through the same parser as a module process's output, so the result, the
no_log masking, check and diff mode, warnings and a crash ("MODULE FAILURE" with the traceback) are what a
module process gives.

A task runs as a module process, as any module, whenever running in the worker could differ from it: another
connection than local, another interpreter than the controller's, ``become``, ``async`` or a task
``environment`` (which the worker's own environment does not carry).
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import io
import json
import os
import sys
import traceback

from ansible.module_utils import basic
from ansible.module_utils.common import warnings as module_warnings
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

display = Display()

# the connection names of a task that runs on the controller itself
LOCAL = ("local", "ansible.builtin.local", "ansible.legacy.local")


def _environment_set(task) -> bool:
    env = task.environment
    return bool(env) and any(bool(e) for e in (env if isinstance(env, list) else [env]))


def _encode(args: dict) -> tuple[bytes, str | None]:
    """The module arguments as AnsiballZ serializes them, and the serialization profile (ansible-core >= 2.19)."""
    try:
        from ansible.module_utils.common.json import Direction, get_module_encoder
    except ImportError:  # ansible-core < 2.19: no profiles
        from ansible.module_utils.common.json import AnsibleJSONEncoder

        return json.dumps({"ANSIBLE_MODULE_ARGS": args}, cls=AnsibleJSONEncoder).encode(), None
    profile = "legacy"
    encoder = get_module_encoder(profile, Direction.CONTROLLER_TO_MODULE)
    return json.dumps({"ANSIBLE_MODULE_ARGS": args}, cls=encoder).encode(), profile


def _clear_module_messages() -> None:
    """Warnings and deprecations a module collects are process globals: clear them between loop items."""
    for name in ("_global_warnings", "_global_deprecations"):
        collected = getattr(module_warnings, name, None)
        if collected is not None:
            collected.clear()


class InProcessModule(ActionBase):
    """The action plugin of a module of this collection (plugins/action/<module>.py)."""

    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        if not self._in_process_possible(task_vars):
            wrap_async = self._task.async_val and not self._connection.has_native_async
            result.update(self._execute_module(task_vars=task_vars, wrap_async=wrap_async))
            if not wrap_async:
                self._remove_tmp_path(self._connection._shell.tmpdir)
            return result
        result.update(self._run_in_process(task_vars))
        return result

    def _in_process_possible(self, task_vars: dict) -> bool:
        if self._connection.transport not in LOCAL or self._task.async_val or self._play_context.become:
            return False
        if _environment_set(self._task):
            return False
        interpreter = task_vars.get("ansible_python_interpreter")
        if not interpreter:
            return False
        interpreter = self._templar.template(interpreter)
        return isinstance(interpreter, str) and os.path.abspath(interpreter) == os.path.abspath(sys.executable)

    def _module_name(self) -> str:
        return getattr(self._task, "resolved_action", None) or self._task.action

    def _run_in_process(self, task_vars: dict) -> dict:
        name = self._module_name()
        collection, _sep, short = name.rpartition(".")
        module_args = dict(self._task.args)
        self._update_module_args(name, module_args, task_vars)
        payload, profile = _encode(module_args)
        display.vvv(f"{name}: run in the controller process (no module process)", host=self._play_context.remote_addr)
        out, err, rc = io.StringIO(), "", 0
        _clear_module_messages()
        saved = basic._ANSIBLE_ARGS, getattr(basic, "_ANSIBLE_PROFILE", None)
        basic._ANSIBLE_ARGS = payload
        if profile is not None:
            basic._ANSIBLE_PROFILE = profile
        try:
            module = importlib.import_module(f"ansible_collections.{collection}.plugins.modules.{short}")
            with contextlib.redirect_stdout(out):
                try:
                    module.main()
                except SystemExit as exc:
                    rc = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except Exception:  # a module crash: reported as a module process's traceback on stderr would be
            err, rc = traceback.format_exc(), 1
        finally:
            basic._ANSIBLE_ARGS = saved[0]
            if profile is not None:
                basic._ANSIBLE_PROFILE = saved[1]
            _clear_module_messages()
        res = {"stdout": out.getvalue(), "stderr": err, "rc": rc}
        if "profile" in inspect.signature(self._parse_returned_data).parameters:
            data = self._parse_returned_data(res, profile)
        else:
            data = self._parse_returned_data(res)
        from ansible.vars.clean import remove_internal_keys

        remove_internal_keys(data)
        return data
