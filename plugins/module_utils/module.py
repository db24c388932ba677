# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The base class of every baremetal.capi module.

In the style of openstack.cloud's ``OpenStackModule`` and amazon.aws's
``AnsibleAWSModule``: it merges the common options (``store``, and the MAAS
connection when asked), opens the store once, and turns every engine error into
one ``fail_json(msg=...)``.  A module is a page::

    from ansible_collections.baremetal.capi.plugins.module_utils.module import CapiModule
    from ansible_collections.baremetal.capi.plugins.module_utils.metal3 import machine

    def main():
        module = CapiModule(argument_spec=dict(name=dict(type="str", required=True)))
        with module.errors():
            before = module.store.get("Metal3Machine", module.params["name"], module.namespace)
            after = machine.update(module.store, before, check=module.check_mode)
            module.exit(changed=after != before, before=before, after=after, object=after)

    if __name__ == "__main__":
        main()

Secrets: ``store.api_key`` and ``maas_api_key`` are ``no_log``, also when they
come from the environment; ``exit``/``mask`` replace Secret data with a mask.
"""

from __future__ import annotations

import contextlib
import copy
import time
import traceback

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.baremetal.capi.plugins.module_utils.errors import CapiError, NotFound
from ansible_collections.baremetal.capi.plugins.module_utils.store import options as store_opts

# The string Ansible itself puts where a no_log value was.
MASK = "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"

# Secret values shorter than this are masked in objects but not registered as
# no_log values: Ansible replaces every occurrence of a no_log value anywhere
# in the output, and a one-letter value would mangle the whole result.
_MIN_NO_LOG_LEN = 4


def store_argument_spec() -> dict:
    return dict(
        store=dict(
            type="dict",
            apply_defaults=True,
            options=dict(
                kind=dict(type="str", choices=["sqlite", "kubernetes"]),
                path=dict(type="path"),
                kubeconfig=dict(type="path"),
                context=dict(type="str"),
                host=dict(type="str"),
                api_key=dict(type="str", no_log=True),
                ca_cert=dict(type="path", aliases=["ssl_ca_cert"]),
                validate_certs=dict(type="bool", aliases=["verify_ssl"]),
                namespace=dict(type="str"),
                adopt=dict(type="bool", default=False),
            ),
        )
    )


def namespace_argument_spec() -> dict:
    """``namespace``: the objects' namespace; ``store.namespace`` (else ``default``) when not set."""
    return dict(namespace=dict(type="str"))


def wait_argument_spec(wait: bool = True, timeout: int = 1800, sleep: float = 2.0) -> dict:
    """``wait``, ``wait_timeout`` (seconds) and ``wait_sleep`` (seconds between polls, alias ``poll``)."""
    return dict(
        wait=dict(type="bool", default=wait),
        wait_timeout=dict(type="int", default=timeout),
        wait_sleep=dict(type="float", default=sleep, aliases=["poll"]),
    )


def host_driver_argument_spec() -> dict:
    """``host_driver`` and ``host_driver_options``: what moves a BareMetalHost (hosts/drivers.py)."""
    return dict(
        host_driver=dict(type="str", choices=["ironic", "external"], default="ironic"),
        host_driver_options=dict(type="dict", default={}),
    )


def remediation_argument_spec(**extra) -> dict:
    """The options of metal3_remediation and maas_remediation, plus the provider's own."""
    return dict(
        machines=dict(type="list", elements="str", required=True),
        **namespace_argument_spec(),
        state=dict(type="str", choices=["present", "absent"], default="present"),
        strategy=dict(
            type="dict",
            options=dict(
                type=dict(type="str", default="Reboot"),
                retryLimit=dict(type="int"),
                timeoutSeconds=dict(type="int"),
            ),
        ),
        force=dict(type="bool", default=False),
        fencing=dict(type="str", choices=["auto", "taint", "delete"], default="auto"),
        workload_kubeconfig=dict(type="str", no_log=True),
        **wait_argument_spec(),
        workers=dict(type="int", default=8),
        **extra,
    )


