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
    # the oldest of what tests/core_venvs.py builds and e2e runs; no upper bound, none is known to break
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


# ansible-test's validate-modules wants "GNU General Public License" and "version 3" in
# the first 20 lines of every module, also in collections under other licenses.  This
# collection is Apache-2.0; each module says (truthfully) that Apache-2.0 is compatible
# with GPLv3, which satisfies the check, so the ignore files stay empty.
LICENSE_LINE = "# The Apache License 2.0 is compatible with the GNU General Public License version 3 (GPLv3)."


@pytest.mark.parametrize("version", ["2.16", "2.17", "2.18", "2.19"])
def test_sanity_ignore_files_are_empty(version):
    path = ROOT / "tests" / "sanity" / f"ignore-{version}.txt"
    lines = [line for line in path.read_text().splitlines() if line.strip()] if path.exists() else []
    assert lines == [], f"{path.name} must stay empty: fix the cause instead"


def test_every_module_carries_the_license_lines():
    for module in sorted(modules()):
        head = (ROOT / "plugins" / "modules" / f"{module}.py").read_text().splitlines()[:20]
        assert "# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)" in head, module
        assert LICENSE_LINE in head, f"plugins/modules/{module}.py: add after the Apache line: {LICENSE_LINE}"
