# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# The Apache License 2.0 is compatible with the GNU General Public License version 3 (GPLv3).
"""cluster_machines on the controller: the whole loop inside the ansible-playbook process.

Every task of the collection runs on the controller (``connection: local``), so the engine runs here
instead of in a module process: no AnsiballZ, one store, one openstacksdk session, one MAAS session and one
workload client for the whole task, and a line per machine change streamed through ``Display`` (the worker
process's display reaches the stdout callback, and AWX's job output, at once).  The module
(plugins/modules/cluster_machines.py) keeps the documentation and argument spec this validates with; on a
host reached through another connection the module runs there, as any module would.
"""

from __future__ import annotations

import os
import time

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.baremetal.capi.plugins.module_utils.progress import progress_line
from ansible_collections.baremetal.capi.plugins.plugin_utils.in_process import LOCAL

display = Display()


def _argument_spec() -> dict:
    from ansible_collections.baremetal.capi.plugins.module_utils.module import (
        cluster_machines_argument_spec,
        maas_argument_spec,
        store_argument_spec,
    )

    return {**store_argument_spec(), **maas_argument_spec(), **cluster_machines_argument_spec()}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        if self._connection.transport not in LOCAL:
            result.update(self._execute_module(task_vars=task_vars))
            return result
        validation, params = self.validate_argument_spec(argument_spec=_argument_spec())
        return self._converge(result, params, set(validation._no_log_values))

    def _converge(self, result: dict, params: dict, no_log: set) -> dict:
        from ansible_collections.baremetal.capi.plugins.module_utils.capi import converge_task
        from ansible_collections.baremetal.capi.plugins.module_utils.module import (
            controller_call,
            default_namespace,
            failed_result,
            mask,
            scrub,
        )

        check = bool(self._task.check_mode)
        ns = params["namespace"] or default_namespace(params)
        cluster = f"{ns}/{params['cluster']}"
        verbose = display.verbosity >= 1
        t0 = time.monotonic()

        def progress(row: dict, timing: dict) -> None:
            line = f"  {cluster} {progress_line(row)}"
            if verbose:
                line += (
                    f"  [+{timing['elapsed']:.1f}s, {timing['since']:.1f}s since its last change, "
                    f"{timing['steps']} steps, last step {timing['step_seconds'] or 0:.2f}s]"
                )
            display.display(scrub(line, no_log))

        def maas_options() -> dict:
            url, key = params.get("maas_url"), params.get("maas_api_key")
            missing = [n for n, v in (("maas_url", url), ("maas_api_key", key)) if not v]
            if missing:
                raise AnsibleActionFail(f"{' and '.join(missing)} required (or the MAAS_URL / MAAS_API_KEY variables)")
            return dict(
                url=url, api_key=key, validate_certs=params.get("maas_validate_certs", True),
                ca_bundle=params.get("maas_ca_bundle"),
            )  # fmt: skip

        # The loop runs in an ansible-playbook worker, which ansible-core detaches into a session of its own: a
        # kill -9 of ansible-playbook leaves it running, a second converger behind the user's back. Once its
        # parent is gone (reparented), nobody waits for the result: it stops after the steps in flight.
        parent = os.getppid()

        def abandoned() -> bool:
            return os.getppid() != parent

        def converge(store):
            return converge_task.run(
                params, store, ns, maas_options=maas_options, check_mode=check, progress=progress, abort=abandoned
            )

        report, failed = controller_call(result, params, no_log, check, converge, display.warning)
        if failed is not None:
            return failed
        out, failure = converge_task.outcome(params, ns, report, check)
        if verbose and params["wait"] and not check:
            display.display(
                f"  {cluster}: {out['steps']} steps ({out['rounds']} of the cluster-level controllers) "
                f"in {time.monotonic() - t0:.1f}s"
            )
        result.update(mask(out), changed=bool(report["changed"]))
        if failure:
            return failed_result(result, failure, no_log)
        return result
