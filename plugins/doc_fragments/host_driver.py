# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations


class ModuleDocFragment:
    # The host driver options (module_utils/module.py host_driver_argument_spec; hosts/drivers.py).
    DOCUMENTATION = r"""
options:
  host_driver:
    description:
      - V(ironic) - the collection moves the hosts through Ironic as baremetal-operator would.
      - V(external) - something else moves them (a baremetal-operator); the collection only writes the host
        spec and reads the host status.
    type: str
    choices: [ironic, external]
    default: ironic
  host_driver_options:
    description:
      - Options of the host driver - for V(ironic) C(cloud) (a clouds.yaml entry; falls back to E(OS_CLOUD)) or
        C(ironic_url), and C(poll).
    type: dict
    default: {}
"""
