"""Sharing a management cluster: the collection's marker, and the guard against acting on objects a running
upstream controller manages (model/ownership.py, store/common.py guard), for every store.

An upstream controller's write is made as the API server records one: the object without the collection's
marker and with the controller's field manager in metadata.managedFields. On the kubernetes store
(tests/integration/stores) it is a real write with fieldManager "manager", as the CAPI and CAPM3 binaries
write; on the sqlite store the test rewrites the stored row, as another writer of the file would.
"""

from __future__ import annotations

import copy
import json
import sqlite3

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.errors import Forbidden
from ansible_collections.baremetal.capi.plugins.module_utils.model import kinds, meta, names, ownership
from ansible_collections.baremetal.capi.plugins.module_utils.store.base import open_store

MARK = ownership.MANAGED_BY_ANNOTATION


def upstream_writes(store, kind: str, name: str, ns: str, change=None, manager: str = "manager") -> None:
    """``kind ns/name`` written by another controller (field manager ``manager``), without the marker.

    The write sets a label of its own: the API server lists a manager in managedFields only while it owns a
    field (a write that only removes fields leaves no entry), as a controller owns the finalizer it added.
    """
    k = kinds.resolve(kind)
    change_first = change

    def change(obj):
        obj["metadata"].setdefault("labels", {})["test.upstream/written-by"] = manager
        if change_first:
            change_first(obj)

    if store.kind_name == "sqlite":
        con = sqlite3.connect(store.path)
        with con:
            (body,) = con.execute(
                "SELECT body FROM objects WHERE kind = ? AND namespace = ? AND name = ?", (k.key, ns, name)
            ).fetchone()
            obj = json.loads(body)
            obj["metadata"].get("annotations", {}).pop(MARK, None)
            if change:
                change(obj)
            obj["metadata"]["managedFields"] = [{"manager": manager, "operation": "Update"}]
            con.execute(
                "UPDATE objects SET body = ? WHERE kind = ? AND namespace = ? AND name = ?",
                (json.dumps(obj), k.key, ns, name),
            )
        con.close()
        return
    from ansible_collections.baremetal.capi.plugins.module_utils.store.kubernetes import path

    url = path(k, name, ns)
    obj = json.loads(store.dyn.request("GET", url, serialize=False).data)
    obj["metadata"].get("annotations", {}).pop(MARK, None)
    obj["metadata"].pop("managedFields", None)
    if change:
        change(obj)
    store.dyn.request("PUT", url, body=obj, serialize=False, field_manager=manager)


def test_every_object_the_collection_creates_carries_the_marker_and_keeps_it(store, ns):
    for obj in (
        meta.new("Cluster", "c1", ns, spec={"paused": False}),
        meta.new("ConfigMap", "cm", ns, annotations={"team": "a"}),
        meta.new("Secret", "s", ns),
    ):
        created = store.create(obj)
        assert created["metadata"]["annotations"][MARK] == "baremetal.capi"
    assert meta.annotations(store.get("ConfigMap", "cm", ns)) == {"team": "a", MARK: "baremetal.capi"}
    assert ownership.marked(store.get("Namespace", ns, None))  # made on the way, by the collection too

    # An update that replaces the annotations keeps the marker: it is how the guard knows the object is ours.
    cm = store.get("ConfigMap", "cm", ns)
    cm["metadata"]["annotations"] = {"team": "b"}
    assert meta.annotations(store.update(cm)) == {"team": "b", MARK: "baremetal.capi"}


def test_an_object_a_running_upstream_controller_manages_is_refused_by_name(store, spec, ns):
    store.create(meta.new("Machine", "m1", ns, spec={"clusterName": "c1"}, labels={names.CLUSTER_NAME_LABEL: "c1"}))
    upstream_writes(store, "Machine", "m1", ns, lambda o: o["metadata"].update(finalizers=[names.MACHINE_FINALIZER]))
    before = store.get("Machine", "m1", ns)
    assert not ownership.marked(before)

    changed = copy.deepcopy(before)
    changed["spec"]["version"] = "v1.31.0"
    with pytest.raises(Forbidden) as exc:
        store.update(changed)
    msg = str(exc.value)
    assert msg.startswith(f"Machine {ns}/m1: refusing to update it: ")
    assert 'a Cluster API or CAPM3 controller (field manager "manager")' in msg
    assert f"finalizers ['{names.MACHINE_FINALIZER}']" in msg
    assert "clusterctl move" in msg and "spec.paused: true" in msg and "adopt: true" in msg
    with pytest.raises(Forbidden, match="refusing to update it"):
        store.update_status(dict(before, status={"phase": "Running"}))
    with pytest.raises(Forbidden, match=f"Machine {ns}/m1: refusing to delete it"):
        store.delete("Machine", "m1", ns)

    # Nothing was written.
    after = store.get("Machine", "m1", ns)
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert "deletionTimestamp" not in after["metadata"] and "version" not in after["spec"]

    # Given back: the controller's finalizer gone, the test's namespace can go.
    adopting = open_store(dict(spec, adopt=True))
    try:
        mine = adopting.get("Machine", "m1", ns)
        mine["metadata"]["finalizers"] = []
        adopting.update(mine)
    finally:
        adopting.close()


