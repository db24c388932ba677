"""tests/unit is hermetic: no lab, no port, no network (docs/lab.md has the proof command).

The store and module contract suites run against the lab's kube-apiserver only when asked for
(``BMCAPI_STORES=kubernetes``, as tests/run_integration.sh does); any other unit test that asks for the lab
fails here instead of starting (or silently reusing) one.
"""

import os

import pytest


@pytest.fixture(scope="session")
def lab(lab):
    """The lab of tests/conftest.py, for the store and module suites' kubernetes run only."""
    if "kubernetes" not in os.environ.get("BMCAPI_STORES", "sqlite").split(","):
        pytest.fail("tests/unit is hermetic: a test that needs the lab belongs in tests/integration")
    return lab
