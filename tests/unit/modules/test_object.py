"""baremetal.capi.object against a real store (sqlite, and the lab's kube-apiserver)."""

from __future__ import annotations

import base64
import threading
import time

from ansible_collections.baremetal.capi.plugins.module_utils.module import MASK
from ansible_collections.baremetal.capi.plugins.module_utils.store.base import open_store
from ansible_collections.baremetal.capi.plugins.modules import object as obj_module

# No namespace: the module puts it in store.namespace, the test's own (fixture ns).
CLUSTER = dict(
    kind="Cluster",
    name="prod",
    labels={"team": "a", "tier": "gold"},
    spec={"paused": False, "clusterNetwork": {"pods": {"cidrBlocks": ["10.0.0.0/16"]}}},
)
PROD = dict(kind="Cluster", name="prod")


def test_create_then_rerun_is_idempotent(run, store, ns):
    first = run(obj_module, CLUSTER)
    assert first["changed"] is True and first["method"] == "create"
    stored = store.get("Cluster", "prod", ns)
    assert stored["spec"] == CLUSTER["spec"]
    assert stored["metadata"]["labels"] == {"team": "a", "tier": "gold"}
    assert first["object"]["metadata"]["uid"] == stored["metadata"]["uid"]

    again = run(obj_module, CLUSTER)
    assert again["changed"] is False and again["method"] is None
    rv = store.get("Cluster", "prod", ns)["metadata"]["resourceVersion"]
    assert rv == stored["metadata"]["resourceVersion"]


def test_patch_merges_and_null_removes(run, store, ns):
    run(obj_module, CLUSTER)
    patch = dict(
        PROD,
        labels={"tier": None, "env": "prod"},
        spec={"clusterNetwork": {"services": {"cidrBlocks": ["10.1.0.0/16"]}}},
    )
    result = run(obj_module, patch)
    assert result["changed"] is True and result["method"] == "update"
    stored = store.get("Cluster", "prod", ns)
    assert stored["metadata"]["labels"] == {"team": "a", "env": "prod"}
    assert stored["spec"] == {
        "paused": False,
        "clusterNetwork": {"pods": {"cidrBlocks": ["10.0.0.0/16"]}, "services": {"cidrBlocks": ["10.1.0.0/16"]}},
    }
    assert stored["metadata"]["generation"] == 2
    assert run(obj_module, patch)["changed"] is False


def test_force_replaces(run, store, ns):
    run(obj_module, CLUSTER)
    result = run(obj_module, dict(PROD, spec={"paused": True}, force=True))
    assert result["changed"] is True
    stored = store.get("Cluster", "prod", ns)
    assert stored["spec"] == {"paused": True}
    assert not stored["metadata"].get("labels")


def test_definition_read_back_writes_nothing(run):
    created = run(obj_module, CLUSTER)["object"]
    # What object_info returns can be fed back unchanged: server-owned metadata is ignored.
    result = run(obj_module, dict(definition=created))
    assert result["changed"] is False


def test_check_mode_writes_nothing(run, store, ns):
    result = run(obj_module, CLUSTER, check=True)
    assert result["changed"] is True and result["method"] == "create"
    assert result["object"]["spec"] == CLUSTER["spec"]
    assert store.list("Cluster", ns) == []

    run(obj_module, CLUSTER)
    rv = store.get("Cluster", "prod", ns)["metadata"]["resourceVersion"]
    result = run(obj_module, dict(PROD, spec={"paused": True}), check=True)
    assert result["changed"] is True and result["object"]["spec"]["paused"] is True
    stored = store.get("Cluster", "prod", ns)
    assert stored["spec"]["paused"] is False and stored["metadata"]["resourceVersion"] == rv

    unchanged = run(obj_module, CLUSTER, check=True)
    assert unchanged["changed"] is False


def test_diff_only_when_asked(run):
    created = run(obj_module, CLUSTER, diff=True)
    assert created["diff"]["before"] == {} and created["diff"]["after"]["spec"] == CLUSTER["spec"]
    patched = run(obj_module, dict(PROD, spec={"paused": True}), diff=True)
    assert patched["diff"]["before"]["spec"]["paused"] is False
    assert patched["diff"]["after"]["spec"]["paused"] is True
    plain = run(obj_module, dict(PROD, spec={"paused": False}))
    assert "diff" not in plain


