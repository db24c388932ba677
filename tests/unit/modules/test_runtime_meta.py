"""meta/runtime.yml stays in step with plugins/modules."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]


def modules() -> set[str]:
    return {p.stem for p in (ROOT / "plugins" / "modules").glob("*.py") if p.stem != "__init__"}


def groups() -> dict:
    runtime = yaml.safe_load((ROOT / "meta" / "runtime.yml").read_text())
    assert runtime["requires_ansible"] == ">=2.16.0"
    return runtime["action_groups"]


def test_capi_group_lists_exactly_the_modules():
    listed = groups()["capi"]
    assert len(listed) == len(set(listed)), "duplicates in action_groups.capi"
    assert set(listed) == modules()


def test_provider_groups_hold_existing_modules_by_prefix():
    action_groups = groups()
    assert set(action_groups) == {"capi", "metal3", "maas"}
    mods = modules()
    for group in ("metal3", "maas"):
        listed = action_groups[group] or []
        assert len(listed) == len(set(listed)), f"duplicates in action_groups.{group}"
        assert set(listed) <= mods, f"action_groups.{group} names modules that do not exist"
    # MAAS modules are named maas_*: each is in the maas group, and only they are.
    assert set(action_groups["maas"] or []) == {m for m in mods if m.startswith("maas_")}
    assert not set(action_groups["maas"] or []) & set(action_groups["metal3"] or [])


# ansible-test's validate-modules demands a GPLv3 header in every module, also in
# collections under other licenses; this collection is Apache-2.0, so each module
# carries the one ignore ansible-lint accepts for that, and nothing else may be ignored.
GPL_IGNORE = "validate-modules:missing-gplv3-license"


@pytest.mark.parametrize("version", ["2.16", "2.17", "2.18", "2.19"])
def test_sanity_ignores_are_only_the_license_check(version):
    lines = [line for line in (ROOT / "tests" / "sanity" / f"ignore-{version}.txt").read_text().splitlines() if line]
    wrong = [line for line in lines if not (line.startswith("plugins/modules/") and line.endswith(" " + GPL_IGNORE))]
    assert wrong == [], f"tests/sanity/ignore-{version}.txt may only hold {GPL_IGNORE} lines: fix the cause instead"
    listed = {line.split()[0] for line in lines}
    expected = {f"plugins/modules/{m}.py" for m in modules()}
    assert listed == expected, (
        f"tests/sanity/ignore-{version}.txt: add '<path> {GPL_IGNORE}' for {sorted(expected - listed)}, "
        f"remove {sorted(listed - expected)}"
    )
