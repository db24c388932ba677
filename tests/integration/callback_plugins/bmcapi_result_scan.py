# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Test-only callback: every failed task result of every ansible-playbook run the integration tests make is
checked for an anonymous failure - no message (what ansible-core prints as "Unknown error") or a Python
traceback - and each one found is appended, as a JSON line, to the file named by BMCAPI_RESULT_SCAN_LOG.
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

import json  # noqa: E402
import os  # noqa: E402

from ansible.plugins.callback import CallbackBase  # noqa: E402

TRACEBACK = "Traceback (most recent call last)"


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

    def _record(self, result, item=None) -> None:
        path = os.environ.get("BMCAPI_RESULT_SCAN_LOG")
        data = dict(result._result)
        found = problems(data)
        if not path or not found:
            return
        line = {
            "host": result._host.get_name(),
            "task": result._task.get_name(),
            "item": None if item is None else str(item)[:200],
            "ignored": bool(getattr(result._task, "ignore_errors", False)),
            "problems": found,
        }
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(line) + "\n")

    def v2_runner_on_failed(self, result, ignore_errors=False):
        if result._result.get("results") is not None:
            return  # a loop: its items were recorded one by one
        self._record(result)

    def v2_runner_item_on_failed(self, result):
        self._record(result, item=result._result.get("item"))
