"""The lab kubelet's judgement of a CNI DaemonSet's Pod on a Node (scheduler rules), and its NotReady wording."""

from __future__ import annotations

import pytest

from lab.nodesim import kubelet


def node(labels=None, taints=None, name="n1"):
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": {"taints": taints or []}}


NOT_READY = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}
CONTROL_PLANE = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("spec", "n", "fits"),
    [
        ({"tolerations": [{"operator": "Exists"}]}, node(taints=[NOT_READY, CONTROL_PLANE]), True),
        ({"tolerations": [{"operator": "Exists", "effect": "NoSchedule"}]}, node(taints=[NOT_READY]), True),
        ({}, node(taints=[NOT_READY]), False),  # DaemonSet Pods tolerate not-ready NoExecute only
        ({}, node(taints=[{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}]), True),
        ({}, node(taints=[{"key": "x", "effect": "PreferNoSchedule"}]), True),
        (
            {"tolerations": [{"key": "a", "operator": "Equal", "value": "1"}]},
            node(taints=[{"key": "a", "value": "2", "effect": "NoSchedule"}]),
            False,
        ),
        ({"nodeSelector": {"kubernetes.io/os": "linux"}}, node(labels={"kubernetes.io/os": "linux"}), True),
        ({"nodeSelector": {"kubernetes.io/os": "windows"}}, node(labels={"kubernetes.io/os": "linux"}), False),
        (
            {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["gpu"]}]},
                                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]},
                            ]
                        }
                    }
                }
            },
            node(),
            True,
        ),
        (
            {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {"matchExpressions": [{"key": "pool", "operator": "DoesNotExist"}]},
                            ]
                        }
                    }
                }
            },
            node(labels={"pool": "a"}),
            False,
        ),
        (
            {"hostNetwork": True},
            node(taints=[{"key": "node.kubernetes.io/network-unavailable", "effect": "NoSchedule"}]),
            True,
        ),
    ],
)
def test_daemon_pod_fits(spec, n, fits):
    assert kubelet.daemon_pod_fits(spec, n)[0] is fits


def test_cni_config_host_path_only_under_etc_cni_net_d():
    def spec(path):
        return {"volumes": [{"name": "v", "hostPath": {"path": path}}]}

    assert kubelet._writes_cni_config(spec("/etc/cni/net.d"))
    assert kubelet._writes_cni_config(spec("/etc/cni/net.d/"))
    assert kubelet._writes_cni_config(spec("/etc/cni/net.d/calico"))
    assert not kubelet._writes_cni_config(spec("/etc/cni"))
    assert not kubelet._writes_cni_config(spec("/opt/cni/bin"))
    assert not kubelet._writes_cni_config({"volumes": [{"name": "v", "emptyDir": {}}]})


def test_not_ready_wording_is_the_kubelets():
    ready = {c["type"]: c for c in kubelet._conditions(0, network_ready=False)}["Ready"]
    assert (ready["status"], ready["reason"]) == ("False", "KubeletNotReady")
    assert ready["message"] == (
        "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady "
        "message:Network plugin returns error: cni plugin not initialized"
    )
    assert {c["type"]: c for c in kubelet._conditions(0, network_ready=True)}["Ready"]["reason"] == "KubeletReady"