def remediation_arguments(params: dict, namespace: str, check: bool) -> dict:
    """remediation/run.py ``remediate_machines``' keyword arguments from a remediation module's options."""
    return dict(
        check=check,
        machines=params["machines"],
        ns=params["namespace"] or namespace,
        state=params["state"],
        strategy={k: v for k, v in (params["strategy"] or {}).items() if v is not None},
        force=params["force"],
        fencing=params["fencing"],
        workload_kubeconfig=params["workload_kubeconfig"],
        wait=params["wait"],
        timeout=params["wait_timeout"],
        poll=params["wait_sleep"],
        workers=params["workers"],
    )


def cluster_machines_argument_spec() -> dict:
    """The cluster_machines module's options (its action plugin validates with the same)."""
    return dict(
        cluster=dict(type="str", required=True),
        **namespace_argument_spec(),
        provider=dict(type="str", choices=["metal3", "maas"]),
        **host_driver_argument_spec(),
        disable_swap=dict(type="bool", default=True),
        workload_kubeconfig=dict(type="str", no_log=True),
        token_ttl=dict(type="int", default=14400, no_log=False),
        user_data_template=dict(type="str"),
        **wait_argument_spec(),
        workers=dict(type="int", default=8),
        deregister_hosts=dict(type="list", elements="str", default=[]),
        stop_when=dict(
            type="str", choices=["converged", "control_plane_deployed", "workers_deleted"], default="converged"
        ),
    )


HOST_MUTUALLY_EXCLUSIVE = [("name", "hosts")]
HOST_REQUIRED_ONE_OF = [("name", "hosts")]


def host_argument_spec() -> dict:
    """The baremetalhost module's options (its action plugin validates with the same)."""
    from ansible.module_utils.basic import env_fallback

    # one host: at the top level (name optional there: hosts may list them instead) or as an entry of hosts
    one_host = dict(
        **namespace_argument_spec(),
        spec=dict(type="dict"),
        labels=dict(type="dict"),
        annotations=dict(type="dict"),
        bmc_username=dict(type="str"),
        bmc_password=dict(type="str", no_log=True),
        hardware=dict(type="dict"),
    )
    return dict(
        name=dict(type="str"),
        **one_host,
        hosts=dict(type="list", elements="dict", options=dict(name=dict(type="str", required=True), **one_host)),
        state=dict(type="str", choices=["present", "absent"], default="present"),
        host_driver=host_driver_argument_spec()["host_driver"],
        cloud=dict(type="str", fallback=(env_fallback, ["OS_CLOUD"])),
        ironic_url=dict(type="str"),
        boot_iso=dict(type="str"),
        deploy_kernel=dict(type="str"),
        deploy_ramdisk=dict(type="str"),
        deploy_iso=dict(type="str"),
        max_provisioning_retries=dict(type="int"),
        **wait_argument_spec(wait=False),
        wait_state=dict(type="str"),
        workers=dict(type="int", default=8),
    )


def maas_argument_spec() -> dict:
    from ansible.module_utils.basic import env_fallback

    return dict(
        maas_url=dict(type="str", fallback=(env_fallback, ["MAAS_URL"])),
        maas_api_key=dict(type="str", no_log=True, fallback=(env_fallback, ["MAAS_API_KEY"])),
        maas_validate_certs=dict(type="bool", default=True),
        maas_ca_bundle=dict(type="path", fallback=(env_fallback, ["MAAS_CA_BUNDLE"])),
    )


def mask(obj, reveal: bool = False):
    """A copy of an object (or list of objects) with Secret data replaced by MASK."""
    if isinstance(obj, list):
        return [mask(o, reveal) for o in obj]
    if reveal or not isinstance(obj, dict) or obj.get("kind") != "Secret":
        return copy.deepcopy(obj)
    out = copy.deepcopy(obj)
    for field in ("data", "stringData"):
        if isinstance(out.get(field), dict):
            out[field] = {k: MASK for k in out[field]}
    return out


def secret_values(obj) -> list[str]:
    """Every value of a Secret's data (as stored, base64) and stringData, to register as no_log."""
    if isinstance(obj, list):
        return [v for o in obj for v in secret_values(o)]
    if not isinstance(obj, dict) or obj.get("kind") != "Secret":
        return []
    values = []
    for field in ("data", "stringData"):
        for value in (obj.get(field) or {}).values():
            if isinstance(value, str) and len(value) >= _MIN_NO_LOG_LEN:
                values.append(value)
    return values


