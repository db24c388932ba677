"""The MachineHealthCheck rule (cluster-api internal/controllers/machinehealthcheck/machinehealthcheck_targets.go
needsRemediation), pure, with a fixed clock."""

from __future__ import annotations

import datetime

from ansible_collections.baremetal.capi.plugins.module_utils.remediation import health

NOW = datetime.datetime(2026, 1, 1, 12, 0, 0, tzinfo=datetime.UTC)


def ago(seconds: int) -> str:
    return (NOW - datetime.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def machine(node="n1", created=3600, annotations=None, labels=None, deleting=False):
    md = {
        "name": "m",
        "namespace": "d",
        "creationTimestamp": ago(created),
        "labels": {"cluster.x-k8s.io/cluster-name": "c", **(labels or {})},
        "annotations": annotations or {},
    }
    if deleting:
        md["deletionTimestamp"] = ago(1)
    status = {"nodeRef": {"name": node}} if node else {}
    return {"kind": "Machine", "metadata": md, "spec": {"clusterName": "c"}, "status": status}


def node(ready="True", since=1000):
    cond = {"type": "Ready", "status": ready, "lastTransitionTime": ago(since)}
    return {"metadata": {"name": "n1"}, "status": {"conditions": [cond]}}


RULES = health.default_conditions(300)


def test_check_lists_nodes_of_the_workload_cluster(store, workload):
    ns = "hc"
    n_ok = workload.make_node(ready="True")
    n_bad = workload.make_node(ready="Unknown")
    for name, nd in (("ok", n_ok), ("bad", n_bad), ("gone", None)):
        m = store.create(
            {
                "apiVersion": "cluster.x-k8s.io/v1beta2",
                "kind": "Machine",
                "metadata": {"name": name, "namespace": ns, "labels": {"cluster.x-k8s.io/cluster-name": "c"}},
                "spec": {"clusterName": "c"},
            }
        )
        m["status"] = {"nodeRef": {"name": nd["metadata"]["name"] if nd else "never-existed"}}
        store.update_status(m)
    # the lab API server sets no lastTransitionTime for a test-made condition: held for an unknown time = unhealthy
    out = {r["machine"]: r for r in health.check(store, ns, cluster="c", workload=workload, unhealthy_timeout=0)}
    assert out["ok"]["healthy"] and not out["bad"]["healthy"] and out["gone"]["reason"] == "NodeDeleted"
