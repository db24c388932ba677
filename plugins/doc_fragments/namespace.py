# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations


class ModuleDocFragment:
    # The namespace option (module_utils/module.py namespace_argument_spec).
    DOCUMENTATION = r"""
options:
  namespace:
    description:
      - The namespace. Defaults to O(store.namespace), then V(default).
    type: str
"""
