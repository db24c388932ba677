"""The engine's import graph: no circles (function-level imports count too), and no engine file imports Ansible.

Only ``module_utils/module.py`` (the options/result adapter) knows Ansible; everything else under
``plugins/module_utils`` is the engine and is imported by modules, action plugins and tests alike.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3] / "plugins" / "module_utils"
PACKAGE = "ansible_collections.baremetal.capi.plugins.module_utils"
ANSIBLE_AWARE = {"module"}


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The engine module an imported dotted name (relative to module_utils) lands in, if any."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(mod: str, path: Path, modules: dict[str, Path]) -> tuple[set[str], set[str]]:
    """(engine modules imported, outside top-level packages imported) by one file, at any depth."""
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    engine, outside = set(), set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".") if package else []
                base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                prefix = ".".join(base + ([node.module] if node.module else []))
                targets = [f"{prefix}.{alias.name}".strip(".") for alias in node.names] + [prefix]
                targets = [t for t in targets if t]
                found = {_resolve(t, modules) for t in targets} - {None}
                engine |= found - {mod}
                continue
            targets = [f"{node.module}.{alias.name}" for alias in node.names] + [node.module or ""]
        else:
            continue
        for target in targets:
            if target.startswith(PACKAGE + "."):
                hit = _resolve(target[len(PACKAGE) + 1 :], modules)
                if hit and hit != mod:
                    engine.add(hit)
            elif target and not target.startswith(PACKAGE):
                outside.add(target.split(".")[0])
    return engine, outside


def graph() -> dict[str, set[str]]:
    modules = _modules()
    return {mod: imports_of(mod, path, modules)[0] for mod, path in modules.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one member (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_cycle_finder_finds_a_circle_and_passes_a_tree():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []


def test_import_resolution_sees_absolute_relative_and_function_level_imports(tmp_path):
    modules = {"hosts": tmp_path, "hosts.ironic": tmp_path, "hosts.base": tmp_path, "runner": tmp_path}
    src = tmp_path / "base.py"
    src.write_text(
        "from . import ironic\nfrom ..runner import Step\nimport json\n"
        "def driver():\n    from ansible_collections.baremetal.capi.plugins.module_utils.hosts import ironic as i\n"
        "    from ansible.module_utils.basic import AnsibleModule\n"
    )
    engine, outside = imports_of("hosts.base", src, modules)
    assert engine == {"hosts", "hosts.ironic", "runner"}
    assert outside == {"json", "ansible"}


def test_no_import_circles_in_module_utils():
    assert cycles(graph()) == []


def test_only_the_module_adapter_imports_ansible():
    modules = _modules()
    offenders = sorted(
        mod
        for mod, path in modules.items()
        if mod not in ANSIBLE_AWARE and "ansible" in imports_of(mod, path, modules)[1]
    )
    assert offenders == []
