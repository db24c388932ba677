"""docs/modules/ is what docs/generate.py writes from the plugins' documentation today."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "docs"))

import generate  # noqa: E402


def test_generated_module_docs_are_current():
    proc = subprocess.run(
        [sys.executable, str(REPO / "docs" / "generate.py"), "--check"], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr + "\n(run: .venv/bin/python docs/generate.py)"


def test_every_module_and_inventory_plugin_has_a_page():
    pages = {p.name for p in (REPO / "docs" / "modules").glob("*.md")}
    for module in (REPO / "plugins" / "modules").glob("*.py"):
        assert f"{module.stem}.md" in pages
    for plugin in (REPO / "plugins" / "inventory").glob("*.py"):
        assert f"inventory_{plugin.stem}.md" in pages


def test_markup_becomes_markdown():
    assert generate.md("O(store.kind=sqlite) and RV(ignore:changed), C(x), V(y), E(Z), I(it), B(bold)") == (
        "`store.kind=sqlite` and `changed`, `x`, `y`, `Z`, *it*, **bold**"
    )
    assert generate.md("L(the docs, https://example.com) U(https://e.org) a|b") == (
        "[the docs](https://example.com) <https://e.org> a\\|b"
    )