def test_secret_values_never_printed(run, store, ns):
    secret = dict(
        definition=dict(
            apiVersion="v1",
            kind="Secret",
            metadata=dict(name="bmc", namespace=ns),
            type="Opaque",
            stringData=dict(username="admin-user", password="s3cr3t-passw0rd"),
        )
    )
    result = run(obj_module, secret, diff=True)
    assert result["changed"] is True
    stored = store.get("Secret", "bmc", ns)
    assert base64.b64decode(stored["data"]["password"]).decode() == "s3cr3t-passw0rd"
    assert result["object"]["data"] == {"username": MASK, "password": MASK}
    assert result["diff"]["after"]["data"] == {"username": MASK, "password": MASK}
    for leaked in ("s3cr3t-passw0rd", stored["data"]["password"], stored["data"]["username"]):
        assert leaked not in result["_stdout"]

    again = run(obj_module, secret, diff=True)
    assert again["changed"] is False
    assert "s3cr3t-passw0rd" not in again["_stdout"] and stored["data"]["password"] not in again["_stdout"]

    rotated = dict(definition=dict(secret["definition"], stringData=dict(password="n3w-passw0rd")))
    result = run(obj_module, rotated)
    assert result["changed"] is True
    data = store.get("Secret", "bmc", ns)["data"]
    assert base64.b64decode(data["password"]).decode() == "n3w-passw0rd"
    assert base64.b64decode(data["username"]).decode() == "admin-user"
    assert "n3w-passw0rd" not in result["_stdout"]


def test_secret_by_kind_option_never_printed(run, store, ns):
    args = dict(kind="Secret", name="kubeconfig", definition=dict(stringData=dict(value="apiVersion: v1 token=xyz123")))
    result = run(obj_module, args, diff=True)
    assert result["changed"] is True and "token=xyz123" not in result["_stdout"]
    assert result["object"]["data"] == {"value": MASK}
    data = store.get("Secret", "kubeconfig", ns)["data"]
    assert base64.b64decode(data["value"]) == b"apiVersion: v1 token=xyz123"


def test_status_goes_through_the_status_subresource(run, store, ns):
    args = dict(kind="Metal3Cluster", name="prod", spec={"controlPlaneEndpoint": {"host": "10.0.0.1", "port": 6443}})
    run(obj_module, args)
    result = run(obj_module, dict(args, status={"ready": True}))
    assert result["changed"] is True
    stored = store.get("Metal3Cluster", "prod", ns)
    assert stored["status"] == {"ready": True}
    assert stored["metadata"]["generation"] == 1
    assert run(obj_module, dict(args, status={"ready": True}))["changed"] is False
    # Created with a status: the store drops it on create, the module writes it after.
    created = run(obj_module, dict(args, name="other", status={"ready": False}))
    assert created["object"]["status"] == {"ready": False}
    assert store.get("Metal3Cluster", "other", ns)["status"] == {"ready": False}


def test_absent_deletes_and_is_idempotent(run, store, ns):
    run(obj_module, CLUSTER)
    check = run(obj_module, dict(PROD, state="absent"), check=True)
    assert check["changed"] is True
    assert store.get("Cluster", "prod", ns)
    result = run(obj_module, dict(PROD, state="absent"), diff=True)
    assert result["changed"] is True and result["object"] is None and result["method"] == "delete"
    assert result["diff"]["before"]["metadata"]["name"] == "prod" and result["diff"]["after"] == {}
    assert store.list("Cluster", ns) == []
    again = run(obj_module, dict(PROD, state="absent"))
    assert again["changed"] is False


def test_absent_with_a_label_selector_deletes_every_match(run, store, ns):
    for name, team in (("a1", "a"), ("a2", "a"), ("b1", "b")):
        run(obj_module, dict(kind="Cluster", name=name, labels={"team": team}))
    gone = dict(kind="Cluster", label_selector="team=a", state="absent")
    check = run(obj_module, gone, check=True)
    assert check["changed"] is True and sorted(check["deleted"]) == ["a1", "a2"]
    assert len(store.list("Cluster", ns)) == 3
    result = run(obj_module, gone)
    assert result["changed"] is True and sorted(result["deleted"]) == ["a1", "a2"] and result["method"] == "delete"
    assert [c["metadata"]["name"] for c in store.list("Cluster", ns)] == ["b1"]
    again = run(obj_module, dict(gone, label_selector=["team=a"]))
    assert again["changed"] is False and again["deleted"] == []
    matched = run(obj_module, dict(gone, label_selector={"matchLabels": {"team": "b"}}))
    assert matched["deleted"] == ["b1"] and store.list("Cluster", ns) == []


