"""A small in-memory Ironic for the ironic driver's unit tests: openstacksdk's baremetal proxy calls the driver
makes, each recorded, with Ironic's provision-state rules the driver depends on (what a verb is allowed from,
maintenance needed to delete an active node, 404 for a missing node).

Transitions finish at once (``manage`` goes straight to ``manageable``), unless a test holds a state by setting
the node's fields itself.  Power changes land at once too; ``soft_fails`` makes a soft power-off end as Ironic
ends one the BMC refused (power still on, ``last_error`` set), ``soft_unsupported`` answers it 400.
"""

from __future__ import annotations

import copy
import uuid
from types import SimpleNamespace

from openstack import exceptions as osexc

# verb -> (states it is allowed from, resulting state)
VERBS = {
    "manage": (("enroll", "available", "inspect failed", "clean failed", "adopt failed"), "manageable"),
    "provide": (("manageable",), "available"),
    "inspect": (("manageable",), "manageable"),
    "adopt": (("manageable", "adopt failed"), "active"),
    "active": (("available", "deploy failed"), "active"),
    "deleted": (("active", "deploy failed", "error", "deploy wait", "wait call-back"), "available"),
    "abort": (("inspect wait", "clean wait", "deploy wait", "wait call-back", "rescue wait"), None),
}
ABORTED = {"inspect wait": "inspect failed", "clean wait": "clean failed", "deploy wait": "deploy failed"}


class Node(SimpleNamespace):
    pass


class Response:
    def __init__(self, status_code: int, body: dict | None = None):
        self.status_code = status_code
        self._body = body or {}
        self.text = str(self._body)

    def json(self):
        return self._body