def test_paused_objects_are_acted_on_without_being_marked(store, ns):
    store.create(meta.new("Cluster", "c1", ns, spec={"paused": False}))
    store.create(meta.new("Machine", "m1", ns, spec={"clusterName": "c1"}, labels={names.CLUSTER_NAME_LABEL: "c1"}))
    store.create(meta.new("BareMetalHost", "h1", ns, spec={"online": False}))
    upstream_writes(store, "Cluster", "c1", ns, lambda o: o["spec"].update(paused=True))
    upstream_writes(store, "Machine", "m1", ns)
    upstream_writes(store, "BareMetalHost", "h1", ns, manager="baremetal-operator")

    # clusterctl move's pause: Cluster spec.paused pauses the Cluster and every object of it.
    cluster = store.get("Cluster", "c1", ns)
    cluster["metadata"]["labels"] = {"moved": "yes"}
    assert not ownership.marked(store.update(cluster))
    machine = store.get("Machine", "m1", ns)
    machine["metadata"]["labels"][names.CONTROL_PLANE_LABEL] = ""
    assert not ownership.marked(store.update(machine))

    # A host: BMO's paused annotation (or CAPI's); without it, refused.
    host = store.get("BareMetalHost", "h1", ns)
    host["spec"]["online"] = True
    with pytest.raises(Forbidden, match='the baremetal-operator \\(field manager "baremetal-operator"\\)'):
        store.update(host)
    host["metadata"].setdefault("annotations", {})[names.BMH_PAUSED_ANNOTATION] = ""
    with pytest.raises(Forbidden):  # the stored object is what counts, not what the write asks for
        store.update(host)
    upstream_writes(store, "BareMetalHost", "h1", ns, lambda o: _annotate(o, names.PAUSED_ANNOTATION))
    host = store.get("BareMetalHost", "h1", ns)
    host["spec"]["online"] = True
    assert store.update(host)["spec"]["online"] is True
    assert store.delete("BareMetalHost", "h1", ns) is None


def test_adopt_takes_an_upstream_object_over_and_marks_it(store, spec, ns):
    store.create(meta.new("Metal3Machine", "m3m", ns, spec={"image": {"url": "a"}}))
    upstream_writes(store, "Metal3Machine", "m3m", ns, manager="capi-machineset")
    with pytest.raises(Forbidden, match="Cluster API's MachineSet controller"):
        store.delete("Metal3Machine", "m3m", ns)
    adopting = open_store(dict(spec, adopt=True))
    try:
        obj = adopting.get("Metal3Machine", "m3m", ns)
        obj["spec"]["image"]["url"] = "b"
        assert ownership.marked(adopting.update(obj))
    finally:
        adopting.close()
    # Marked: the store without adopt acts on it again.
    obj = store.get("Metal3Machine", "m3m", ns)
    obj["spec"]["image"]["url"] = "c"
    assert store.update(obj)["spec"]["image"]["url"] == "c"


def test_objects_nobody_upstream_wrote_are_acted_on_and_marked(store, ns):
    # A host applied by hand (kubectl's field manager): no upstream controller; the first write marks it.
    store.create(meta.new("BareMetalHost", "h1", ns, spec={"online": False}))
    upstream_writes(store, "BareMetalHost", "h1", ns, manager="kubectl-client-side-apply")
    host = store.get("BareMetalHost", "h1", ns)
    assert not ownership.marked(host)
    host["spec"]["online"] = True
    assert ownership.marked(store.update(host))


def _annotate(obj: dict, key: str) -> None:
    obj["metadata"].setdefault("annotations", {})[key] = ""


def test_refusal_names_every_upstream_manager_and_ignores_others():
    obj = meta.new("KubeadmControlPlane", "kcp", "ns1")
    obj["metadata"]["managedFields"] = [
        {"manager": "capi-kubeadmcontrolplane", "operation": "Apply"},
        {"manager": "kube-controller-manager", "operation": "Update"},
        {"manager": "manager", "operation": "Update", "subresource": "status"},
    ]
    assert ownership.upstream(obj) == ["capi-kubeadmcontrolplane", "manager"]
    msg = ownership.refusal(obj, ownership.upstream(obj), "update")
    assert "Cluster API's KubeadmControlPlane controller" in msg and "kube-controller-manager" not in msg
    assert ownership.upstream(ownership.mark(obj)) == []
