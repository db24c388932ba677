# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The ``ironic`` host driver: the collection moves BareMetalHosts through Ironic as baremetal-operator does.

Behaviour: baremetal-operator pkg/provisioner/ironic/ironic.go and
internal/controller/metal3.io/host_state_machine.go.  One file per part (``__init__.py`` stays empty, as
ansible-test's empty-init check asks of module_utils packages):

``driver.py``       ``IronicDriver``: the connection per thread, one reconcile step, status bookkeeping
``context.py``      what every part shares: one host during one step (``Ctx``), ``NOW``, node names
``register.py``     Register (ironic.go Register): the Ironic node, its driver_info and ports
``actions.py``      the state handlers (host_state_machine.go, the controller's action*)
``node.py``         the node changes several states make (configureNode, provision-state changes)
``power.py``        power and the reboot annotations (ironic.go PowerOn / PowerOff)
``delete.py``       deletion and deprovisioning (ironic.go Deprovision / Delete)
``configdrive.py``  image checks, instance_info, root device hints, the config drive (ironic.go getConfigDrive)
``hardware.py``     inspection inventory -> status.hardware (hardwaredetails.go)
``detach.py``       the ``baremetalhost.metal3.io/detached`` annotation (ironic.go Detach)
``prepare.py``      ``preparing``: RAID, BIOS settings and firmware updates by manual cleaning (ironic.go Prepare)
``firmware.py``     HostFirmwareSettings and HostFirmwareComponents on the Ironic side

The parts import ``context.py`` and each other by their full module names; ``hosts/drivers.py`` imports the
driver from this file.

Options (``hosts.drivers.get_driver("ironic", options)``):

``cloud``            a clouds.yaml entry; falls back to ``OS_CLOUD`` (with
                     ``OS_CLIENT_CONFIG_FILE``: what AWX's OpenStack credential sets).
``ironic_url``       an Ironic endpoint used with auth_type none, instead of a cloud.
``poll``             seconds between steps while Ironic works (default 2; BMO uses 3-10).
``boot_iso``         deploy ordinary images with Ironic's ``ramdisk`` deploy interface
                     booting this ISO, config drive included: for Ironics without an
                     agent ramdisk (the lab).  Not a BMO behaviour.
``deploy_kernel``, ``deploy_ramdisk``, ``deploy_iso``
                     BMO's DEPLOY_KERNEL_URL / DEPLOY_RAMDISK_URL / DEPLOY_ISO_URL.
``max_provisioning_retries``
                     BMO's --max-provisioning-retries: failed deploys of one image after
                     which the host is not provisioned again (default 5; 0: no limit).
"""

from __future__ import annotations

import os
import threading

import ansible_collections.baremetal.capi.plugins.module_utils.hosts.ironic.actions as ironic_actions
import ansible_collections.baremetal.capi.plugins.module_utils.hosts.ironic.detach as ironic_detach
from ansible_collections.baremetal.capi.plugins.module_utils import imports
from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.hosts import base, transient
from ansible_collections.baremetal.capi.plugins.module_utils.hosts.ironic.context import NOW, Ctx
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta, names
from ansible_collections.baremetal.capi.plugins.module_utils.runner import Step

# A step goes on at once after an action that needs no waiting, up to this many times.
_MAX_ACTIONS_PER_STEP = 8
# Ironic's 400 for a provision action the node's current state does not allow (InvalidStateRequested).
_INVALID_STATE = "can not be performed on node"


def _discover(c) -> None:
    """Ironic's version discovery, once, before the connection is used. openstacksdk asks for it lazily and,
    when that request meets a dropped connection, sends the request that needed it without a microversion:
    Ironic then answers as API 1.1 (406 "Request not acceptable" for a node create), an error that is not
    transient. Once discovery has succeeded keystoneauth keeps its answer for the connection's life; a failed
    one is a transient failure of this step (ConnectionError), and the next step opens a new connection.
    The discovered proxy's provision-state changes are then PUTs only (:func:`_put_provision_state_only`)."""
    try:
        data = c.baremetal.get_endpoint_data()
    except Exception as exc:  # noqa: BLE001 - keystoneauth's DiscoveryFailure, a connection error
        _close(c)
        raise ConnectionError(f"Ironic API version discovery failed: {type(exc).__name__}: {exc}") from exc
    if data is None or not data.max_microversion:
        _close(c)
        raise ConnectionError("Ironic API version discovery gave no microversion range")
    _put_provision_state_only(c.baremetal)


def _close(c) -> None:
    try:
        c.close()
    except Exception:  # noqa: BLE001 - closing is best effort
        pass


def _put_provision_state_only(proxy) -> None:
    """Make ``proxy.set_node_provision_state`` send its PUT and nothing else.

    openstacksdk reads the node again after every provision-state change it sends without waiting (a GET of the
    whole node); BMO (gophercloud's ChangeProvisionState) sends the PUT and requeues, and so do the steps here:
    the answer of that GET was never used, the next step reads the node. One Ironic call less per state change
    (manage, provide, deploy, undeploy, adopt). A call that waits keeps openstacksdk's own method.
    """
    node_module = imports.load("openstack.baremetal.v1.node")
    original = proxy.set_node_provision_state

    def set_node_provision_state(node, target, **kwargs):
        if kwargs.get("wait"):
            return original(node, target, **kwargs)
        put = node_module.Node.existing(id=getattr(node, "id", node))
        put.fetch = lambda *args, **kw: put  # the read after the PUT, not made
        put.set_provision_state(proxy, target, **kwargs)
        return node

    proxy.set_node_provision_state = set_node_provision_state


class IronicDriver:
    name = "ironic"
    operates_hosts = True

    def __init__(
        self,
        cloud: str | None = None,
        ironic_url: str | None = None,
        poll: float = 2.0,
        boot_iso: str | None = None,
        deploy_kernel: str | None = None,
        deploy_ramdisk: str | None = None,
        deploy_iso: str | None = None,
        max_provisioning_retries: int = names.BMH_MAX_PROVISIONING_RETRIES,
        **unknown,
    ):
        if unknown:
            raise Invalid(f"unknown ironic driver option(s) {', '.join(sorted(unknown))}", field="host_driver_options")
        self.cloud = cloud or (None if ironic_url else os.environ.get("OS_CLOUD"))
        self.ironic_url = ironic_url
        if not self.cloud and not self.ironic_url:
            raise Invalid(
                "the ironic host driver needs a cloud (or OS_CLOUD) or an ironic_url", field="host_driver_options"
            )
        self.poll = float(poll)
        self.max_provisioning_retries = int(max_provisioning_retries)
        if self.max_provisioning_retries < 0:
            raise Invalid("max_provisioning_retries must be 0 (no limit) or more", field="host_driver_options")
        self.boot_iso = boot_iso
        self.deploy_images = {
            "deploy_kernel": deploy_kernel,
            "deploy_ramdisk": deploy_ramdisk,
            "deploy_iso": deploy_iso,
        }
        self._local = threading.local()
        self._conns: list = []
        self._lock = threading.Lock()
        # keystoneauth's version discovery answers (GET / and GET /v1/), shared by the per-thread connections:
        # one discovery for the driver, not one per thread
        self._discovery_cache: dict = {}
        # the first connection's discovery is made by one thread while the others wait for its answer (they
        # started together and would each have asked: a GET / and a GET /v1/ per worker thread)
        self._discovery_lock = threading.Lock()
        # (node id, MAC) pairs whose port register() has found or made in this driver's life
        self.ports_checked: set = set()
        self.transient = transient.Tracker("Ironic", base=max(self.poll / 2, 0.5))

    # -- connections: openstacksdk connections are not thread-safe; one per thread --
    def conn(self):
        c = getattr(self._local, "conn", None)
        if c is None:
            # openstacksdk imported only once a connection is needed (a task with no host to move does not
            # pay for it), under the process-wide import lock (see imports.py)
            openstack_config = imports.load("openstack.config")
            connection = imports.load("openstack.connection")

            # 0 retries: a 409 is BMO's "busy, requeue", not something to sleep on inside a step
            kwargs = {"baremetal_status_code_retries": 0}
            if self.ironic_url:
                region = openstack_config.get_cloud_region(
                    auth_type="none", baremetal_endpoint_override=self.ironic_url, **kwargs
                )
            else:
                region = openstack_config.get_cloud_region(cloud=self.cloud, **kwargs)
            region._discovery_cache = self._discovery_cache  # as openstacksdk's own Connection.connect_as does
            c = connection.Connection(config=region)
            with self._discovery_lock:
                _discover(c)
            self._local.conn = c
            with self._lock:
                self._conns.append(c)
        return c

    def close(self) -> None:
        with self._lock:
            conns, self._conns = self._conns, []
        for c in conns:
            try:
                c.close()
            except Exception:  # closing is best effort
                pass
        self._local = threading.local()

    def backoff(self, count: int) -> float:
        # BMO: about 2^errorCount minutes; within one module run, seconds scaled from poll
        return min(self.poll * 2 ** max(count, 1), 120.0)

    # -- the contract ------------------------------------------------------------
    def reconcile(self, store, bmh) -> Step:
        host = base.read(store, bmh)
        if host is None:
            return Step(done=True, message="host is gone", data={"host": base.summary(None)})
        if base.paused(host):
            # BMO: no Ironic calls, no status write
            return Step(
                done=False, message="host is paused", requeue_after=self.poll, data={"host": base.summary(host)}
            )
        key = base.key(host)
        ctx = None
        try:
            ctx = Ctx(self, store, host, self.conn())
            after: float | str | None = NOW
            for _action in range(_MAX_ACTIONS_PER_STEP):
                after = ironic_actions.handle(ctx)
                if after != NOW:
                    break
            ctx.save()
        except Exception as exc:  # noqa: BLE001 - only the transient ones are taken; the rest go on below
            text = transient.classify(exc)
            if text is None:
                if ctx is None:
                    raise
                return self._step_error(exc, ctx)
            # BMO requeues a reconcile that met a dropped connection, a timeout or a 5xx
            raise self.transient.failed(key, text) from None
        self.transient.ok(key)
        return self._finish(ctx, after)

    def _step_error(self, exc, ctx) -> Step:
        """What the step does with Ironic's answers that are not transient (busy, moved on, gone)."""
        osexc = imports.load("openstack.exceptions")

        after: float | str | None = NOW
        try:
            raise exc
        except osexc.ConflictException:
            ctx.save()  # keep what was learnt before Ironic said busy
            after = 3.0
            ctx.say("Ironic node is busy (409), retrying")
        except osexc.BadRequestException as exc:
            # Ironic's InvalidStateRequested: the node moved on since it was read (another runner, or Ironic
            # finishing a transition); the next step reads it again and does what its new state needs.
            if _INVALID_STATE not in str(exc.details or exc):
                raise
            ctx.save()
            after = 1.0
            ctx.say(f"Ironic node changed state meanwhile, reading it again: {exc.details or exc}")
        except osexc.NotFoundException as exc:
            # the node went away under us (deleted outside): the next Register finds or recreates it
            ctx.save()
            after = self.poll
            ctx.say(f"Ironic node not found, registering again: {exc.details or exc}")
        return self._finish(ctx, after)

    def _finish(self, ctx, after) -> Step:
        if ctx.host is None:
            return Step(done=True, changed=True, message="host deleted", data={"host": base.summary(None)})
        view = ctx.view()
        # a wait ends on a step that ended in the host's steady state and found nothing to ask of Ironic: a host
        # whose status looks as its spec asks while Ironic still works on it (a node registered again and
        # verifying, adopting) or right after a request (a node just deleted or patched) is not done.  A detached
        # host is as far as it goes while the annotation holds (no Ironic action at all)
        settled = base.reached(view) or ironic_detach.is_detached(view.get("status") or {})
        done = not meta.is_deleting(view) and settled and ctx.settled and not ctx.acted
        msg = "; ".join(ctx.messages) or f"host is {ctx.state or 'new'}"
        wait = self.poll if after in (None, NOW) else float(after)
        return Step(
            done=done,
            changed=ctx.changed,
            message=msg,
            requeue_after=None if done else wait,
            data={"host": base.summary(view)},
        )

    def delete(self, store, bmh) -> Step:
        host, changed = base.start_delete(store, bmh)
        if host is None:
            message = "host deleted" if changed else "host is gone"
            return Step(done=True, changed=changed, message=message, data={"host": base.summary(None)})
        step = self.reconcile(store, host)
        step.changed = step.changed or changed
        if not step.done:
            step.done = base.read(store, host) is None
        return step

    def hardware(self, store, bmh) -> dict | None:
        host = base.read(store, bmh)
        return base.hardware_of(store, host) if host else None
