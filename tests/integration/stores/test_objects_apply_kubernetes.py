"""tests/unit/modules/test_objects_apply.py on the kubernetes store (this folder's conftest)."""

from tests.unit.modules.test_objects_apply import *  # noqa: F403 - the same tests, collected here with the kubernetes fixtures
