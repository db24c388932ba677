"""tests/unit/modules/test_object_info.py on the kubernetes store (this folder's conftest)."""

from tests.unit.modules.test_object_info import *  # noqa: F403 - the same tests, collected here with the kubernetes fixtures
