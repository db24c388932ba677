"""imports.load: two worker threads importing two client packages for the first time at once.

The packages here are written for the test: ``p_pkg`` imports ``q_mod`` and ``q_mod`` imports a name from
``p_pkg``, as keystoneauth and kubernetes both reach into requests. Imported one after the other they load;
imported at once by two threads, Python's import deadlock detection hands one thread a half-made module.
"""

from __future__ import annotations

import importlib
import sys
import threading
import types
import uuid

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils import imports

P_INIT = """
import time
gate = __import__("{gate}")
gate.p_started.set()
gate.q_started.wait(2)
time.sleep(0.3)  # the other thread is now waiting for this package
name = 1
from {q} import qname
"""

Q_MOD = """
gate = __import__("{gate}")
gate.q_started.set()
from {p} import name
qname = 2
"""


@pytest.fixture
def packages(tmp_path, monkeypatch):
    tag = uuid.uuid4().hex[:8]
    p, q, gate = f"p_pkg_{tag}", f"q_mod_{tag}", f"gate_{tag}"
    (tmp_path / p).mkdir()
    (tmp_path / p / "__init__.py").write_text(P_INIT.format(gate=gate, q=q))
    (tmp_path / f"{q}.py").write_text(Q_MOD.format(gate=gate, p=p))
    module = types.ModuleType(gate)
    module.p_started, module.q_started = threading.Event(), threading.Event()
    monkeypatch.setitem(sys.modules, gate, module)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield p, q, module
    for name in (p, q):
        sys.modules.pop(name, None)


def _at_once(load, p, q, gate) -> dict:
    errors: dict = {}

    def one(name):
        try:
            load(name)
        except ImportError as exc:
            errors[name] = exc

    first = threading.Thread(target=one, args=(p,))
    first.start()
    assert gate.p_started.wait(5)
    second = threading.Thread(target=one, args=(q,))
    second.start()
    first.join(10)
    second.join(10)
    return errors


def test_plain_imports_at_once_meet_a_partially_initialised_module(packages):
    # the failure the lock is for: without it one thread gets the half-made module
    p, q, gate = packages
    errors = _at_once(importlib.import_module, p, q, gate)
    assert errors, "both imports succeeded: the packages no longer reproduce the concurrent-import failure"
    assert "partially initialized module" in str(next(iter(errors.values())))


def test_load_imports_them_one_thread_at_a_time(packages):
    p, q, gate = packages
    assert _at_once(imports.load, p, q, gate) == {}
    assert sys.modules[p].qname == 2 and sys.modules[q].name == 1


def test_a_module_already_imported_is_returned_without_the_lock():
    with imports._LOCK:  # held by "another thread": a loaded module must not wait for it
        done = []
        t = threading.Thread(target=lambda: done.append(imports.load("json")))
        t.start()
        t.join(2)
    assert done and done[0] is sys.modules["json"]
