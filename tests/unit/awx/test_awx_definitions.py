"""The AWX definitions under awx/, checked without an AWX server.

There is no AWX server here, so configure.yml cannot run; its awx.awx calls are validated against the real
awx.awx modules' argument specs in test_awx_configure_argspecs.py.  Here: credential types, surveys and job
templates are checked for what AWX would reject; the execution environment definition is turned into a
build context by ansible-builder and the collection installed from that context.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from awx_job import (
    AWX,
    REPO,
    SURVEY_TYPES,
    TYPES,
    SurveyError,
    inject,
    job_templates,
    load_credential_type,
    load_survey,
    survey_extra_vars,
)

BIN = Path(sys.executable).parent
TASK_KEYWORDS = {"name", "loop", "loop_control", "when", "no_log", "register", "tags", "vars", "changed_when"}


class PlaybookLoader(yaml.SafeLoader):
    """YAML as Ansible reads a playbook: ``!unsafe`` strings are strings."""


PlaybookLoader.add_constructor("!unsafe", lambda loader, node: loader.construct_scalar(node))


def load_configure() -> list[dict]:
    return yaml.load((AWX / "configure.yml").read_text(), Loader=PlaybookLoader)  # noqa: S506


def configure_tasks() -> list[dict]:
    plays = load_configure()
    assert isinstance(plays, list) and len(plays) == 1
    return plays[0]["tasks"]


def test_every_task_is_one_fully_qualified_action():
    """One action per task, by FQCN; what each awx.awx call passes is checked against the real modules'
    argument specs in test_awx_configure_argspecs.py."""
    awx_calls = 0
    for task in configure_tasks():
        modules = [k for k in task if k not in TASK_KEYWORDS]
        assert len(modules) == 1, f"{task.get('name')}: one action per task, got {modules}"
        action = modules[0]
        assert action.startswith(("awx.awx.", "ansible.builtin.")), f"{task['name']}: FQCN {action}"
        awx_calls += action.startswith("awx.awx.")
    assert awx_calls >= 9


def test_configure_covers_every_definition():
    tasks = {next(k for k in t if k not in TASK_KEYWORDS) for t in configure_tasks()}
    assert {
        "awx.awx.credential_type",
        "awx.awx.job_template",
        "awx.awx.schedule",
        "awx.awx.execution_environment",
    } <= tasks
    play = load_configure()[0]
    assert {Path(p).name for p in play["vars"]["awx_credential_type_files"].values()} == {
        p.name for p in TYPES.values()
    }


@pytest.mark.parametrize("key", sorted(TYPES))
def test_credential_type_is_what_awx_accepts(key):
    ct = load_credential_type(key)
    assert set(ct) <= {"name", "description", "kind", "inputs", "injectors"}
    assert ct["kind"] in ("cloud", "net")  # the only kinds AWX allows for a custom type
    ids = [f["id"] for f in ct["inputs"]["fields"]]
    assert len(ids) == len(set(ids))
    for field in ct["inputs"]["fields"]:
        assert re.fullmatch(r"[a-z_][a-z0-9_]*", field["id"])
        assert field.get("type", "string") in ("string", "boolean")
        assert field.get("label")
    assert set(ct["inputs"].get("required", [])) <= set(ids)
    injectors = ct["injectors"]
    assert set(injectors) <= {"env", "file", "extra_vars"}
    for name in injectors.get("file") or {}:
        assert name == "template" or name.startswith("template.")
    # every secret field is injected somewhere (else the credential is useless)
    text = yaml.safe_dump(injectors)
    for fid in ids:
        assert "{{ " + fid in text or "{{" + fid in text, f"{key}: input {fid} is never injected"


def test_injection_renders_files_and_env(tmp_path):
    env, extra = inject(
        load_credential_type("kubeconfig"), {"kubeconfig": "apiVersion: v1\nkind: Config\n"}, tmp_path / "p"
    )
    assert Path(env["K8S_AUTH_KUBECONFIG"]).read_text() == "apiVersion: v1\nkind: Config\n"
    assert env["BAREMETAL_CAPI_STORE_KIND"] == "kubernetes"
    assert extra == {}
    env, _extra = inject(
        load_credential_type("ironic"),
        {"clouds_yaml": "clouds: {lab: {auth_type: none}}\n", "cloud": "lab"},
        tmp_path / "p",
    )
    assert yaml.safe_load(Path(env["OS_CLIENT_CONFIG_FILE"]).read_text()) == {"clouds": {"lab": {"auth_type": "none"}}}
    assert env["OS_CLOUD"] == "lab"
    env, _extra = inject(
        load_credential_type("maas"), {"maas_url": "http://m/MAAS/", "maas_api_key": "a:b:c"}, tmp_path
    )
    assert env == {"MAAS_URL": "http://m/MAAS/", "MAAS_API_KEY": "a:b:c", "MAAS_CA_BUNDLE": ""}
    pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    env, _extra = inject(
        load_credential_type("maas"),
        {"maas_url": "https://m/MAAS/", "maas_api_key": "a:b:c", "maas_ca_bundle": pem},
        tmp_path / "ca",
    )
    assert Path(env["MAAS_CA_BUNDLE"]).read_text() == pem
    with pytest.raises(ValueError, match="maas_api_key"):
        inject(load_credential_type("maas"), {"maas_url": "http://m/MAAS/"}, tmp_path)


@pytest.mark.parametrize("template", job_templates(), ids=lambda t: Path(t["playbook"]).stem)
def test_job_template_names_real_files_and_a_valid_survey(template):
    assert (REPO / template["playbook"]).is_file(), template["playbook"]
    assert set(template["credential_types"]) <= set(TYPES)
    survey = load_survey(template["survey"])
    assert set(survey) == {"name", "description", "spec"}
    variables = [q["variable"] for q in survey["spec"]]
    assert len(variables) == len(set(variables))
    # Every survey variable is read by the playbook or a role it includes (a typo would be silently ignored)
    sources = (REPO / template["playbook"]).read_text() + "".join(
        p.read_text() for p in (REPO / "roles").glob("*/*/*.yml") if p.parent.name in ("tasks", "defaults")
    )
    for q in survey["spec"]:
        assert q["type"] in SURVEY_TYPES
        assert q["question_name"] and re.fullmatch(r"[a-z_][a-z0-9_]*", q["variable"])
        assert re.search(rf"\b{q['variable']}\b", sources), f"{template['survey']}: {q['variable']} is read nowhere"
        if "default" in q and q["default"] not in ("", None):
            survey_extra_vars({"spec": [q]})  # a default that fails its own question would be dropped by AWX
    # The playbook's own name matches the survey's
    assert Path(template["survey"]).stem == Path(template["playbook"]).stem


def test_survey_defaults_and_required_answers():
    deprovision = load_survey("deprovision_cluster.json")
    with pytest.raises(SurveyError, match="capi_targets: required"):
        survey_extra_vars(deprovision)
    ev = survey_extra_vars(deprovision, {"capi_targets": "demo-maas"})
    assert ev == {"capi_targets": "demo-maas", "capi_deregister_hosts": "false", "capi_wait_timeout": 1800}
    with pytest.raises(SurveyError, match="not one of"):
        survey_extra_vars(deprovision, {"capi_targets": "x", "capi_deregister_hosts": "yes"})
    with pytest.raises(SurveyError, match="below"):
        survey_extra_vars(load_survey("remediate.json"), {"capi_unhealthy_timeout": 0})


def test_schedules_name_job_templates():
    data = yaml.safe_load((AWX / "job_templates.yml").read_text())
    names = {t["name"] for t in data["awx_job_templates"]}
    for schedule in data["awx_schedules"]:
        assert schedule["job_template"] in names
        assert re.fullmatch(r"DTSTART:\d{8}T\d{6}Z RRULE:FREQ=\w+;INTERVAL=\d+", schedule["rrule"])


def test_execution_environment_builds_a_context_that_installs_the_collection(tmp_path):
    """ansible-builder turns the definition into a build context (no container engine needed for that); the
    collection tarball in it installs, and ansible-builder's introspection finds the collection's requirements."""
    galaxy = yaml.safe_load((REPO / "galaxy.yml").read_text())
    ee = yaml.safe_load((AWX / "execution-environment.yml").read_text())
    assert ee["version"] == 3
    tarball_name = f"baremetal-capi-{galaxy['version']}.tar.gz"
    assert ee["dependencies"]["galaxy"]["collections"][0]["name"] == f"/build/collection/{tarball_name}"

    # What a user does first: build the collection into awx/collection (here a copy of awx/ in tmp_path).
    work = tmp_path / "awx"
    subprocess.run(["cp", "-r", str(AWX), str(work)], check=True)
    (tmp_path / "meta").symlink_to(REPO / "meta")
    out = subprocess.run(
        [
            str(BIN / "ansible-galaxy"),
            "collection",
            "build",
            "--force",
            "--output-path",
            str(work / "collection"),
            str(REPO),
        ],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    ctx = tmp_path / "ctx"
    out = subprocess.run(
        [str(BIN / "ansible-builder"), "create", "-f", str(work / "execution-environment.yml"), "--context", str(ctx)],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    build = ctx / "_build"
    assert (build / "collection" / tarball_name).is_file()
    assert (build / "requirements.txt").read_text() == (REPO / "meta" / "ee-requirements.txt").read_text()
    assert (build / "bindep.txt").read_text() == (REPO / "meta" / "ee-bindep.txt").read_text()

    # The galaxy stage: install the requirements as the Containerfile does (with /build being the context)
    reqs = yaml.safe_load((build / "requirements.yml").read_text())
    reqs["collections"][0]["name"] = str(build / "collection" / tarball_name)
    (tmp_path / "reqs.yml").write_text(yaml.safe_dump(reqs))
    dest = tmp_path / "collections"
    out = subprocess.run(
        [
            str(BIN / "ansible-galaxy"),
            "collection",
            "install",
            "--force",
            "-r",
            str(tmp_path / "reqs.yml"),
            "-p",
            str(dest),
        ],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    installed = dest / "ansible_collections" / "baremetal" / "capi"
    assert (installed / "plugins" / "inventory" / "machines.py").is_file()
    assert not (installed / "tests" / "unit").exists() and not (installed / "lab").exists()
    # The builder stage: introspection reads the installed collection's meta/execution-environment.yml
    out = subprocess.run(
        [sys.executable, str(build / "scripts" / "introspect.py"), "introspect", str(dest)],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert "python-libmaas" in out.stdout and "genisoimage" in out.stdout