def test_secrets_deleted_by_selector_never_show_their_values(run, store, ns):
    value = "s3cr3t-value-by-selector"
    run(obj_module, dict(kind="Secret", name="creds", labels={"team": "a"}, definition={"stringData": {"k": value}}))
    result = run(obj_module, dict(kind="Secret", label_selector="team=a", state="absent"), diff=True)
    assert result["deleted"] == ["creds"] and result["diff"]["before"][0]["metadata"]["name"] == "creds"
    assert value not in repr(result) and base64.b64encode(value.encode()).decode() not in repr(result)
    assert result["diff"]["before"][0]["data"] == {"k": MASK}


def test_a_label_selector_is_refused_where_it_would_be_ambiguous(run, store, ns):
    run(obj_module, dict(kind="Cluster", name="keep", labels={"team": "a"}))
    with_name = run(obj_module, dict(kind="Cluster", name="keep", label_selector="team=a", state="absent"))
    assert with_name["failed"] and "name" in with_name["msg"] and "label_selector" in with_name["msg"]
    present = run(obj_module, dict(kind="Cluster", label_selector="team=a"))
    assert present["failed"] and "state=absent" in present["msg"]
    no_kind = run(obj_module, dict(label_selector="team=a", state="absent"))
    assert no_kind["failed"] and "kind" in no_kind["msg"]
    bad = run(obj_module, dict(kind="Cluster", label_selector="team in (a", state="absent"))
    assert bad["failed"]
    assert [c["metadata"]["name"] for c in store.list("Cluster", ns)] == ["keep"]


def test_absent_with_finalizer_times_out_naming_it(run, store, ns):
    run(obj_module, dict(CLUSTER, definition={"metadata": {"finalizers": ["cluster.cluster.x-k8s.io"]}}))
    result = run(obj_module, dict(PROD, state="absent", wait=True, wait_timeout=1, wait_sleep=1))
    assert result["failed"] is True
    assert "cluster.cluster.x-k8s.io" in result["msg"] and f"Cluster {ns}/prod" in result["msg"]
    assert store.get("Cluster", "prod", ns)["metadata"]["deletionTimestamp"]
    # Already being deleted: nothing more to do.
    assert run(obj_module, dict(PROD, state="absent"))["changed"] is False
    # Let it go, so the namespace can be removed.
    run(obj_module, dict(PROD, definition={"metadata": {"finalizers": None}}))


def test_absent_waits_until_finalizer_removed(run, store, store_spec, ns):
    run(obj_module, dict(CLUSTER, definition={"metadata": {"finalizers": ["cluster.cluster.x-k8s.io"]}}))

    def controller():
        # Another client plays the controller that removes its finalizer once it sees the deletion.
        other = open_store(store_spec)
        try:
            for _poll in range(1200):
                obj = other.get("Cluster", "prod", ns)
                if obj["metadata"].get("deletionTimestamp"):
                    obj["metadata"]["finalizers"] = []
                    other.update(obj)
                    return
                time.sleep(0.05)
        finally:
            other.close()

    thread = threading.Thread(target=controller)
    thread.start()
    result = run(obj_module, dict(PROD, state="absent", wait=True, wait_timeout=60, wait_sleep=1))
    thread.join()
    assert result["changed"] is True and result["object"] is None
    assert store.list("Cluster", ns) == []


def test_stale_resource_version_fails(run, store, ns):
    created = run(obj_module, CLUSTER)["object"]
    run(obj_module, dict(PROD, spec={"paused": True}))
    result = run(obj_module, dict(definition=dict(created, spec={"paused": False})))
    assert result["failed"] is True and result["error"] == "Conflict"
    assert store.get("Cluster", "prod", ns)["spec"]["paused"] is True


def test_bad_input_fails_before_writing(run, store, ns):
    unknown = run(obj_module, dict(kind="Klaster", name="x"))
    assert unknown["failed"] and "Klaster" in unknown["msg"] and unknown["error"] == "UnknownKind"
    no_name = run(obj_module, dict(kind="Cluster"))
    assert no_name["failed"] and "name is required" in no_name["msg"]
    bad_label = run(obj_module, dict(kind="Cluster", name="x", labels={"bad key!": "v"}))
    assert bad_label["failed"] and "metadata.labels" in bad_label["msg"] and f"Cluster {ns}/x" in bad_label["msg"]
    ambiguous = run(obj_module, dict(kind="IPAddress", name="x"))
    assert ambiguous["failed"] and "ambiguous" in ambiguous["msg"]
    cluster_scoped = run(obj_module, dict(kind="Node", name="n", namespace=ns))
    assert cluster_scoped["failed"] and "cluster-scoped" in cluster_scoped["msg"]
    assert store.list("Cluster", ns) == []


