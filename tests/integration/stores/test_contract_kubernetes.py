"""tests/unit/store/test_contract.py on the kubernetes store (this folder's conftest)."""

from tests.unit.store.test_contract import *  # noqa: F403 - the same tests, collected here with the kubernetes fixtures