def store_options(params: dict, no_log_values: set) -> dict:
    """The ``store`` option of ``params`` with kind resolved and the environment fallbacks applied
    (``store/options.py``, the one place they are).

    A module (``CapiModule.store_options``) and an action plugin running the engine on the controller share it;
    an API key read from the environment is added to ``no_log_values``.
    """
    given = params.get("store") or {}
    resolved = store_opts.resolve(given)
    if resolved.get("api_key") and resolved["api_key"] != given.get("api_key"):
        no_log_values.add(resolved["api_key"])
    return resolved


def default_namespace(params: dict) -> str:
    """The namespace of a task that names none: ``store.namespace``, else ``default``."""
    return (params.get("store") or {}).get("namespace") or "default"


class CapiModule(AnsibleModule):
    """AnsibleModule plus the collection's common options, store and error path."""

    def __init__(self, argument_spec=None, supports_check_mode=True, store=True, maas=False, **kwargs):
        spec = {}
        if store:
            spec.update(store_argument_spec())
        if maas:
            spec.update(maas_argument_spec())
        spec.update(argument_spec or {})
        super().__init__(argument_spec=spec, supports_check_mode=supports_check_mode, **kwargs)
        self._store = None
        self._has_store = store

    # -- options -------------------------------------------------------------

    def store_options(self) -> dict:
        """The ``store`` option with kind resolved and the K8S_AUTH_* fallbacks applied."""
        return store_options(self.params, self.no_log_values)

    @property
    def namespace(self) -> str:
        """The namespace a module works in when its task names none: ``store.namespace`` or ``default``."""
        return default_namespace(self.params)

    def maas_options(self) -> dict:
        """``url``, ``api_key``, ``validate_certs``, ``ca_bundle`` of the MAAS connection; fails when one is missing."""
        url, key = self.params.get("maas_url"), self.params.get("maas_api_key")
        missing = [name for name, value in (("maas_url", url), ("maas_api_key", key)) if not value]
        if missing:
            self.fail_json(msg=f"{' and '.join(missing)} required (or the MAAS_URL / MAAS_API_KEY variables)")
        validate = self.params.get("maas_validate_certs", True)
        if not validate and url.lower().startswith("https:"):
            self.warn(f"maas_validate_certs=false: the TLS certificate of {url} is not verified")
        return dict(url=url, api_key=key, validate_certs=validate, ca_bundle=self.params.get("maas_ca_bundle"))

    # -- the store -----------------------------------------------------------

    @property
    def store(self):
        """The object store, opened on first use."""
        if not self._has_store:
            raise RuntimeError("this module was created with store=False")
        if self._store is None:
            from ansible_collections.baremetal.capi.plugins.module_utils.store.base import open_store

            self._store = open_store(self.store_options())
        return self._store

    def close_store(self) -> None:
        if self._store is not None:
            store, self._store = self._store, None
            store.close()

    # -- results -------------------------------------------------------------

    def no_log_secrets(self, *objects) -> None:
        """Register the data of any Secret among ``objects`` as no_log values."""
        for obj in objects:
            self.no_log_values.update(secret_values(obj))

    def exit(self, changed: bool, before=None, after=None, **result):
        """exit_json with ``changed``, ``diff`` (only when asked) and Secret data masked."""
        self.no_log_secrets(before, after, *result.values())
        if self._diff:
            result["diff"] = dict(
                before=mask(before) if before is not None else {}, after=mask(after) if after is not None else {}
            )
        result = {k: mask(v) for k, v in result.items()}
        self.close_store()
        self.exit_json(changed=bool(changed), **result)

    def exit_results(self, results, key: str, noun: str, wait: bool) -> None:
        """Exit with one dict per runner.Result under ``key`` (a traceback only with -vvv).

        Fails when one failed or, with ``wait`` outside check mode, one is not done yet; the message names each.
        """
        items = [r.as_dict() for r in results]
        if self._verbosity < 3:
            for item in items:
                item.pop("traceback", None)
        changed = any(r.changed for r in results)
        failed = [r for r in results if r.failed]
        waiting = [r for r in results if not r.done and not r.failed] if wait and not self.check_mode else []
        if failed or waiting:
            lines = [f"{r.key}: {r.message}" for r in failed + waiting]
            self.fail(
                f"{len(failed)} {noun}(s) failed, {len(waiting)} not done: " + "; ".join(lines),
                changed=changed,
                **{key: items},
            )
        self.exit(changed=changed, **{key: items})

    def fail(self, msg: str, **result):
        self.close_store()
        self.fail_json(msg=msg, **{k: mask(v) for k, v in result.items()})

    # -- the one error path ----------------------------------------------------

    @contextlib.contextmanager
    def errors(self):
        """Turn any engine error raised in the block into one fail_json.

        A CapiError becomes its message (which names the object and field). In check mode a NotFound is
        what an earlier task of the plan would have created: changed, with a warning, not a failure;
        anything else is a bug: its type and message, plus a traceback when
        Ansible runs with -vvv or ANSIBLE_DEBUG.
        """
        try:
            yield self
        except NotFound as exc:
            if not self.check_mode:
                self.fail(str(exc), error=type(exc).__name__)
            # A plan: what this task works on is what an earlier task of the same check run only predicted.
            self.warn(f"check mode: {exc}; an earlier task would create it, so this one would act on it then")
            self.exit(True, msg=f"would act once it exists: {exc}", check_mode_missing=str(exc))
        except CapiError as exc:
            self.fail(str(exc), error=type(exc).__name__)
        except Exception as exc:  # pylint: disable=broad-exception-caught
            extra = {}
            if self._debug or self._verbosity >= 3:
                extra["exception"] = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__, limit=8))
            self.fail(f"unexpected error: {type(exc).__name__}: {exc}", **extra)

    def run(self, fn, *args, **kwargs):
        """Call ``fn(*args, **kwargs)`` inside ``errors()`` and return what it returns."""
        with self.errors():
            return fn(*args, **kwargs)

    def until(self, attempt, *waits):
        """``attempt()`` again every ``wait_sleep`` seconds while it raises one of ``waits`` (wait_argument_spec).

        One attempt without ``wait`` or in check mode; the last error once ``wait_timeout`` would pass.
        """
        p = self.params
        deadline = time.monotonic() + p["wait_timeout"]
        while True:
            try:
                return attempt()
            except waits:
                if not p["wait"] or self.check_mode or time.monotonic() + p["wait_sleep"] > deadline:
                    raise
                time.sleep(p["wait_sleep"])


