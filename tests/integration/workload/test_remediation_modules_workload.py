"""The modules in-process (as Ansible runs them) on a sqlite store and the lab wkube-apiserver."""

from __future__ import annotations

from world import make_world

from ansible_collections.baremetal.capi.plugins.modules import (
    machine_health_info,
    metal3_labelsync,
    metal3_remediation,
)


def _args(ns, kubeconfig, **kw):
    return {"namespace": ns, "workload_kubeconfig": kubeconfig, **kw}


def test_health_info_then_remediation_steps_with_an_external_host_driver(run, store, wkube, workload_kubeconfig):
    ns, node, _rem = make_world(store, wkube)
    store.delete("Metal3Remediation", "m-0", ns)  # the module creates it
    tmpl = {
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2",
        "kind": "Metal3RemediationTemplate",
        "metadata": {"name": "t", "namespace": ns},
        "spec": {"template": {"spec": {"strategy": {"type": "Reboot", "retryLimit": 2, "timeoutSeconds": 120}}}},
    }
    store.create(tmpl)
    info = run(machine_health_info, _args(ns, workload_kubeconfig, cluster="c1", unhealthy_timeout=0))
    assert not info["changed"] and [m["machine"] for m in info["unhealthy"]] == ["m-0"]
    assert info["unhealthy"][0]["reason"] == "UnhealthyNode"

    args = _args(ns, workload_kubeconfig, machines="m-0", template="t", host_driver="external", wait=False)
    preview = run(metal3_remediation, args, check=True)
    assert preview["changed"] and "would create" in preview["remediations"][0]["message"]
    assert store.list("Metal3Remediation", ns) == []

    first = run(metal3_remediation, args)
    assert first["changed"]
    rem = store.get("Metal3Remediation", "m-0", ns)
    assert rem["spec"]["strategy"] == {"type": "Reboot", "retryLimit": 2, "timeoutSeconds": 120}
    assert rem["metadata"]["ownerReferences"][0]["kind"] == "Machine"
    for _ in range(3):  # Running, finalizer, power-off request
        run(metal3_remediation, args)
    host = store.get("BareMetalHost", "host-0", ns)
    key = f"reboot.metal3.io/metal3-remediation-{rem['metadata']['uid']}"
    assert host["metadata"]["annotations"][key] == '{"mode":"hard","force":false}'
    # with the external driver nobody powered the host off yet: the step waits and changes nothing
    waiting = run(metal3_remediation, args)
    assert not waiting["changed"] and "power off" in waiting["remediations"][0]["message"]

    # absent: the request is taken back and the remediation goes
    gone = run(
        metal3_remediation, _args(ns, workload_kubeconfig, machines="m-0", state="absent", host_driver="external")
    )
    assert gone["changed"]
    assert store.list("Metal3Remediation", ns) == []
    assert key not in store.get("BareMetalHost", "host-0", ns)["metadata"].get("annotations", {})


def test_a_healthy_machine_gets_no_remediation_unless_forced(run, store, wkube, workload_kubeconfig):
    ns, node, _rem = make_world(store, wkube)
    store.delete("Metal3Remediation", "m-0", ns)
    wkube.set_ready(node, "True")
    args = _args(ns, workload_kubeconfig, machines=["m-0"], host_driver="external", wait=False)
    out = run(metal3_remediation, args)
    assert not out["changed"] and out["remediations"][0]["outcome"] == "healthy"
    assert store.list("Metal3Remediation", ns) == []
    forced = run(metal3_remediation, {**args, "force": True})
    assert forced["changed"] and len(store.list("Metal3Remediation", ns)) == 1


def test_bad_strategy_fails_before_writing(run, store, wkube, workload_kubeconfig):
    ns, node, _rem = make_world(store, wkube)
    store.delete("Metal3Remediation", "m-0", ns)
    args = _args(
        ns, workload_kubeconfig, machines=["m-0"], host_driver="external", wait=False, strategy={"timeoutSeconds": 30}
    )
    out = run(metal3_remediation, args)
    assert out["failed"] and "spec.strategy.timeoutSeconds" in out["msg"]
    assert store.list("Metal3Remediation", ns) == []


def test_labelsync_module_without_prefixes_changes_nothing(run, store, wkube, workload_kubeconfig):
    ns, node, _rem = make_world(store, wkube)
    out = run(metal3_labelsync, _args(ns, workload_kubeconfig))
    assert not out["changed"]


def test_health_info_from_a_machine_health_check(run, store, wkube, workload_kubeconfig):
    ns, node, _rem = make_world(store, wkube)
    mhc = {
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "MachineHealthCheck",
        "metadata": {"name": "workers", "namespace": ns},
        "spec": {
            "clusterName": "c1",
            "selector": {"matchLabels": {"cluster.x-k8s.io/cluster-name": "c1"}},
            "checks": {"unhealthyNodeConditions": [{"type": "Ready", "status": "Unknown", "timeoutSeconds": 0}]},
            "remediation": {
                "templateRef": {
                    "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2",
                    "kind": "Metal3RemediationTemplate",
                    "name": "t",
                }
            },
        },
    }
    store.create(mhc)
    out = run(machine_health_info, _args(ns, workload_kubeconfig, health_check="workers"))
    assert out["remediation_allowed"] and [m["machine"] for m in out["unhealthy"]] == ["m-0"]
    assert out["remediation_template"] == "t"
    mhc = store.get("MachineHealthCheck", "workers", ns)
    mhc["spec"]["remediation"]["triggerIf"] = {"unhealthyInRange": "[2-5]"}
    store.update(mhc)
    out = run(machine_health_info, _args(ns, workload_kubeconfig, health_check="workers"))
    assert (
        not out["remediation_allowed"] and out["unhealthy"] == [] and "unhealthyInRange" in out["remediation_blocked"]
    )
