# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The ``baremetalhost.metal3.io/detached`` annotation (baremetal-operator
internal/controller/metal3.io/host_state_machine.go
checkDetachedHost / checkInitiateDelete, annotations.go, the controller's detachHost).

While the annotation is set on a host in ``provisioned``, ``externally provisioned``, ``available`` or
``ready`` (any state but ``deleting`` with ``{"force": true}``), its Ironic node is removed the way a deletion
removes it (maintenance, then DELETE: the machine is neither powered off nor cleaned), the host's
``operationalStatus`` becomes ``detached`` and nothing more is asked of Ironic.  In the other states the host
goes on until it reaches one of those.  Removing the annotation sets ``OK`` (or ``error`` while an error is
recorded); the next Register creates a fresh node and a provisioned host is adopted again.

Deleting a detached host skips the power-off and the deprovisioning, unless the annotation says
``{"deleteAction": "delay"}`` or the host is detached without the annotation: then the deletion waits.
"""

from __future__ import annotations

import json

import ansible_collections.baremetal.capi.plugins.module_utils.hosts.ironic.delete as ironic_delete
from ansible_collections.baremetal.capi.plugins.module_utils import imports
from ansible_collections.baremetal.capi.plugins.module_utils.hosts.ironic.context import NOW
from ansible_collections.baremetal.capi.plugins.module_utils.model import names as S

# the states a host may be detached from without force (checkDetachedHost)
DETACHABLE = (
    S.BMH_STATE_PROVISIONED,
    S.BMH_STATE_EXTERNALLY_PROVISIONED,
    S.BMH_STATE_READY,
    S.BMH_STATE_AVAILABLE,
)
DELETE_ACTION_DELAY = "delay"
# BMO polls a detached host every 10 minutes (unmanagedRetryDelay)
DETACHED_POLL = 600.0


def annotation(host: dict) -> tuple[bool, dict | None]:
    """(present, arguments): the arguments are ``{}`` for an empty value and None for a value that is not a JSON
    object (BMO ignores such a value, as its documentation allows any value)."""
    annotations = (host.get("metadata") or {}).get("annotations") or {}
    if S.BMH_DETACHED_ANNOTATION not in annotations:
        return False, None
    raw = annotations[S.BMH_DETACHED_ANNOTATION]
    if not raw:
        return True, {}
    try:
        args = json.loads(raw)
    except ValueError:
        return True, None
    return True, args if isinstance(args, dict) else None


def is_detached(status: dict) -> bool:
    return (status or {}).get("operationalStatus") == S.BMH_OPERATIONAL_DETACHED


def delay_delete(ctx) -> bool:
    """BMO delayDeleteForDetachedHost, asked only of a deleted host that is detached: wait with
    ``deleteAction: delay``, and when the annotation is gone (the host may be attached again)."""
    present, args = annotation(ctx.host)
    if not present:
        return True
    return bool(args) and args.get("deleteAction") == DELETE_ACTION_DELAY


def route_delete(ctx) -> bool:
    """checkInitiateDelete for a detached host: True when the deletion goes on (straight to ``deleting``, no
    power-off nor deprovisioning), False when it is delayed and the host is handled as not deleted."""
    if ctx.state == S.BMH_STATE_DELETING or not is_detached(ctx.status):
        return True
    if delay_delete(ctx):
        ctx.say("deletion of a detached host delayed")
        return False
    ctx.set_state(S.BMH_STATE_DELETING, "detached host deleted: no power off, no deprovisioning")
    return True


def _own_node(ctx):
    """The host's node by its ID or name (not by MAC: a node another host registered is not this one's)."""
    osexc = imports.load("openstack.exceptions")

    bm = ctx.conn.baremetal
    for ident in (ctx.status["provisioning"].get("ID"), ironic_delete.node_name_of(ctx)):
        if not ident:
            continue
        try:
            return bm.get_node(ident)
        except osexc.NotFoundException:
            continue
    return None


def _detach(ctx, force: bool):
    """The controller's detachHost: the node removed (Ironic's Detach is its Delete), then ``detached``."""
    wait = ironic_delete.remove_node(ctx, _own_node(ctx), force=force)
    if wait is not None:
        if ctx.status.get("errorType") == S.BMH_ERROR_DETACH:
            ctx.clear_error()
        return wait
    if ctx.status.get("errorType") == S.BMH_ERROR_DETACH:
        ctx.clear_error()
        ctx.status["errorCount"] = 0
    if not is_detached(ctx.status):
        ctx.status["operationalStatus"] = S.BMH_OPERATIONAL_DETACHED
        ctx.say("detached: the Ironic node is removed, the machine is left as it is")
    ctx.settled = True
    # the node just deleted: one more look (nothing left to ask Ironic), then BMO's slow poll
    return ctx.driver.poll if ctx.acted else DETACHED_POLL


def check(ctx):
    """checkDetachedHost: a wait (or NOW) when it handled the step, None when the host goes on as usual."""
    present, args = annotation(ctx.host)
    if present:
        if ctx.state in DETACHABLE:
            return _detach(ctx, force=False)
        if ctx.state != S.BMH_STATE_DELETING and args and args.get("force") is True:
            return _detach(ctx, force=True)
        # not detachable yet: the current operation goes on until the host reaches a detachable state
    if ctx.status.get("errorType") == S.BMH_ERROR_DETACH:
        ctx.clear_error()
        ctx.status["errorCount"] = 0
        return NOW
    if is_detached(ctx.status):
        error = bool(ctx.status.get("errorType"))
        ctx.status["operationalStatus"] = S.BMH_OPERATIONAL_ERROR if error else S.BMH_OPERATIONAL_OK
        ctx.say("attached again: the detached annotation is gone")
        return NOW
    return None