def test_qualified_kinds_and_store_namespace(run, store, ns, ns2):
    m3 = {"address": "10.0.0.9", "pool": {"name": "p"}, "claim": {"name": "c"}}  # what the IPAddress webhook needs
    a = run(obj_module, dict(kind="IPAddress", api_version="ipam.metal3.io/v1alpha1", name="a", spec=m3))
    b = run(obj_module, dict(kind="IPAddress.ipam.cluster.x-k8s.io", name="a", spec={"address": "10.0.0.1"}))
    assert a["object"]["apiVersion"] == "ipam.metal3.io/v1alpha1" and a["object"]["metadata"]["namespace"] == ns
    assert b["object"]["apiVersion"] == "ipam.cluster.x-k8s.io/v1beta2"
    assert store.get("IPAddress.ipam.metal3.io", "a", ns)["spec"] == m3
    c = run(obj_module, dict(kind="ConfigMap", name="c", namespace=ns2))
    assert c["object"]["metadata"]["namespace"] == ns2
    assert store.get("ConfigMap", "c", ns2)


def test_an_empty_selector_deletes_nothing_without_all(run, store, ns):
    """kubectl delete asks for --all: an empty selector in any form, or none, deletes nothing without all=true."""
    for name in ("c1", "c2"):
        run(obj_module, dict(kind="Cluster", name=name, labels={"team": "a"}))
    for empty in ("", "  ", [], {}, {"matchLabels": {}}, {"matchExpressions": []}):
        refused = run(obj_module, dict(kind="Cluster", label_selector=empty, state="absent"))
        assert refused["failed"] and "label_selector" in refused["msg"] and "all=true" in refused["msg"], empty
    no_name = run(obj_module, dict(kind="Cluster", state="absent"))
    assert no_name["failed"]
    both = run(obj_module, dict(kind="Cluster", label_selector="team=a", state="absent", all=True))
    assert both["failed"] and "all" in both["msg"]
    assert len(store.list("Cluster", ns)) == 2
    check = run(obj_module, dict(kind="Cluster", state="absent", all=True), check=True)
    assert sorted(check["deleted"]) == ["c1", "c2"] and len(store.list("Cluster", ns)) == 2
    gone = run(obj_module, dict(kind="Cluster", label_selector="", state="absent", all=True))
    assert sorted(gone["deleted"]) == ["c1", "c2"] and store.list("Cluster", ns) == []


def test_an_unknown_spec_field_of_a_core_kind_is_refused_naming_it(run, store, ns):
    """spec.bootstrp on a Machine, a misspelt field of each Cluster API core kind, or in a MachineDeployment's
    machine template: refused naming the field, nothing written; v1beta1 objects keep their own field names."""
    bad = [
        dict(kind="Machine", name="m", spec={"clusterName": "c", "bootstrp": {"dataSecretName": "x"}}),
        dict(kind="Cluster", name="c", spec={"controlPlaneRefs": {}}),
        dict(kind="MachineDeployment", name="md", spec={"clusterName": "c", "replica": 3}),
        dict(kind="MachineSet", name="ms", spec={"clusterName": "c", "strategy": {}}),
        dict(kind="MachineHealthCheck", name="mhc", spec={"clusterName": "c", "maxUnhealthy": "40%"}),
        dict(kind="KubeadmControlPlane", name="kcp", spec={"replicas": 1, "versoin": "v1.34.1"}),
        dict(kind="MachineDeployment", name="md", spec={"template": {"spec": {"clusterName": "c", "verison": "x"}}}),
    ]
    wrong = ("bootstrp", "controlPlaneRefs", "replica", "strategy", "maxUnhealthy", "versoin", "verison")
    for params, field in zip(bad, wrong, strict=True):
        result = run(obj_module, params)
        assert result["failed"] and field in result["msg"] and params["kind"] in result["msg"], result["msg"]
        assert store.list(params["kind"], ns) == []
    ok = run(
        obj_module, dict(kind="Machine", name="m", spec={"clusterName": "c", "bootstrap": {"dataSecretName": "x"}})
    )
    assert ok["changed"]
