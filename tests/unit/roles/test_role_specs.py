"""Each role's argument spec is the cluster description's plus its own variables (role_specs.py writes them)."""

from __future__ import annotations

import importlib.util
from pathlib import Path


def _role_specs():
    path = Path(__file__).with_name("role_specs.py")
    spec = importlib.util.spec_from_file_location("bmcapi_role_specs", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_role_argument_specs_are_generated_from_the_description():
    rs = _role_specs()
    for path, text in rs.generate().items():
        assert (rs.REPO / path).read_text() == text, f"{path} is stale: run python tests/unit/roles/role_specs.py"
