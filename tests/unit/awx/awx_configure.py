"""awx/configure.yml's awx.awx calls, rendered as ansible-playbook renders them and validated as the modules do.

Run as a script (a process of its own, because it installs ansible's collection loader with awx.awx on it):

    python awx_configure.py <awx dir> <extra vars as JSON>

It prints one JSON document: for every awx.awx task and every loop item, the module, the rendered parameter
names and the validation errors (empty when the module would accept the call).

* Rendering: the playbook is loaded by ansible's DataLoader and every task is templated by ansible's Templar
  with the play's vars, the extra vars and what the earlier tasks set, task by task in playbook order:
  ``include_vars`` reads its file, ``set_fact`` sets its facts, ``assert`` evaluates its conditions (and
  fails the run if one is false), ``loop`` is templated and each item rendered, ``omit`` drops a parameter.
  Any other builtin module, or a task keyword this does not know, stops the run: a new kind of task has to
  be added here rather than be skipped silently.
* Validation: each awx.awx module file (the real one, from build/awx-collection) is imported and its
  ``main()`` run until it constructs its module object: the keyword arguments AnsibleModule receives there
  (the module's own argument_spec merged with ControllerModule's AUTH_ARGSPEC, mutually_exclusive,
  required_if, ...) are captured and the construction stopped, so no controller is contacted.  The rendered
  parameters are then checked by ``ModuleArgumentSpecValidator`` with exactly those arguments, which is what
  ``AnsibleModule.__init__`` does with a task's arguments: unknown names, missing required ones, wrong types,
  values outside ``choices``.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

from ansible.module_utils import basic
from ansible.module_utils.common.arg_spec import ModuleArgumentSpecValidator
from ansible.module_utils.errors import UnsupportedError
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import init_plugin_loader
from ansible.template import Templar

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from awx_collection import COLLECTIONS_PATH  # noqa: E402

TASK_KEYWORDS = {"name", "loop", "loop_control", "no_log", "when"}
VALIDATOR_ARGS = ("mutually_exclusive", "required_together", "required_one_of", "required_if", "required_by")


def _no_network(event: str, args: tuple) -> None:
    # tests/unit is hermetic (tests/unit/conftest.py watches the pytest process; this is a process of its own).
    if event in ("socket.connect", "socket.getaddrinfo", "socket.gethostbyname", "socket.sendto"):
        raise SystemExit(f"awx_configure.py: {event} {args!r}: no network here")


class _Constructed(Exception):
    def __init__(self, kwargs: dict):
        super().__init__("module object constructed")
        self.kwargs = kwargs


def module_arguments(short: str) -> dict:
    """The keyword arguments awx.awx.<short>'s main() passes to AnsibleModule."""

    def capture(self, *args, **kwargs):
        if args:
            kwargs["argument_spec"] = args[0]
        raise _Constructed(kwargs)

    module = importlib.import_module(f"ansible_collections.awx.awx.plugins.modules.{short}")
    original = basic.AnsibleModule.__init__
    basic.AnsibleModule.__init__ = capture
    try:
        module.main()
    except _Constructed as constructed:
        return constructed.kwargs
    finally:
        basic.AnsibleModule.__init__ = original
    raise RuntimeError(f"awx.awx.{short}: main() returned without constructing its module")


def validate(short: str, params: dict, cache: dict) -> list[str]:
    if short not in cache:
        cache[short] = module_arguments(short)
    kwargs = cache[short]
    validator = ModuleArgumentSpecValidator(
        kwargs["argument_spec"], **{k: kwargs[k] for k in VALIDATOR_ARGS if kwargs.get(k)}
    )
    # The arguments reach a module as JSON (the task executor serializes them).
    result = validator.validate(json.loads(json.dumps(params)))
    # AnsibleModule names the module in front of an unsupported parameter (basic.py, "Fail for validation errors").
    return [
        f"Unsupported parameters for (awx.awx.{short}) module: {error.msg}"
        if isinstance(error, UnsupportedError)
        else error.msg
        for error in result.errors
    ]


def _load(loader: DataLoader, path: str):
    try:
        return loader.load_from_file(path, trusted_as_template=True)
    except TypeError:  # ansible-core < 2.19: every string is a template
        return loader.load_from_file(path)


def run(awx_dir: Path, extra_vars: dict) -> dict:
    init_plugin_loader([str(COLLECTIONS_PATH)])
    loader = DataLoader()
    loader.set_basedir(str(awx_dir))
    plays = _load(loader, str(awx_dir / "configure.yml"))
    if len(plays) != 1:
        raise SystemExit(f"configure.yml: one play expected, got {len(plays)}")
    play = plays[0]
    variables = {**play.get("vars", {}), **extra_vars, "playbook_dir": str(awx_dir)}
    calls: list[dict] = []
    builtins: list[str] = []
    cache: dict = {}
    for task in play["tasks"]:
        name = task.get("name", "?")
        actions = [k for k in task if k not in TASK_KEYWORDS]
        if len(actions) != 1:
            raise SystemExit(f"{name}: one action and only known keywords expected, got {actions}")
        action = actions[0]
        templar = Templar(loader=loader, variables=variables)
        if "when" in task and not templar.evaluate_conditional(task["when"]):
            continue
        items = templar.template(task["loop"]) if "loop" in task else [None]
        for item in items:
            scope = {**variables, "item": item} if "loop" in task else variables
            templar = Templar(loader=loader, variables=scope)
            args = task[action]
            if action == "ansible.builtin.assert":
                for condition in args["that"]:
                    if not templar.evaluate_conditional(condition):
                        raise SystemExit(f"{name}: {condition} is false: {templar.template(args['fail_msg'])}")
            elif action == "ansible.builtin.include_vars":
                variables.update(_load(loader, templar.template(args["file"])))
            elif action == "ansible.builtin.set_fact":
                variables.update(templar.template(args))
            elif action.startswith("awx.awx."):
                params = templar.template(args)
                label = templar.template(task["loop_control"]["label"]) if "loop_control" in task else None
                calls.append(
                    {
                        "task": name,
                        "label": label,
                        "module": action,
                        "params": params,
                        "errors": validate(action.removeprefix("awx.awx."), params, cache),
                    }
                )
                continue
            else:
                raise SystemExit(f"{name}: {action} is not a task this check renders")
            builtins.append(action)
    return {"calls": calls, "builtins": builtins}


if __name__ == "__main__":
    sys.addaudithook(_no_network)
    result = run(Path(sys.argv[1]).resolve(), json.loads(sys.argv[2]))
    print(json.dumps(result, default=str))
