"""What AWX does to launch a job, without AWX: survey answers, credential injection, an ansible-runner run.

* ``survey_extra_vars`` applies a survey as AWX's SurveyJobTemplateMixin does: each question's default is
  used when it passes the question's own validation and the launch gives no answer; required questions
  must then have a value; answers are validated (type, min/max length or value, choices).
* ``inject`` renders a credential type's injectors as AWX's ``CredentialType.inject_credential`` does:
  each ``file.template[.<name>]`` is rendered with the credential's inputs and written to a private file,
  then ``env`` and ``extra_vars`` are rendered with the inputs plus ``tower.filename`` (and its newer
  alias ``awx.filename``) naming those files.
* ``run_job`` runs a playbook of the repository through ansible-runner (what AWX's task runner calls) in
  a private data dir, with the extra vars and environment, and returns the runner object.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import jinja2
import yaml
from jinja2.sandbox import ImmutableSandboxedEnvironment

REPO = Path(__file__).resolve().parents[3]
AWX = REPO / "awx"
TYPES = {
    "kubeconfig": AWX / "credential_types" / "kubeconfig.yml",
    "maas": AWX / "credential_types" / "maas.yml",
    "ironic": AWX / "credential_types" / "ironic_clouds_yaml.yml",
}
_RESULT_EVENTS = ("runner_on_ok", "runner_on_failed", "runner_on_skipped", "runner_on_unreachable")
SURVEY_TYPES = {"text", "textarea", "password", "integer", "float", "multiplechoice", "multiselect"}


class SurveyError(ValueError):
    pass


def load_credential_type(key: str) -> dict:
    return yaml.safe_load(TYPES[key].read_text())


def load_survey(name: str) -> dict:
    return json.loads((AWX / "surveys" / name).read_text())


def job_templates() -> list[dict]:
    return yaml.safe_load((AWX / "job_templates.yml").read_text())["awx_job_templates"]


def _choices(question: dict) -> list[str]:
    choices = question.get("choices") or []
    return choices.split("\n") if isinstance(choices, str) else list(choices)


def validate_answer(question: dict, value) -> None:
    """AWX's _survey_element_validation for one answer."""
    kind, var = question["type"], question["variable"]
    if kind in ("text", "textarea", "password"):
        if not isinstance(value, str):
            raise SurveyError(f"{var}: {kind} answer must be a string, got {value!r}")
        if "min" in question and len(value) < int(question["min"]):
            raise SurveyError(f"{var}: shorter than {question['min']}")
        if "max" in question and len(value) > int(question["max"]):
            raise SurveyError(f"{var}: longer than {question['max']}")
    elif kind in ("integer", "float"):
        ok = isinstance(value, int) if kind == "integer" else isinstance(value, (int, float))
        if not ok or isinstance(value, bool):
            raise SurveyError(f"{var}: {kind} answer must be a number, got {value!r}")
        if "min" in question and question["min"] not in ("", None) and value < question["min"]:
            raise SurveyError(f"{var}: below {question['min']}")
        if "max" in question and question["max"] not in ("", None) and value > question["max"]:
            raise SurveyError(f"{var}: above {question['max']}")
    elif kind == "multiplechoice":
        if value not in _choices(question):
            raise SurveyError(f"{var}: {value!r} is not one of {_choices(question)}")
    elif kind == "multiselect":
        if not isinstance(value, list) or any(v not in _choices(question) for v in value):
            raise SurveyError(f"{var}: {value!r} is not a subset of {_choices(question)}")
    else:
        raise SurveyError(f"{var}: unknown survey type {kind!r}")


def survey_extra_vars(survey: dict, answers: dict | None = None) -> dict:
    answers = dict(answers or {})
    out = {}
    for question in survey["spec"]:
        var = question["variable"]
        default = question.get("default")
        if default not in (None, "") or (default == "" and question["type"] in ("text", "textarea")):
            try:
                validate_answer(question, default)
                out[var] = default
            except SurveyError:
                pass  # AWX drops a default that fails its own question
        if var in answers:
            validate_answer(question, answers[var])
            out[var] = answers.pop(var)
        if question.get("required") and out.get(var) in (None, ""):
            raise SurveyError(f"{var}: required and not answered")
    if answers:
        raise SurveyError(f"answers for no question: {sorted(answers)}")
    return out


def _render(template: str, context: dict) -> str:
    env = ImmutableSandboxedEnvironment(undefined=jinja2.StrictUndefined)
    return env.from_string(template).render(**context)


def inject(credential_type: dict, inputs: dict, private_dir: Path) -> tuple[dict, dict]:
    """``(env, extra_vars)`` a job gets from one credential of this type; files are written under private_dir."""
    fields = {f["id"]: f for f in credential_type["inputs"]["fields"]}
    missing = [f for f in credential_type["inputs"].get("required", []) if not inputs.get(f)]
    if missing:
        raise ValueError(f"{credential_type['name']}: missing required input(s) {missing}")
    unknown = set(inputs) - set(fields)
    if unknown:
        raise ValueError(f"{credential_type['name']}: unknown input(s) {sorted(unknown)}")
    context = {fid: inputs.get(fid, "") for fid in fields}
    injectors = credential_type.get("injectors") or {}
    filenames = {}
    private_dir.mkdir(parents=True, exist_ok=True)
    for key, template in (injectors.get("file") or {}).items():
        name = key.partition(".")[2] if key != "template" else None
        fd, path = _mkstemp(private_dir)
        with os.fdopen(fd, "w") as f:
            f.write(_render(template, context))
        if name is None:
            filenames = path  # a single file: {{ tower.filename }} is the path itself
        else:
            filenames[name] = path
    context["tower"] = context["awx"] = {"filename": filenames}
    env = {k: _render(v, context) for k, v in (injectors.get("env") or {}).items()}
    extra = {k: _render(v, context) for k, v in (injectors.get("extra_vars") or {}).items()}
    return env, extra


def _mkstemp(folder: Path) -> tuple[int, str]:
    import tempfile

    return tempfile.mkstemp(prefix="awx_", dir=str(folder))


def run_job(playbook: str, private_dir: Path, extra_vars: dict, env: dict, inventory: str | None = None, timeout=1800):
    """ansible-runner as AWX's task runner uses it: the project is the repository, the collection from build/."""
    import ansible_runner

    Path(private_dir).mkdir(parents=True, exist_ok=True)

    envvars = {
        "ANSIBLE_COLLECTIONS_PATH": str(REPO / "build"),
        "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
        **env,
    }
    runner = ansible_runner.run(
        private_data_dir=str(private_dir),
        project_dir=str(REPO),
        playbook=str(REPO / playbook),
        inventory=inventory or f"localhost ansible_connection=local ansible_python_interpreter={sys.executable}",
        extravars=extra_vars,
        envvars=envvars,
        quiet=True,
        timeout=timeout,
    )
    return runner


def task_results(runner, task_name: str) -> list[dict]:
    """The results of the named task in the run's events (ok, changed, failed, skipped)."""
    out = []
    for event in runner.events:
        data = event.get("event_data") or {}
        if data.get("task") == task_name and event.get("event", "") in _RESULT_EVENTS:
            out.append({"event": event["event"], "res": data.get("res") or {}})
    return out


def stdout(runner) -> str:
    return runner.stdout.read() if hasattr(runner.stdout, "read") else str(runner.stdout)
