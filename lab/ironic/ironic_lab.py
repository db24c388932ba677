"""The lab's Ironic: Ironic's single-process service (API and conductor), whose fake-hardware deploy ends with the
node powered on and whose undeploy powers it off, as the deploy interfaces of real hosts do.

Run with the Ironic venv's Python (it imports Ironic only, nothing of the lab):
``python lab/ironic/ironic_lab.py --config-file ironic.conf`` takes the ``ironic`` command's own options.

Ironic's ``direct``, ``ramdisk`` and ``custom-agent`` deploy interfaces end a deploy by booting the instance
(agent_base's ``boot_instance`` step powers the node on) and power the node off when it is undeployed
(agent_base's tear_down, before cleaning). The ``fake`` deploy interface of the fake-hardware nodes does
neither: its deploy step and its tear_down leave the power as it was. A host deployed in the lab then came up
powered off, and BMO powered it on because its spec says online; an undeployed one stayed on, and BMO powered
it off because an available host's spec says offline - two calls no real deploy leaves for BMO, and the node
simulator kept an undeployed host's kubelet running until the second. Here the fake deploy step and tear_down
make the same power actions as the real ones (through Ironic's conductor, so the node's power state, its
notifications and the fake power interface move as they do on a real host).
"""

from __future__ import annotations

import functools
import sys

from ironic.command import singleprocess
from ironic.common import states
from ironic.conductor import utils as conductor_utils
from ironic.drivers.modules import fake

_fake_deploy = fake.FakeDeploy.deploy
_fake_tear_down = fake.FakeDeploy.tear_down


# wraps: the step keeps its name and its deploy-step registration (priority, abortable, argsinfo)
@functools.wraps(_fake_deploy)
def _deploy_then_boot(self, task):
    result = _fake_deploy(self, task)
    conductor_utils.node_power_action(task, states.POWER_ON)
    return result


@functools.wraps(_fake_tear_down)
def _tear_down_powered_off(self, task):
    conductor_utils.node_power_action(task, states.POWER_OFF)
    return _fake_tear_down(self, task)


fake.FakeDeploy.deploy = _deploy_then_boot
fake.FakeDeploy.tear_down = _tear_down_powered_off

if __name__ == "__main__":
    sys.argv[0] = "ironic"
    sys.exit(singleprocess.main())
