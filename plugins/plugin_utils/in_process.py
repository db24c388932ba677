# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# The Apache License 2.0 is compatible with the GNU General Public License version 3 (GPLv3).
"""A module of the collection run inside the ansible-playbook worker instead of a new Python process.

Every task of the collection's playbooks runs on the controller (``connection: local``) with the controller's
own interpreter (``ansible_python_interpreter: "{{ ansible_playbook_python }}"``).  There a module process
costs a Python start, the AnsiballZ unpacking and every import again, for each task and each loop item (about
half a second on a 2-CPU machine, most of a re-run of a converged cluster).  This action plugin runs the same module
code, its ``main()``, in the worker that ansible-core forked for the task: the arguments are handed over as
ansible-core's own module unit tests hand them, the JSON the module prints is read back through the same
parser as a module process's output, so the result, the no_log masking, check and diff mode, warnings and a
crash ("MODULE FAILURE" with the traceback) are what a module process gives.

ansible-core has no public interface for running a module in-process, so what this needs is looked up once,
when the plugin loads (``RUNTIME``), never after a module ran:

* the hand-over of the arguments: ``ansible.module_utils.testing.patch_module_args`` (public, 2.19 and
  later), else ``ansible.module_utils.basic._ANSIBLE_ARGS`` (what ansible-core's unit tests set before 2.19);
* the parser of a module's output, ``ActionBase._parse_returned_data`` (with a serialization profile from 2.19
  on), and how ``ActionBase._execute_module`` cleans what it returns: a dict and
  ``ansible.vars.clean.remove_internal_keys`` up to 2.20, a task result object with ``remove_internal_keys()``
  and ``as_result_dict()`` from 2.21 on;
* the module's collected warnings, cleared between loop items.

Where one is missing every task runs as a module process, as any module (``-vvv`` says why).  Once ``main()``
has run the module may have written: if reading its output fails all the same, the task reports the module's
own JSON result (what it changed) with a warning, never a bare failure.

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
from typing import Any, Callable, NamedTuple

from ansible.module_utils import basic
from ansible.module_utils.common import warnings as module_warnings
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

display = Display()

# the connection names of a task that runs on the controller itself
LOCAL = ("local", "ansible.builtin.local", "ansible.legacy.local")


class Runtime(NamedTuple):
    """What running a module in the worker takes on this ansible-core (see the module's docstring)."""

    hand_over: Callable[[dict], Any]  # a context manager: AnsibleModule reads these arguments inside it
    profile: str | None  # the serialization profile the parser takes (ansible-core >= 2.19), else None
    finish: Callable[[Any], dict]  # the parser's return value cleaned into the task's result dict
    messages: tuple  # the module's collected warnings and deprecations (process globals)


def _hand_over() -> tuple[Callable[[dict], Any], str | None]:
    try:
        from ansible.module_utils.testing import patch_module_args  # ansible-core >= 2.19
    except ImportError:
        pass
    else:
        return patch_module_args, "legacy"  # the only profile patch_module_args serializes with
    if not hasattr(basic, "_ANSIBLE_ARGS"):
        raise LookupError("ansible.module_utils.basic has neither testing.patch_module_args nor _ANSIBLE_ARGS")
    from ansible.module_utils.common.json import AnsibleJSONEncoder

    @contextlib.contextmanager
    def set_module_args(args: dict):
        saved = basic._ANSIBLE_ARGS
        basic._ANSIBLE_ARGS = json.dumps({"ANSIBLE_MODULE_ARGS": args}, cls=AnsibleJSONEncoder).encode()
        try:
            yield
        finally:
            basic._ANSIBLE_ARGS = saved

    return set_module_args, None


def _finish() -> Callable[[Any], dict]:
    try:
        from ansible.vars.clean import remove_internal_keys  # ansible-core <= 2.20: the parser returns a dict
    except ImportError:
        remove_internal_keys = None
    if remove_internal_keys is not None:

        def finish(data: Any) -> dict:
            if not isinstance(data, dict):
                raise TypeError(f"the module's parsed result is a {type(data).__name__}, not a dict")
            remove_internal_keys(data)
            return data

        return finish
    # ansible-core >= 2.21: a task result object, cleaned and turned into a dict as _execute_module does
    from ansible._internal._task import UnifiedTaskResult

    if not all(hasattr(UnifiedTaskResult, m) for m in ("remove_internal_keys", "as_result_dict")):
        raise LookupError("UnifiedTaskResult has no remove_internal_keys() or as_result_dict()")

    def finish_result(utr: Any) -> dict:
        utr.remove_internal_keys()
        return utr.as_result_dict(for_round_trip=True)

    return finish_result


def detect() -> tuple[Runtime | None, str]:
    """This ansible-core's Runtime, or None and what is missing."""
    try:
        hand_over, profile = _hand_over()
        parse = getattr(ActionBase, "_parse_returned_data", None)
        if parse is None:
            raise LookupError("ActionBase has no _parse_returned_data")
        takes_profile = "profile" in inspect.signature(parse).parameters
        if takes_profile != (profile is not None):
            raise LookupError(f"_parse_returned_data takes a profile: {takes_profile}; the hand-over has {profile}")
        messages = tuple(getattr(module_warnings, n, None) for n in ("_global_warnings", "_global_deprecations"))
        if not all(hasattr(m, "clear") for m in messages):
            raise LookupError("ansible.module_utils.common.warnings keeps no _global_warnings/_global_deprecations")
        return Runtime(hand_over, profile, _finish(), messages), ""
    except (ImportError, LookupError, TypeError, ValueError) as exc:
        return None, f"{type(exc).__name__}: {exc}"


RUNTIME, MISSING = detect()


def module_own_result(stdout: str, error: str) -> dict:
    """The JSON result the module printed, read without ansible-core's parser (which failed with ``error``).

    The module masked its no_log values itself before printing; only ansible-core's internal keys are
    dropped. Without a JSON object in ``stdout`` the module printed no result: a failure with its output."""
    start = stdout.find("{")
    try:
        data, _end = json.JSONDecoder().raw_decode(stdout[start:]) if start >= 0 else (None, 0)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        return {"failed": True, "msg": f"the module printed no JSON result ({error})", "module_stdout": stdout}
    return {k: v for k, v in data.items() if not k.startswith("_ansible_")}


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
        result.update(self._run_in_process(task_vars, RUNTIME))
        return result

    def _in_process_possible(self, task_vars: dict) -> bool:
        if RUNTIME is None:
            display.vvv(
                f"{self._module_name()}: a module process: ansible-core lacks what the worker needs ({MISSING})"
            )
            return False
        if self._connection.transport not in LOCAL or self._task.async_val or self._play_context.become:
            return False
        if _environment_set(self._task):
            return False
        interpreter = task_vars.get("ansible_python_interpreter")
        if not interpreter:
            return False
        interpreter = self._templar.template(interpreter)
        return isinstance(interpreter, str) and same_interpreter(interpreter, sys.executable)

    def _module_name(self) -> str:
        return getattr(self._task, "resolved_action", None) or self._task.action

    def _run_in_process(self, task_vars: dict, runtime: Runtime) -> dict:
        name = self._module_name()
        collection, _sep, short = name.rpartition(".")
        module_args = dict(self._task.args)
        self._update_module_args(name, module_args, task_vars)
        display.vvv(f"{name}: run in the controller process (no module process)", host=self._play_context.remote_addr)
        out, err, rc = io.StringIO(), "", 0
        _clear(runtime.messages)
        try:
            module = importlib.import_module(f"ansible_collections.{collection}.plugins.modules.{short}")
            with runtime.hand_over(module_args), contextlib.redirect_stdout(out):
                try:
                    module.main()
                except SystemExit as exc:
                    rc = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except Exception:  # a module crash: reported as a module process's traceback on stderr would be
            err, rc = traceback.format_exc(), 1
        finally:
            _clear(runtime.messages)
        return self._read_result({"stdout": out.getvalue(), "stderr": err, "rc": rc}, runtime)

    def _read_result(self, res: dict, runtime: Runtime) -> dict:
        """The task result of what ``main()`` printed; main() may have written, so this never raises."""
        try:
            if runtime.profile is None:
                parsed = self._parse_returned_data(res)
            else:
                parsed = self._parse_returned_data(res, runtime.profile)
            return runtime.finish(parsed)
        except Exception as exc:  # whatever it is, the module's own result is the task's
            error = f"{type(exc).__name__}: {exc}"
            display.warning(
                f"{self._module_name()}: ansible-core could not read the module's result ({error});"
                " the task reports the module's own JSON result"
            )
            return module_own_result(res["stdout"], error) | ({"module_stderr": res["stderr"]} if res["stderr"] else {})


def same_interpreter(one: str, other: str) -> bool:
    """Whether two interpreter paths run the same Python with the same packages: one file, or the names of one
    file in the same folder (a venv's ``bin/python`` and ``bin/python3.12``; a venv's and its base Python's
    resolve to one file too, but see other packages)."""
    one, other = os.path.abspath(one), os.path.abspath(other)
    if one == other:
        return True
    return os.path.dirname(one) == os.path.dirname(other) and os.path.realpath(one) == os.path.realpath(other)


def _environment_set(task) -> bool:
    env = task.environment
    return bool(env) and any(bool(e) for e in (env if isinstance(env, list) else [env]))


def _clear(messages: tuple) -> None:
    """Warnings and deprecations a module collects are process globals: clear them between loop items."""
    for collected in messages:
        collected.clear()
