# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations


class ModuleDocFragment:
    # The wait options (module_utils/module.py wait_argument_spec). A module whose wait means something more
    # precise, or whose defaults differ, states that in its own entry; the rest comes from here.
    DOCUMENTATION = r"""
options:
  wait:
    description:
      - Reconcile until the objects reach their goal, fail, or O(wait_timeout) passes. V(false) takes one step.
    type: bool
    default: true
  wait_timeout:
    description:
      - Seconds for the whole task; on timeout it fails with each object's last state and why it waits.
    type: int
    default: 1800
  wait_sleep:
    description:
      - Seconds between two reconciles of an object that waits.
    type: float
    default: 2
    aliases: [poll]
"""