class FakeBaremetal:
    def __init__(self, max_microversion: str = "1.110"):
        self.nodes_by_id: dict[str, Node] = {}
        self.ports_list: list[SimpleNamespace] = []
        self.calls: list[tuple] = []
        self.max_microversion = max_microversion
        self.soft_fails = False
        self.soft_unsupported = False
        # verb -> a state the node stays in instead of finishing (a test moves it on by hand)
        self.hold: dict[str, str] = {}
        # the machines' power, by node name: outlives a deleted node, read by the next node's manage (verify)
        self.machines: dict[str, str] = {}

    # -- helpers for tests -------------------------------------------------------------------------
    def add_node(self, **fields) -> Node:
        node = Node(
            id=fields.pop("id", None) or str(uuid.uuid4()),
            name=None,
            driver="redfish",
            driver_info={},
            instance_info={},
            instance_id=None,
            properties={},
            provision_state="enroll",
            target_provision_state=None,
            power_state="power off",
            target_power_state=None,
            last_error=None,
            is_maintenance=False,
            maintenance_reason=None,
            fault=None,
            deploy_interface="direct",
            is_automated_clean_enabled=True,
        )
        for k, v in fields.items():
            setattr(node, k, v)
        self.nodes_by_id[node.id] = node
        return node

    def writes(self) -> list[tuple]:
        reads = ("get_node", "ports", "get", "get_endpoint_data", "nodes")
        return [c for c in self.calls if c[0] not in reads]

    def _find(self, ident) -> Node:
        ident = getattr(ident, "id", ident)
        for node in self.nodes_by_id.values():
            if ident in (node.id, node.name):
                return node
        raise osexc.NotFoundException(f"node {ident} could not be found")

    def _copy(self, node: Node) -> Node:
        return copy.deepcopy(node)

    # -- reads ---------------------------------------------------------------------------------------
    def get_node(self, ident):
        self.calls.append(("get_node", ident))
        return self._copy(self._find(ident))

    def nodes(self, **_kw):
        return [self._copy(n) for n in self.nodes_by_id.values()]

    def ports(self, address=None, node_id=None, details=False, **_kw):
        self.calls.append(("ports", address or node_id))
        out = self.ports_list
        if address:
            out = [p for p in out if p.address == address.lower()]
        if node_id:
            out = [p for p in out if p.node_id == node_id]
        return list(out)

    def get(self, path, **_kw):
        self.calls.append(("get", path))
        return Response(200, {"history": []})

    def get_endpoint_data(self):
        self.calls.append(("get_endpoint_data",))
        return SimpleNamespace(max_microversion=self.max_microversion)

    # -- writes --------------------------------------------------------------------------------------
    def create_node(self, **attrs):
        self.calls.append(("create_node", attrs.get("name")))
        return self._copy(self.add_node(power_state=None, **attrs))

    def create_port(self, node_uuid, address, is_pxe_enabled=True):
        self.calls.append(("create_port", address))
        self.ports_list.append(SimpleNamespace(node_id=node_uuid, address=address.lower(), pxe=is_pxe_enabled))

    def patch_node(self, node, ops):
        self.calls.append(("patch_node", tuple(op["path"] for op in ops)))
        n = self._find(node)
        for op in ops:
            parts = op["path"].strip("/").split("/")
            attr = {"instance_uuid": "instance_id", "automated_clean": "is_automated_clean_enabled"}.get(
                parts[0], parts[0]
            )
            if len(parts) == 1:
                setattr(n, attr, None if op["op"] == "remove" else op["value"])
            else:
                target = getattr(n, attr)
                if op["op"] == "remove":
                    target.pop(parts[1], None)
                else:
                    target[parts[1]] = op["value"]
        return self._copy(n)

    def validate_node(self, node, required=()):
        self.calls.append(("validate_node",))
        ok = SimpleNamespace(result=True, reason=None)
        return {"boot": ok, "deploy": ok, "power": ok, "management": ok}

    def set_node_provision_state(self, node, target, **kw):
        self.calls.append(("provision", target))
        n = self._find(node)
        if n.is_maintenance:
            raise osexc.ConflictException("node is in maintenance")
        allowed, result = VERBS[target]
        if n.provision_state not in allowed:
            raise osexc.BadRequestException(
                f'The requested action "{target}" can not be performed on node {n.id} while it is in state '
                f'"{n.provision_state}".'
            )
        if target == "abort":
            result = ABORTED.get(n.provision_state, "manageable")
        if target == "manage" and n.provision_state == "enroll":  # verify reads the BMC's power state
            n.power_state = self.machines.get(n.name, "power off")
        n.provision_state = self.hold.get(target, result)
        n.last_error = None
        if target == "active":
            n.power_state = "power on"
        if target == "deleted":
            n.power_state = "power off"
        return self._copy(n)

    def set_node_power_state(self, node, target):
        self.calls.append(("power", target))
        n = self._find(node)
        n.last_error = None
        if target in ("power on", "rebooting", "soft rebooting"):
            n.power_state = "power on"
        elif target in ("power off", "soft power off"):
            n.power_state = "power off"

    def put(self, path, json=None, microversion=None, raise_exc=True):
        self.calls.append(("put", path, (json or {}).get("target"), (json or {}).get("timeout")))
        if path.endswith("/states/power"):
            n = self._find(path.split("/")[2])
            if self.soft_unsupported and json["target"] == "soft power off":
                return Response(400, {"error_message": "soft power off is not supported"})
            if self.soft_fails and json["target"] == "soft power off":
                n.last_error = "Redfish exception occurred. Error: GracefulShutdown refused"
                return Response(202)
            n.last_error = None
            n.power_state = "power off" if "off" in json["target"] else "power on"
            return Response(202)
        return Response(404)

    def set_node_maintenance(self, node, reason=None):
        self.calls.append(("maintenance", reason))
        n = self._find(node)
        n.is_maintenance, n.maintenance_reason = True, reason
        return self._copy(n)

    def unset_node_maintenance(self, node):
        self.calls.append(("unset_maintenance",))
        n = self._find(node)
        n.is_maintenance, n.maintenance_reason = False, None
        return self._copy(n)

    def delete_node(self, node, ignore_missing=True):
        self.calls.append(("delete_node", getattr(node, "name", node)))
        try:
            n = self._find(node)
        except osexc.NotFoundException:
            if ignore_missing:
                return None
            raise
        if n.provision_state not in ("enroll", "manageable", "available") and not n.is_maintenance:
            raise osexc.ConflictException(f"Can not delete node {n.id} in state {n.provision_state}")
        self.machines[n.name] = n.power_state
        del self.nodes_by_id[n.id]
        self.ports_list = [p for p in self.ports_list if p.node_id != n.id]
        return None


class FakeConn:
    def __init__(self, bm: FakeBaremetal | None = None):
        self.baremetal = bm or FakeBaremetal()

    def close(self):
        pass


def driver(bm: FakeBaremetal | None = None, **options):
    """An IronicDriver whose connection is the fake one."""
    from ansible_collections.baremetal.capi.plugins.module_utils.hosts.ironic.driver import IronicDriver

    drv = IronicDriver(ironic_url="http://ironic.invalid", poll=0.01, **options)
    conn = FakeConn(bm)
    drv.conn = lambda: conn
    return drv, conn.baremetal
