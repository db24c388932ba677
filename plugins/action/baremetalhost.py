# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# The Apache License 2.0 is compatible with the GNU General Public License version 3 (GPLv3).
"""baremetalhost on the controller: registration, inspection, cleaning and deprovisioning report as they go.

With ``wait`` the hosts can take many minutes (inspection and cleaning on real hardware); a module process
would print nothing until the end, and the task is usually ``no_log`` (BMC credentials).  As
plugins/action/cluster_machines.py does, the engine (module_utils/metal3/host_task.py) runs here, inside
ansible-playbook, and each host's step is printed as it changes (``ns/host: registering -> inspecting``).
The lines carry host names and states only, with every no_log value of the task scrubbed.  On a host reached
through another connection the module runs there, as any module would.
"""

from __future__ import annotations

import time

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.baremetal.capi.plugins.plugin_utils.in_process import LOCAL

display = Display()


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        from ansible_collections.baremetal.capi.plugins.module_utils.module import (
            HOST_MUTUALLY_EXCLUSIVE,
            HOST_REQUIRED_ONE_OF,
            host_argument_spec,
            store_argument_spec,
        )

        result = super().run(tmp, task_vars)
        if self._connection.transport not in LOCAL:
            result.update(self._execute_module(task_vars=task_vars))
            return result
        validation, params = self.validate_argument_spec(
            argument_spec={**store_argument_spec(), **host_argument_spec()},
            mutually_exclusive=HOST_MUTUALLY_EXCLUSIVE,
            required_one_of=HOST_REQUIRED_ONE_OF,
        )
        return self._hosts(result, params, set(validation._no_log_values))

    def _hosts(self, result: dict, params: dict, no_log: set) -> dict:
        from ansible_collections.baremetal.capi.plugins.module_utils.metal3 import host_task
        from ansible_collections.baremetal.capi.plugins.module_utils.module import (
            controller_call,
            default_namespace,
            failed_result,
            mask,
            scrub,
        )

        check = bool(self._task.check_mode)
        ns = params["namespace"] or default_namespace(params)
        t0 = time.monotonic()

        def progress(key: str, message: str) -> None:
            display.display(scrub(f"  BareMetalHost {key}: {message}  [+{time.monotonic() - t0:.0f}s]", no_log))

        def hosts(store):
            return host_task.run(params, store, ns, check, progress=progress)

        done, failed = controller_call(result, params, no_log, check, hosts, display.warning)
        if failed is not None:
            return failed
        result.update(changed=done["changed"], hosts=mask(done["hosts"]))
        if self._task.diff:
            result["diff"] = {"before": mask(done["before"]), "after": mask(done["after"])}
        if done["failures"]:
            return failed_result(result, "; ".join(done["failures"]), no_log)
        return result
