"""The ``attributes`` doc fragment claims diff support exactly where a module returns a real before/after.

CapiModule.exit builds the diff from its ``before`` and ``after`` arguments, so a module that claims
``diff_mode: full`` must pass both on every exit, and one that passes them on every exit claims it. (The
baremetalhost and cluster_machines action plugins run the same engine call; baremetalhost's action sets the
diff from the same before/after.)
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3] / "plugins"
MODULES = ROOT / "modules"
FRAGMENT = ROOT / "doc_fragments" / "attributes.py"


def _strings(path: Path) -> dict[str, str]:
    """The top-level (and class-level) string assignments of a file."""
    out = {}
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    out[target.id] = node.value.value
    return out


def diff_support(path: Path) -> str | None:
    """What the module's documentation says of diff_mode, its own entry over the fragment's."""
    doc = yaml.safe_load(_strings(path)["DOCUMENTATION"])
    own = ((doc.get("attributes") or {}).get("diff_mode") or {}).get("support")
    if own:
        return own
    fragments = _strings(FRAGMENT)
    for name in doc.get("extends_documentation_fragment") or []:
        if name == "baremetal.capi.attributes" or name.startswith("baremetal.capi.attributes."):
            variant = name.split(".")[3] if name.count(".") == 3 else "DOCUMENTATION"
            frag = yaml.safe_load(fragments[variant.upper()])
            return frag["attributes"]["diff_mode"]["support"]
    return None


def exits(path: Path) -> list[ast.Call]:
    """Every ``module.exit(...)`` call of the module."""
    return [
        node
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "exit"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "module"
    ]


def gives_before_and_after(call: ast.Call) -> bool:
    names = {k.arg for k in call.keywords}
    return {"before", "after"} <= names


def test_the_reader_sees_the_fragment_variants():
    assert diff_support(MODULES / "object.py") == "full"
    assert diff_support(MODULES / "cluster_machines.py") == "none"
    assert diff_support(MODULES / "object_info.py") == "N/A"


@pytest.mark.parametrize("path", sorted(MODULES.glob("*.py")), ids=lambda p: p.stem)
def test_diff_is_claimed_where_before_and_after_are_returned(path):
    support = diff_support(path)
    calls = exits(path)
    every = bool(calls) and all(gives_before_and_after(c) for c in calls)
    if support == "full":
        missing = [c.lineno for c in calls if not gives_before_and_after(c)]
        assert calls and not missing, f"{path.name} claims diff but exits without before/after at lines {missing}"
    else:
        assert not every, f"{path.name} returns before/after on every exit but claims diff_mode support {support}"
