"""Every integration test: no ansible-playbook run it makes may end a task in an anonymous failure.

The test-only callback ``bmcapi_result_scan`` (callback_plugins/) is enabled for every ansible-playbook,
ansible-runner and molecule run started from these tests (they inherit the environment set here): it records
each failed task result that has no message (what ansible-core shows as "Unknown error") or carries a Python
traceback, and the test whose run recorded one fails, naming the task and what was wrong.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

_LOG = Path(os.environ.get("TMPDIR", "/tmp")) / f"bmcapi-result-scan-{os.getpid()}.jsonl"
_LOG.write_text("")
os.environ["BMCAPI_RESULT_SCAN_LOG"] = str(_LOG)
_PLUGINS = str(Path(__file__).resolve().parent / "callback_plugins")
os.environ["ANSIBLE_CALLBACK_PLUGINS"] = os.pathsep.join(
    p for p in (os.environ.get("ANSIBLE_CALLBACK_PLUGINS"), _PLUGINS) if p
)
# ansible.cfg's own callback stays on (callbacks_enabled is replaced, not extended, by the variable)
os.environ["ANSIBLE_CALLBACKS_ENABLED"] = "baremetal.capi.progress,bmcapi_result_scan"


def scanned_since(offset: int) -> list[dict]:
    with open(_LOG, encoding="utf-8") as fh:
        fh.seek(offset)
        return [json.loads(line) for line in fh if line.strip()]


@pytest.fixture(autouse=True)
def no_anonymous_failures(request):
    offset = _LOG.stat().st_size
    yield
    if request.node.get_closest_marker("anonymous_failures_expected"):
        return
    found = scanned_since(offset)
    if found:
        lines = [f"{f['host']} / {f['task']}{' (item ' + f['item'] + ')' if f['item'] else ''}: " + "; ".join(
            f["problems"]) for f in found]  # fmt: skip
        pytest.fail("anonymous failure(s) in this test's playbook runs:\n" + "\n".join(lines), pytrace=False)


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "anonymous_failures_expected: the test provokes one on purpose (the scan's own test)"
    )
