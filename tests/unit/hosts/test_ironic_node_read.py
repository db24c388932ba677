"""One step of the ironic driver reads the node once while nothing is asked of Ironic; a write makes it read again."""

from __future__ import annotations

from types import SimpleNamespace

from ansible_collections.baremetal.capi.plugins.module_utils.hosts.ironic import register
from ansible_collections.baremetal.capi.plugins.module_utils.hosts.ironic.context import Ctx


class _Baremetal:
    def __init__(self):
        self.calls: list[str] = []

    def get_node(self, ident):
        self.calls.append(f"get_node {ident}")
        return SimpleNamespace(id=ident, provision_state="active")

    def set_node_provision_state(self, node, target):
        self.calls.append(f"provision {target}")


def _ctx():
    bm = _Baremetal()
    host = {"metadata": {"name": "h0", "namespace": "ns"}, "spec": {}, "status": {"provisioning": {"ID": "n-1"}}}
    return Ctx(SimpleNamespace(poll=1.0), store=None, host=host, conn=SimpleNamespace(baremetal=bm)), bm


def test_reads_once_until_a_write():
    ctx, bm = _ctx()
    first = register.find_node(ctx)
    assert register.find_node(ctx) is first
    assert bm.calls == ["get_node n-1"]
    ctx.conn.baremetal.set_node_provision_state(first, "deleted")
    register.find_node(ctx)
    assert bm.calls == ["get_node n-1", "provision deleted", "get_node n-1"]


def test_a_new_step_reads_again():
    ctx, bm = _ctx()
    register.find_node(ctx)
    other = Ctx(ctx.driver, None, ctx.host, SimpleNamespace(baremetal=bm))
    register.find_node(other)
    assert bm.calls == ["get_node n-1", "get_node n-1"]
