"""A module is a page: its code, without DOCUMENTATION / EXAMPLES / RETURN, is at most 80 lines.

Counted are the lines of code outside those three strings: not blank, not only a comment. Options, one call
into the engine, the result; anything longer is engine logic that belongs in ``plugins/module_utils``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

MODULES = Path(__file__).resolve().parents[3] / "plugins" / "modules"
DOC_BLOCKS = {"DOCUMENTATION", "EXAMPLES", "RETURN"}
LIMIT = 80


def code_lines(path: Path) -> int:
    source = path.read_text()
    docs = set()
    for node in ast.parse(source, str(path)).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id in DOC_BLOCKS for t in node.targets):
            docs.update(range(node.lineno, node.end_lineno + 1))
    return sum(
        1
        for number, line in enumerate(source.splitlines(), 1)
        if number not in docs and line.strip() and not line.strip().startswith("#")
    )


def test_the_measure_skips_docs_blank_lines_and_comments(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text('# header\n\nDOCUMENTATION = r"""\nmodule: x\n"""\nEXAMPLES = "a"\n\ndef main():\n    pass\n')
    assert code_lines(sample) == 2


@pytest.mark.parametrize("path", sorted(MODULES.glob("*.py")), ids=lambda p: p.stem)
def test_module_code_fits_a_page(path):
    assert code_lines(path) <= LIMIT, f"{path.name}: {code_lines(path)} lines of code (at most {LIMIT})"
