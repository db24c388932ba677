# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The ``external`` host driver: something else moves the host; we only read its status.

That something is a real baremetal-operator watching the kubernetes store, or
this collection's ironic driver run as a separate step (the
``baremetalhost`` module).  ``reconcile`` never writes; ``delete`` only asks
the store to delete and waits for whoever holds the finalizer to let go.
"""

from __future__ import annotations

from ansible_collections.baremetal.capi.plugins.module_utils.hosts import base
from ansible_collections.baremetal.capi.plugins.module_utils.runner import Step


class ExternalDriver:
    name = "external"
    operates_hosts = False

    def __init__(self, poll: float = 2.0, **_ignored):
        self.poll = float(poll)

    def reconcile(self, store, bmh) -> Step:
        host = base.read(store, bmh)
        if host is None:
            return Step(done=True, message="host is gone", data={"host": base.summary(None)})
        info = base.summary(host)
        if base.reached(host):
            return Step(done=True, message=f"host is {info['state']}", data={"host": info})
        msg = f"waiting: host is {info['state'] or 'unregistered'}, wants {info['goal']}"
        if base.failed(host):
            msg += f" ({info['errorType']}: {info['errorMessage']})"
        return Step(done=False, message=msg, requeue_after=self.poll, data={"host": info})

    def delete(self, store, bmh) -> Step:
        host, changed = base.start_delete(store, bmh)
        if host is None:
            message = "host deleted" if changed else "host is gone"
            return Step(done=True, changed=changed, message=message, data={"host": base.summary(None)})
        return Step(
            done=False,
            changed=changed,
            message="waiting for the host's finalizers",
            requeue_after=self.poll,
            data={"host": base.summary(host)},
        )

    def hardware(self, store, bmh) -> dict | None:
        host = base.read(store, bmh)
        return base.hardware_of(store, host) if host else None

    def close(self) -> None:
        pass
