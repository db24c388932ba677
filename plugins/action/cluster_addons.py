# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# The Apache License 2.0 is compatible with the GNU General Public License version 3 (GPLv3).
"""baremetal.capi.cluster_addons in the ansible-playbook worker: plugins/plugin_utils/in_process.py."""

from __future__ import annotations

from ansible_collections.baremetal.capi.plugins.plugin_utils.in_process import InProcessModule as ActionModule

__all__ = ["ActionModule"]
