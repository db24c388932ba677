# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Test-only callback: every failed task result of every ansible-playbook run the integration tests make is
checked for an anonymous failure - no message (what ansible-core prints as "Unknown error") or a Python
traceback - and each one found is appended, as a JSON line, to the file named by BMCAPI_RESULT_SCAN_LOG.
So is everything the run prints (ansible-core's Display, in the controller process): a traceback, "Unknown error"
or ansible-core's "Unexpected Exception" there - a successful task showing one, a warning, a crashed callback or
strategy - is recorded for the task that was running, unless that task's failed result was recorded already.
tests/integration/conftest.py enables it and fails the test whose run wrote a line.
"""

from __future__ import annotations

DOCUMENTATION = r"""
name: bmcapi_result_scan
type: aggregate
short_description: Record failed results without a message or with a traceback (integration tests only)
description:
  - Appends one JSON line per anonymous failure to the file in E(BMCAPI_RESULT_SCAN_LOG).
requirements:
  - enabled with ANSIBLE_CALLBACKS_ENABLED
"""

import atexit  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402

from ansible.plugins.callback import CallbackBase  # noqa: E402

TRACEBACK = "Traceback (most recent call last)"
# what ansible-core prints when the playbook run itself crashed (the traceback follows at -vvv only)
CRASH = "Unexpected Exception, this is probably a bug"


def output_problem(text: str) -> str | None:
    """Why a line the run printed shows an anonymous failure (None when it does not)."""
    for marker, what in ((TRACEBACK, "a Python traceback"), (CRASH, "ansible-core crashed"),
                         ("Unknown error", "'Unknown error'")):  # fmt: skip
        if marker in text:
            return f"the playbook output shows {what}: " + text[max(0, text.index(marker) - 200) :][:600]
    return None


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)


def problems(result: dict) -> list[str]:
    """Why a failed result is anonymous ([] when it names what failed)."""
    out = []
    msg = result.get("msg")
    if not isinstance(msg, str) or not msg.strip() or "Unknown error" in msg:
        out.append(f"failed without a message (msg={msg!r}): ansible-core prints 'Unknown error'")
    for text in _strings({k: v for k, v in result.items() if k != "invocation"}):
        if TRACEBACK in text:
            out.append("a Python traceback: " + text[text.index(TRACEBACK) :][:600])
            break
    return out


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "bmcapi_result_scan"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._task = None  # the name of the task running now (what printed output is recorded under)
        self._recorded: set = set()  # tasks whose failed result was recorded: their printed failure is that one
        self._printed: list[tuple] = []  # (task, problem) seen in the output, not written yet
        self._watch_output()
        atexit.register(self._flush)  # a run that crashes never reaches v2_playbook_on_stats

    @staticmethod
    def _write(line: dict) -> None:
        path = os.environ.get("BMCAPI_RESULT_SCAN_LOG")
        if path:
            with open(path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(line) + "\n")

    def _record(self, result, item=None) -> None:
        data = dict(result._result)
        found = problems(data)
        if not found:
            return
        self._recorded.add(result._task.get_name())
        self._write(
            {
                "host": result._host.get_name(),
                "task": result._task.get_name(),
                "item": None if item is None else str(item)[:200],
                "ignored": bool(getattr(result._task, "ignore_errors", False)),
                "problems": found,
            }
        )

    # -- what the run prints --------------------------------------------------------------------------------

    def _watch_output(self) -> None:
        """Wrap the Display's ``display`` (every line ansible-core prints goes through it). Worker processes
        inherit the wrapper but send their lines to the controller, which prints (and scans) them: only the
        controller (no ``_final_q``) scans, so a line is seen once."""
        disp = self._display
        original = disp.display
        if getattr(original, "bmcapi_result_scan", False):
            return

        def display(msg, *args, **kwargs):
            if getattr(disp, "_final_q", None) is None and isinstance(msg, str):
                problem = output_problem(msg)
                if problem:
                    self._printed.append((self._task, problem))
            return original(msg, *args, **kwargs)

        display.bmcapi_result_scan = True
        disp.display = display

    def _flush(self) -> None:
        printed, self._printed = self._printed, []
        for task, problem in printed:
            if task in self._recorded:
                continue  # the stdout callback printing a failed result this callback recorded
            self._write({"host": "(output)", "task": task or "(before the first task)", "item": None,
                         "ignored": False, "problems": [problem]})  # fmt: skip

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._flush()
        self._task = task.get_name()

    def v2_playbook_on_handler_task_start(self, task):
        self._flush()
        self._task = task.get_name()

    def v2_playbook_on_stats(self, stats):
        self._flush()

    def v2_runner_on_failed(self, result, ignore_errors=False):
        if result._result.get("results") is not None:
            return  # a loop: its items were recorded one by one
        self._record(result)

    def v2_runner_item_on_failed(self, result):
        self._record(result, item=result._result.get("item"))
