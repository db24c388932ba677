"""tests/unit is hermetic: no lab, no port, no network (docs/lab.md has the proof command).

The store and module suites' kubernetes run is tests/integration/stores.  A unit test that asks for the lab
fails here instead of starting (or silently reusing) one.
"""

import pytest


@pytest.fixture(scope="session")
def lab():
    pytest.fail("tests/unit is hermetic: a test that needs the lab belongs in tests/integration")
