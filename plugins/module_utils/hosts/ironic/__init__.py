# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The ``ironic`` host driver: the collection moves BareMetalHosts through Ironic as baremetal-operator does.

Behaviour: shared/reference/bmo-ironic.md.  One file per part:

``driver.py``       ``IronicDriver``: the connection per thread, one reconcile step, status bookkeeping
``context.py``      what every part shares: one host during one step (``Ctx``), ``NOW``, node names
``register.py``     Register (§2.1): the Ironic node, its driver_info and ports
``actions.py``      the state handlers (§2.2, §6)
``node.py``         the node changes several states make (configureNode, provision-state changes)
``power.py``        power and the reboot annotations (§5)
``delete.py``       deletion and deprovisioning (§6.3)
``configdrive.py``  image checks, instance_info, root device hints, the config drive (§4)
``hardware.py``     inspection inventory -> status.hardware (§7)

The parts import ``context.py`` and each other by their full module names, never this package, so no
part depends on the driver; ``hosts/drivers.py`` finds the driver here.
"""

from __future__ import annotations

from ansible_collections.baremetal.capi.plugins.module_utils.hosts.ironic.driver import IronicDriver

__all__ = ["IronicDriver"]
