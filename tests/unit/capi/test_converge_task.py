"""What a cluster_machines task says when it did not converge (converge_task.outcome, plain Python)."""

from __future__ import annotations

from ansible_collections.baremetal.capi.plugins.module_utils.capi import converge_task

NO_CNI = (
    "KubeletNotReady: container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady "
    "message:Network plugin returns error: cni plugin not initialized"
)


def _params(**over):
    return {"cluster": "c1", "wait": True, "wait_timeout": 60, "stop_when": "converged", **over}


def _row(name, ready, not_ready=None, state="Running", message=""):
    return {"machine": name, "role": "worker", "state": state, "nodeReady": ready, "nodeNotReady": not_ready,
            "message": message, "failed": False}  # fmt: skip


def test_a_timeout_names_each_waiting_machine_with_the_kubelets_reason():
    report = {
        "done": False,
        "machines": [_row("w-1", False, NO_CNI), _row("w-2", True), _row("w-3", None, state="Provisioning",
                                                                            message="host h3 provisioning")],
        "messages": ["MachineDeployment c1-md-0: 1/3 available, 1 up to date"],
        "rounds": 4,
    }  # fmt: skip
    result, msg = converge_task.outcome(_params(), "ns1", report, check_mode=False)
    assert result["converged"] is False
    assert msg.startswith("cluster ns1/c1 not converged after 60s: ")
    assert f"w-1 (Running): Node NotReady: {NO_CNI};" in msg
    assert "w-2" not in msg
    assert "w-3 (Provisioning): host h3 provisioning;" in msg
    assert msg.endswith("MachineDeployment c1-md-0: 1/3 available, 1 up to date")


def test_converged_is_no_failure():
    report = {"done": True, "machines": [_row("w-1", True)], "messages": [], "rounds": 1}
    assert converge_task.outcome(_params(), "ns1", report, check_mode=False)[1] is None


def test_no_machine_at_a_time_is_refused_before_the_store_is_read():
    import pytest

    from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid

    class _NoStore:  # any read or write would fail the test
        def __getattr__(self, name):
            raise AssertionError(f"the store was used: {name}")

    with pytest.raises(Invalid) as err:
        converge_task.run(_params(workers=0), _NoStore(), "ns1", maas_options=dict, check_mode=False)
    assert err.value.field == "workers" and "Cluster ns1/c1" in str(err.value)
