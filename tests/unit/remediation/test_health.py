"""The MachineHealthCheck rule (cluster-api internal/controllers/machinehealthcheck/machinehealthcheck_targets.go
needsRemediation), pure, with a fixed clock."""

from __future__ import annotations

import datetime

import pytest

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


@pytest.mark.parametrize(
    "m, n, cluster, healthy, reason, skipped",
    [
        (machine(), node("True"), None, True, "", None),
        (machine(), node("Unknown", since=301), None, False, "UnhealthyNode", None),
        (machine(), node("Unknown", since=299), None, True, "", None),
        (machine(), node("False", since=400), None, False, "UnhealthyNode", None),
        (machine(), None, None, False, "NodeDeleted", None),
        (machine(node=None, created=601), None, None, False, "NodeStartupTimeout", None),
        (machine(node=None, created=599), None, None, True, "", None),
        (
            machine(annotations={"cluster.x-k8s.io/remediate-machine": ""}),
            node("True"),
            None,
            False,
            "HasRemediateAnnotation",
            None,
        ),
        (machine(annotations={"cluster.x-k8s.io/skip-remediation": ""}), None, None, True, "", "skip-remediation"),
        (machine(annotations={"cluster.x-k8s.io/paused": ""}), None, None, True, "", "paused"),
        (machine(), None, {"spec": {"paused": True}}, True, "", "paused"),
        (machine(deleting=True), None, None, True, "", "deleting"),
        (
            machine(),
            None,
            {"status": {"conditions": [{"type": "ControlPlaneInitialized", "status": "False"}]}},
            True,
            "",
            "control plane not initialized",
        ),
    ],
)
def test_rule(m, n, cluster, healthy, reason, skipped):
    out = health.evaluate(m, n, cluster, now=NOW, unhealthy_conditions=RULES, node_startup_timeout=600)
    assert (out["healthy"], out["reason"], out["skipped"]) == (healthy, reason, skipped), out


def test_startup_clock_starts_at_the_latest_infrastructure_ready():
    m = machine(node=None, created=3600)
    m["status"]["conditions"] = [{"type": "InfrastructureReady", "status": "True", "lastTransitionTime": ago(100)}]
    out = health.evaluate(m, None, None, now=NOW, unhealthy_conditions=RULES, node_startup_timeout=600)
    assert out["healthy"]
    out = health.evaluate(m, None, None, now=NOW, unhealthy_conditions=RULES, node_startup_timeout=60)
    assert out["reason"] == "NodeStartupTimeout"
    # 0 disables the startup check
    out = health.evaluate(m, None, None, now=NOW, unhealthy_conditions=RULES, node_startup_timeout=0)
    assert out["healthy"]


def test_unhealthy_machine_condition():
    m = machine()
    m["status"]["conditions"] = [{"type": "BootstrapConfigReady", "status": "False", "lastTransitionTime": ago(700)}]
    rules = [{"type": "BootstrapConfigReady", "status": "False", "timeoutSeconds": 600}]
    out = health.evaluate(m, node("True"), None, now=NOW, unhealthy_conditions=RULES, machine_conditions=rules)
    assert (out["healthy"], out["reason"]) == (False, "UnhealthyMachine")
    rules[0]["timeoutSeconds"] = 800
    out = health.evaluate(m, node("True"), None, now=NOW, unhealthy_conditions=RULES, machine_conditions=rules)
    assert out["healthy"]


def test_from_health_check_v1beta2_and_v1beta1():
    mhc = {
        "spec": {
            "clusterName": "c",
            "selector": {"matchLabels": {"pool": "a"}},
            "checks": {
                "nodeStartupTimeoutSeconds": 0,
                "unhealthyNodeConditions": [{"type": "Ready", "status": "Unknown", "timeoutSeconds": 60}],
            },
        }
    }
    kw = health.from_health_check(mhc)
    assert kw["cluster"] == "c" and kw["node_startup_timeout"] == 0
    assert kw["unhealthy_conditions"] == [{"type": "Ready", "status": "Unknown", "timeoutSeconds": 60}]
    old = {
        "spec": {
            "clusterName": "c",
            "nodeStartupTimeout": "10m",
            "unhealthyConditions": [{"type": "Ready", "status": "False", "timeout": "1m30s"}],
        }
    }
    kw = health.from_health_check(old)
    assert kw["node_startup_timeout"] == 600
    assert kw["unhealthy_conditions"] == [{"type": "Ready", "status": "False", "timeoutSeconds": 90}]
    assert health.from_health_check({"spec": {}})["node_startup_timeout"] == 600


@pytest.mark.parametrize(
    "trigger, n_unhealthy, allowed",
    [
        ({}, 5, True),
        ({"unhealthyLessThanOrEqualTo": 2}, 2, True),
        ({"unhealthyLessThanOrEqualTo": 2}, 3, False),
        ({"unhealthyLessThanOrEqualTo": "40%"}, 2, True),
        ({"unhealthyLessThanOrEqualTo": "40%"}, 3, False),
        ({"unhealthyInRange": "[1-2]"}, 2, True),
        ({"unhealthyInRange": "[1-2]"}, 0, False),
        ({"unhealthyInRange": "[1-2]"}, 3, False),
    ],
)
def test_trigger_if(trigger, n_unhealthy, allowed):
    results = [{"healthy": i >= n_unhealthy} for i in range(5)]
    mhc = {
        "metadata": {"name": "h", "namespace": "d"},
        "kind": "MachineHealthCheck",
        "spec": {"remediation": {"triggerIf": trigger}},
    }
    assert health.remediation_allowed(mhc, results)[0] is allowed
