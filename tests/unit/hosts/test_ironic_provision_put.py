"""A provision-state change is one PUT: the ironic driver's connections do not read the node again after it
(openstacksdk's set_node_provision_state does; BMO sends the PUT and requeues, and the next step reads)."""

from __future__ import annotations

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.hosts.ironic import driver as ironic_driver

NODE = "36b68e18-c559-4366-9c83-dfc3d6cd5b33"


class _Response:
    status_code = 202
    headers: dict = {}

    def json(self):
        return {}


@pytest.fixture
def calls(monkeypatch):
    from keystoneauth1 import session as ks_session
    from openstack.baremetal.v1 import _proxy
    from openstack.baremetal.v1 import node as node_module

    # a baremetal proxy as a discovered connection holds it, without discovery (no network here); the
    # microversion is the one openstacksdk asks for
    monkeypatch.setattr(node_module.Node, "_assert_microversion_for", lambda self, session, wanted, *a, **k: wanted)
    monkeypatch.setattr(node_module.Node, "_get_microversion", classmethod(lambda cls, session: "1.87"))
    bm = _proxy.Proxy(ks_session.Session(), service_type="baremetal", endpoint_override="http://ironic.invalid/")
    seen: list = []

    def put(url, **kw):
        seen.append(("PUT", url, kw.get("json"), kw.get("microversion")))
        return _Response()

    def get(url, **kw):
        seen.append(("GET", url))
        resp = _Response()
        resp.status_code = 200
        resp.json = lambda: {"uuid": NODE, "provision_state": "manageable"}
        return resp

    monkeypatch.setattr(bm, "put", put)
    monkeypatch.setattr(bm, "get", get)
    return bm, seen


def test_a_provision_state_change_sends_the_put_and_no_read(calls):
    bm, seen = calls
    ironic_driver._put_provision_state_only(bm)
    drive = {"meta_data": {"uuid": NODE}}
    bm.set_node_provision_state(NODE, "active", config_drive=drive)
    bm.set_node_provision_state(NODE, "deleted")
    assert [c[0] for c in seen] == ["PUT", "PUT"], seen
    assert seen[0][1].endswith(f"nodes/{NODE}/states/provision")
    assert seen[0][2] == {"target": "active", "configdrive": drive}
    assert seen[0][3] == "1.56"  # a config drive given as a dict, as openstacksdk asks for it
    assert seen[1][2] == {"target": "deleted"}


def test_openstacksdk_itself_reads_the_node_after_the_put(calls):
    # what the driver's connections no longer do: the control for the test above
    from openstack.baremetal.v1 import node as node_module

    bm, seen = calls
    node_module.Node.existing(id=NODE).set_provision_state(bm, "deleted")
    assert [c[0] for c in seen] == ["PUT", "GET"], seen


def test_a_change_that_waits_keeps_openstacksdk_s_polling(calls):
    bm, seen = calls
    ironic_driver._put_provision_state_only(bm)
    bm.set_node_provision_state(NODE, "manage", wait=True, timeout=5)
    assert [c[0] for c in seen][:2] == ["PUT", "GET"], seen