def scrub(text: str, no_log) -> str:
    """``text`` with every no_log value (4 characters or more) masked, for lines an action prints itself."""
    for value in no_log:
        if value and len(value) >= 4:
            text = text.replace(value, "********")
    return text


def failed_result(result: dict, msg: str, no_log, **extra) -> dict:
    """An action plugin's failed result: its message scrubbed of the no_log values."""
    result.update(failed=True, msg=scrub(msg, no_log), **extra)
    return result


def controller_call(result: dict, params: dict, no_log: set, check: bool, call, warn):
    """An action plugin's engine call, with CapiModule.errors' error path: ``(call(store), None)``, or
    ``(None, result)`` once an engine error made the result (in check mode a NotFound is the plan's changed).

    The store is opened from the task's options and closed after the call.
    """
    from ansible_collections.baremetal.capi.plugins.module_utils.store.base import open_store

    store = None
    try:
        store = open_store(store_options(params, no_log))
        return call(store), None
    except NotFound as exc:
        if not check:
            return None, failed_result(result, str(exc), no_log, error=type(exc).__name__)
        # a plan: an earlier task of the same check run would create what this one works on
        warn(f"check mode: {exc}; an earlier task would create it, so this one would act on it then")
        result.update(changed=True, msg=f"would act once it exists: {exc}", check_mode_missing=str(exc))
        return None, result
    except CapiError as exc:
        return None, failed_result(result, str(exc), no_log, error=type(exc).__name__)
    finally:
        if store is not None:
            store.close()
