"""tests/unit/modules/test_module_base.py on the kubernetes store (this folder's conftest)."""

from tests.unit.modules.test_module_base import *  # noqa: F403 - the same tests, collected here with the kubernetes fixtures
