"""The reboot strategy against a real sqlite store and the lab's wkube-apiserver, with an injected clock."""

from __future__ import annotations

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.remediation import common, reboot
from ansible_collections.baremetal.capi.plugins.module_utils.remediation.targets import Metal3Target

OOS = "node.kubernetes.io/out-of-service"


def remediator(store, wkube, bmo, clock, fencing="taint"):
    return reboot.Remediator(store, Metal3Target(store, bmo), fencing_mode=fencing, workload=wkube, clock=clock)


def drive(r, ns, limit=60, on_wait=None):
    """Step until done; ``on_wait(step)`` runs when a step only waits (the test moves the clock there)."""
    steps = []
    for _ in range(limit):
        step = r.step("m-0", ns)
        steps.append(step)
        if step.done:
            return steps
        if not step.changed and on_wait:
            on_wait(step)
    raise AssertionError(f"not done after {limit} steps: {[s.message for s in steps]}")


def phases(steps):
    out = []
    for s in steps:
        if not out or out[-1] != s.data.get("phase"):
            out.append(s.data.get("phase"))
    return out


@pytest.mark.parametrize(
    "strategy, error",
    [
        ({"type": "Reboot", "timeoutSeconds": 100, "retryLimit": 1}, None),
        ({"type": "Reboot", "timeoutSeconds": 0, "retryLimit": 3}, None),
        ({"type": "Reboot", "timeoutSeconds": 99}, "spec.strategy.timeoutSeconds"),
        ({"type": "Reboot", "retryLimit": 0}, "spec.strategy.retryLimit"),
        ({"type": "PowerOff"}, "spec.strategy.type"),
        ({}, "spec.strategy.type"),
    ],
)
def test_webhook_rules(strategy, error):
    rem = {"kind": "Metal3Remediation", "metadata": {"name": "m", "namespace": "d"}, "spec": {"strategy": strategy}}
    if error is None:
        common.validate_remediation(rem)
    else:
        with pytest.raises(Invalid) as exc:
            common.validate_remediation(rem)
        assert exc.value.field == error


def test_template_defaults_and_build():
    tmpl = {
        "kind": "Metal3RemediationTemplate",
        "metadata": {"name": "t", "namespace": "d"},
        "spec": {"template": {"spec": {"strategy": {"retryLimit": 0}}}},
    }
    st = common.default_template(tmpl)["spec"]["template"]["spec"]["strategy"]
    assert st == {"type": "Reboot", "timeoutSeconds": 600, "retryLimit": 1}
    machine = {
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "Machine",
        "metadata": {"name": "m-1", "namespace": "d", "uid": "u1"},
        "spec": {"clusterName": "c"},
    }
    rem = reboot.build("Metal3Remediation", machine, template=tmpl)
    assert rem["metadata"]["name"] == "m-1" and rem["metadata"]["ownerReferences"][0]["uid"] == "u1"
    assert rem["spec"]["strategy"] == st
    plain = reboot.build("MaasRemediation", machine, strategy={"type": "Reboot"})
    assert plain["apiVersion"] == "remediation.capi.baremetal.io/v1alpha1"
    assert plain["spec"]["strategy"] == {"type": "Reboot", "retryLimit": 1, "timeoutSeconds": 600}
    bad = {
        "kind": "Metal3RemediationTemplate",
        "metadata": {"name": "t", "namespace": "d"},
        "spec": {"template": {"spec": {"strategy": {"timeoutSeconds": 50}}}},
    }
    with pytest.raises(Invalid):
        reboot.build("Metal3Remediation", machine, template=bad)
