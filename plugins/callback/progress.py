# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# The Apache License 2.0 is compatible with the GNU General Public License version 3 (GPLv3).

from __future__ import annotations

DOCUMENTATION = r"""
name: progress
type: aggregate
short_description: A line per machine as it moves, and each cluster's machine table at the end
version_added: 0.1.0
description:
  - M(baremetal.capi.cluster_machines) prints a line per machine change itself, as it happens (it runs in the
    ansible-playbook process). For that module run one round at a time in an C(until) loop of your own, this
    prints one line for each machine whose state, host, address, Node readiness or message changed since the
    previous round, as each retry comes back.
  - At the end of the playbook, prints the last machine table (machine, role, host or system id, address, state,
    providerID, Node ready) of every cluster that was converged.
  - Works beside any stdout callback (the default one included); enable it with C(callbacks_enabled).
requirements:
  - enabled in ansible.cfg (C(callbacks_enabled = baremetal.capi.progress)) or E(ANSIBLE_CALLBACKS_ENABLED)
"""

from ansible.plugins.callback import CallbackBase  # noqa: E402

from ansible_collections.baremetal.capi.plugins.module_utils.progress import (  # noqa: E402
    machine_table,
    progress_line,
)

_ACTIONS = {"baremetal.capi.cluster_machines", "cluster_machines"}
_KEYS = ("state", "host", "address", "nodeReady", "providerID", "message")


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "baremetal.capi.progress"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        self._seen: dict[tuple, tuple] = {}
        self._tables: dict[str, list] = {}

    @staticmethod
    def _cluster(result) -> str | None:
        task = result._task
        if task.action not in _ACTIONS:
            return None
        args = task.args or {}
        return f"{args.get('namespace') or 'default'}/{args.get('cluster')}"

    def _rows(self, result, final: bool) -> None:
        cluster = self._cluster(result)
        if cluster is None:
            return
        rows = result._result.get("machines")
        if not isinstance(rows, list):
            return
        host = result._host.get_name()
        for row in rows:
            key = (host, cluster, row.get("machine"))
            state = tuple(str(row.get(k)) for k in _KEYS)
            if self._seen.get(key) != state:
                self._seen[key] = state
                self._display.display(f"  {cluster} {progress_line(row)}")
        if final:
            self._tables[cluster] = rows

    def v2_runner_retry(self, result):
        self._rows(result, final=False)

    def _table(self, result) -> None:
        # the task streamed its own lines; only its last table is kept, for the end
        cluster = self._cluster(result)
        rows = result._result.get("machines")
        if cluster is not None and isinstance(rows, list):
            self._tables[cluster] = rows

    def v2_runner_on_ok(self, result):
        self._table(result)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._table(result)

    def v2_playbook_on_stats(self, stats):
        for cluster, rows in sorted(self._tables.items()):
            self._display.display("")
            for line in machine_table(rows, title=f"Machines of {cluster}:"):
                self._display.display(line)
