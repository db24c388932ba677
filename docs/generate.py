"""Generate docs/modules/*.md from the plugins' DOCUMENTATION, EXAMPLES and RETURN (through ``ansible-doc --json``).

    .venv/bin/python docs/generate.py            # rewrite docs/modules/
    .venv/bin/python docs/generate.py --check    # exit 1 and name the stale files when docs/modules/ is not current

One page per module (plugins/modules/*.py) and per inventory plugin (plugins/inventory/*.py), and an index
(docs/modules/README.md).  ansible-doc reads the collection from build/ansible_collections (a link to this
tree, made by tests/conftest.py or here), so doc fragments are resolved as Ansible resolves them.
tests/unit/docs/test_generated_docs.py fails when the committed pages differ from what this script writes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "docs" / "modules"
COLLECTION = "baremetal.capi"
PLUGIN_DIRS = {"module": "modules", "inventory": "inventory"}


def _link_collection() -> Path:
    build = REPO / "build"
    link = build / "ansible_collections" / "baremetal" / "capi"
    if not link.exists():
        link.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.symlink(REPO, link)
        except FileExistsError:
            pass
    return build


def plugin_names(kind: str) -> list[str]:
    folder = REPO / "plugins" / PLUGIN_DIRS[kind]
    return sorted(p.stem for p in folder.glob("*.py") if not p.name.startswith("_"))


def ansible_doc(kind: str, names: list[str]) -> dict:
    if not names:
        return {}
    ansible_doc_bin = Path(sys.executable).with_name("ansible-doc")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(_link_collection()), ANSIBLE_NOCOLOR="1")
    proc = subprocess.run(
        [str(ansible_doc_bin), "--json", "-t", kind, *(f"{COLLECTION}.{n}" for n in names)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tempfile.gettempdir(),  # no ansible.cfg from the work tree
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"ansible-doc failed:\n{proc.stderr}")
    return json.loads(proc.stdout)


# --- Ansible doc markup -> Markdown -------------------------------------------------

_MARKUP = [
    (re.compile(r"L\(([^)]+?),\s*([^)]+)\)"), r"[\1](\2)"),
    (re.compile(r"U\(([^)]+)\)"), r"<\1>"),
    (re.compile(r"I\(([^)]+)\)"), r"*\1*"),
    (re.compile(r"B\(([^)]+)\)"), r"**\1**"),
    (re.compile(r"M\(([^)]+)\)"), r"`\1`"),
    (re.compile(r"(?:RV|O)\((?:ignore:)?([^)=]+)(?:=([^)]*))?\)"), None),
    (re.compile(r"[CVE]\(([^)]*)\)"), r"`\1`"),
    (re.compile(r"HORIZONTALLINE"), "\n---\n"),
]


def _option_markup(match: re.Match) -> str:
    name, value = match.group(1), match.group(2)
    return f"`{name}={value}`" if value is not None else f"`{name}`"


def md(text) -> str:
    if isinstance(text, list):
        return " ".join(md(t) for t in text)
    text = str(text)
    for pattern, repl in _MARKUP:
        text = pattern.sub(repl if repl is not None else _option_markup, text)
    return text.replace("|", "\\|").replace("\n", " ")


def _value(value) -> str:
    if value is None:
        return ""
    return "`" + json.dumps(value) + "`"


def options_table(options: dict, depth: int = 0) -> list[str]:
    rows = []
    for name in sorted(options):
        opt = options[name]
        label = ("&nbsp;&nbsp;" * depth * 2) + ("↳ " if depth else "") + f"**{name}**"
        kind = opt.get("type", "str")
        if opt.get("elements"):
            kind += f" / {opt['elements']}"
        facts = []
        if opt.get("required"):
            facts.append("required")
        if "default" in opt and opt["default"] is not None:
            facts.append(f"default: {_value(opt['default'])}")
        if opt.get("choices"):
            facts.append("choices: " + ", ".join(_value(c) for c in opt["choices"]))
        if opt.get("aliases"):
            facts.append("aliases: " + ", ".join(f"`{a}`" for a in opt["aliases"]))
        for source in ("env", "ini", "vars"):
            entries = opt.get(source) or []
            names = [e.get("name") or f"[{e.get('section')}] {e.get('key')}" for e in entries]
            if names:
                facts.append(f"{source}: " + ", ".join(f"`{n}`" for n in names))
        rows.append(f"| {label} | {kind} | {'<br>'.join(facts)} | {md(opt.get('description', ''))} |")
        if opt.get("suboptions"):
            rows.extend(options_table(opt["suboptions"], depth + 1))
    return rows


def returns_table(returns: dict, depth: int = 0) -> list[str]:
    rows = []
    for name in sorted(returns):
        ret = returns[name] or {}
        label = ("&nbsp;&nbsp;" * depth * 2) + ("↳ " if depth else "") + f"**{name}**"
        kind = ret.get("type", "")
        if ret.get("elements"):
            kind += f" / {ret['elements']}"
        rows.append(f"| {label} | {kind} | {md(ret.get('returned', ''))} | {md(ret.get('description', ''))} |")
        if ret.get("contains"):
            rows.extend(returns_table(ret["contains"], depth + 1))
    return rows


def page(kind: str, name: str, data: dict) -> str:
    doc = data["doc"]
    fqcn = f"{COLLECTION}.{name}"
    added = f", added in {doc['version_added']}" if doc.get("version_added") else ""
    lines = [
        f"<!-- Generated by docs/generate.py from plugins/{PLUGIN_DIRS[kind]}/{name}.py: do not edit. -->",
        f"# {fqcn}",
        "",
        f"{md(doc.get('short_description', ''))} ({kind}{added})",
        "",
    ]
    lines += [f"- {md(d)}" for d in (doc.get("description") or [])]
    if doc.get("requirements"):
        lines += ["", "## Requirements", ""] + [f"- {md(r)}" for r in doc["requirements"]]
    if doc.get("options"):
        lines += ["", "## Options", "", "| Option | Type | Facts | Description |", "|---|---|---|---|"]
        lines += options_table(doc["options"])
    if doc.get("attributes"):
        lines += ["", "## Attributes", "", "| Attribute | Support | Description |", "|---|---|---|"]
        for attr in sorted(doc["attributes"]):
            a = doc["attributes"][attr]
            lines.append(f"| {attr} | {md(a.get('support', ''))} | {md(a.get('description', ''))} |")
    if doc.get("notes"):
        lines += ["", "## Notes", ""] + [f"- {md(n)}" for n in doc["notes"]]
    if doc.get("seealso"):
        lines += ["", "## See also", ""]
        for ref in doc["seealso"]:
            target = ref.get("module") or ref.get("plugin") or ref.get("name") or ref.get("link", "")
            lines.append(f"- {target}: {md(ref.get('description', ''))}".rstrip(": "))
    if data.get("examples"):
        lines += ["", "## Examples", "", "```yaml", data["examples"].strip("\n"), "```"]
    if data.get("return"):
        lines += ["", "## Return values", "", "| Key | Type | Returned | Description |", "|---|---|---|---|"]
        lines += returns_table(data["return"])
    authors = doc.get("author") or []
    lines += ["", "## Authors", ""] + [f"- {a}" for a in (authors if isinstance(authors, list) else [authors])]
    return "\n".join(lines) + "\n"


def render() -> dict[str, str]:
    pages = {}
    index = [
        "<!-- Generated by docs/generate.py: do not edit. -->",
        "# Module and plugin reference",
        "",
        "Generated from each plugin's documentation (`.venv/bin/python docs/generate.py`).",
        "",
    ]
    for kind in PLUGIN_DIRS:
        names = plugin_names(kind)
        docs = ansible_doc(kind, names)
        index += [f"## {'Modules' if kind == 'module' else kind.capitalize() + ' plugins'}", ""]
        for name in names:
            data = docs[f"{COLLECTION}.{name}"]
            filename = f"{name}.md" if kind == "module" else f"{kind}_{name}.md"
            pages[filename] = page(kind, name, data)
            index.append(f"- [{COLLECTION}.{name}]({filename}) - {md(data['doc'].get('short_description', ''))}")
        index.append("")
    pages["README.md"] = "\n".join(index)
    return pages


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="only report whether docs/modules is current")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    pages = render()
    existing = {p.name for p in args.out.glob("*.md")} if args.out.exists() else set()
    stale = sorted(n for n, text in pages.items() if not (args.out / n).exists() or (args.out / n).read_text() != text)
    extra = sorted(existing - set(pages))
    if args.check:
        for name in stale + extra:
            print(f"docs/modules/{name} is not current: run docs/generate.py")
        return 1 if stale or extra else 0
    args.out.mkdir(parents=True, exist_ok=True)
    for name in stale:
        (args.out / name).write_text(pages[name])
    for name in extra:
        (args.out / name).unlink()
    print(f"{len(pages)} pages, {len(stale)} written, {len(extra)} removed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
