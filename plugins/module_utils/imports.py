# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Client packages imported on first use, by one thread at a time.

Steps run in the runner's worker threads, and some import a client package
(openstacksdk, kubernetes, python-libmaas) only when they first need it. Two
threads importing two such packages for the first time at once can each hold
a module the other needs (both pull in requests and urllib3): Python's import
deadlock detection then hands one of them the half-initialised module, and
the ImportError ("partially initialized module 'requests.utils'") comes back
on every later step of that object. Every such import goes through
:func:`load`, under one lock for the process; a module already imported costs
a dictionary look-up.
"""

from __future__ import annotations

import importlib
import sys
import threading

_LOCK = threading.RLock()


def load(name: str):
    """The module ``name``, imported under the process-wide import lock when it is not fully imported yet."""
    module = sys.modules.get(name)
    if module is not None and not getattr(getattr(module, "__spec__", None), "_initializing", False):
        return module
    with _LOCK:
        return importlib.import_module(name)
