"""awx/configure.yml checked against the real awx.awx modules: every call, as ansible-playbook would make it.

awx.awx comes from the ``ansible`` wheel on PyPI (``make awx-collection``, see awx_collection.py).
awx_configure.py renders every task of configure.yml with ansible's own templating (the job templates,
surveys and credential types it reads included) and validates each awx.awx call with the argument spec the
module's ``main()`` builds, through ``ModuleArgumentSpecValidator`` as ``AnsibleModule`` does; nothing of
ours or of awx.awx is replaced, and no controller is contacted (no socket: the module object is never
constructed).  The negative cases prove that a misspelled field, a value outside a module's choices, a
wrong type and a missing required parameter each fail.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from awx_collection import COLLECTION, version
from awx_job import AWX, job_templates, load_survey

HELPER = Path(__file__).resolve().parent / "awx_configure.py"
CREDENTIALS = {
    "kubeconfig": {"kubeconfig": "apiVersion: v1\nkind: Config\n"},
    "maas": {"maas_url": "http://maas.example.com:5240/MAAS/", "maas_api_key": "c:t:s"},
    "ironic": {"clouds_yaml": "clouds: {ironic: {auth_type: none}}\n", "cloud": "ironic"},
}
VERSION = yaml.safe_load((AWX.parent / "galaxy.yml").read_text())["version"]
EXTRA = {
    "awx_project_scm_url": "https://git.example.com/infra/baremetal-capi.git",
    "awx_ee_image": f"registry.example.com/baremetal-capi-ee:{VERSION}",  # the tag docs/awx.md builds
    "awx_credentials": CREDENTIALS,
}


@pytest.fixture(scope="module", autouse=True)
def _awx_collection():
    if not (COLLECTION / "MANIFEST.json").is_file():
        pytest.fail(f"awx.awx is not in {COLLECTION}: run `make awx-collection` (make unit does)", pytrace=False)


def configure(extra: dict, awx_dir: Path = AWX) -> dict:
    out = subprocess.run([sys.executable, str(HELPER), str(awx_dir), json.dumps(extra)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    return json.loads(out.stdout)


def errors(result: dict) -> list[str]:
    return [f"{c['module']} ({c['label'] or c['task']}): {e}" for c in result["calls"] for e in c["errors"]]


def test_the_collection_is_the_released_awx_awx():
    assert version() == "24.6.1"
    assert (COLLECTION / "plugins" / "modules" / "job_template.py").is_file()


def test_every_call_of_configure_is_accepted_by_awx_awx():
    result = configure(EXTRA)
    assert errors(result) == []
    assert (
        result["builtins"]
        == ["ansible.builtin.assert", "ansible.builtin.include_vars"] + ["ansible.builtin.set_fact"] * 3
    )
    by_module: dict[str, list[dict]] = {}
    for call in result["calls"]:
        by_module.setdefault(call["module"], []).append(call)
    counts = {module: len(calls) for module, calls in by_module.items()}
    assert counts == {
        "awx.awx.credential_type": 3,
        "awx.awx.credential": 3,
        "awx.awx.execution_environment": 1,
        "awx.awx.project": 1,
        "awx.awx.inventory": 3,
        "awx.awx.host": 1,
        "awx.awx.inventory_source": 2,
        "awx.awx.job_template": len(job_templates()),
        "awx.awx.schedule": 2,
    }
    # What reached the modules is the files' content, rendered: the surveys, the credential types.
    for call, template in zip(by_module["awx.awx.job_template"], job_templates(), strict=True):
        assert call["params"]["survey_spec"] == load_survey(template["survey"])
        assert call["params"]["credentials"] == [f"baremetal.capi {t}" for t in template["credential_types"]]
    kinds = {c["params"]["name"]: c["params"] for c in by_module["awx.awx.credential_type"]}
    maas = yaml.safe_load((AWX / "credential_types" / "maas.yml").read_text())
    assert kinds[maas["name"]]["injectors"] == maas["injectors"]
    machines = by_module["awx.awx.inventory_source"][1]["params"]
    assert machines["credential"] == "baremetal.capi kubeconfig"
    host = by_module["awx.awx.host"][0]["params"]
    assert host["variables"]["ansible_python_interpreter"] == "{{ ansible_playbook_python }}"  # !unsafe: kept


def test_without_credentials_the_calls_omit_them():
    result = configure({**EXTRA, "awx_credentials": {}})
    assert errors(result) == []
    assert not [c for c in result["calls"] if c["module"] == "awx.awx.credential"]
    machines = [c for c in result["calls"] if c["module"] == "awx.awx.inventory_source"][1]["params"]
    assert "credential" not in machines
    assert all(c["params"]["credentials"] == [] for c in result["calls"] if c["module"] == "awx.awx.job_template")


def _edited(tmp_path: Path, file: str, old: str, new: str) -> Path:
    awx = tmp_path / "awx"
    shutil.copytree(AWX, awx, ignore=shutil.ignore_patterns("collection"))
    path = awx / file
    text = path.read_text()
    assert text.count(old) == 1, f"{file}: {old!r} should occur once"
    path.write_text(text.replace(old, new))
    return awx


@pytest.mark.parametrize(
    ("file", "old", "new", "module", "message"),
    [
        # a misspelled field name
        (
            "configure.yml",
            "scm_update_on_launch: true",
            "scm_update_onlaunch: true",
            "awx.awx.project",
            "Unsupported parameters for (awx.awx.project) module: scm_update_onlaunch. Supported",
        ),
        (
            "configure.yml",
            "survey_enabled: true",
            "survey_enable: true",
            "awx.awx.job_template",
            "Unsupported parameters for (awx.awx.job_template) module: survey_enable. Supported",
        ),
        # a value outside the module's choices, from a credential type file
        ("credential_types/maas.yml", "kind: cloud", "kind: clouds", "awx.awx.credential_type", "kind must be one of"),
        ("configure.yml", "pull: missing", "pull: sometimes", "awx.awx.execution_environment", "pull must be one of"),
        # a required parameter dropped
        (
            "configure.yml",
            '\n        inventory: "{{ awx_controller_inventory }}"',
            "",
            "awx.awx.host",
            "missing required arguments: inventory",
        ),
    ],
    ids=["project-field", "job-template-field", "credential-type-kind", "ee-pull", "host-inventory"],
)
def test_a_wrong_field_fails(tmp_path, file, old, new, module, message):
    result = configure(EXTRA, _edited(tmp_path, file, old, new))
    found = errors(result)
    assert found and all(e.startswith(module) for e in found), found
    assert any(message in e for e in found), found


def test_a_wrong_type_fails():
    result = configure({**EXTRA, "awx_schedules_enabled": "sometimes"})
    found = errors(result)
    assert len(found) == 2 and all(e.startswith("awx.awx.schedule") for e in found), found
    assert all("enabled" in e and "bool" in e for e in found), found
