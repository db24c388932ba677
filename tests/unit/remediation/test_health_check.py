"""The MachineHealthCheck controller (remediation/health_check.py) on a real sqlite store, Nodes given as data,
an injected clock; the MachineSet then acts on what it marked (capi/deployment.py)."""

from __future__ import annotations

import datetime

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.capi import deployment
from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions, meta, names
from ansible_collections.baremetal.capi.plugins.module_utils.remediation import health_check

NS = "mhc"


def stamp(t: datetime.datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


class Lab:
    """Three workers of a MachineDeployment, each with a Ready Node, and a clock 1000 s after they were made."""

    def __init__(self, store, replicas=3):
        self.store = store
        self.cluster = store.create(meta.new("Cluster", "c1", NS, spec={}))
        store.create(
            meta.new("Metal3MachineTemplate", "tmpl", NS, spec={"template": {"spec": {"image": {"url": "http://i"}}}})
        )
        store.create(meta.new("KubeadmConfigTemplate", "w", NS, spec={"template": {"spec": {}}}))
        store.create(
            meta.new(
                "MachineDeployment",
                "c1-md",
                NS,
                spec={
                    "clusterName": "c1",
                    "replicas": replicas,
                    "template": {
                        "spec": {
                            "clusterName": "c1",
                            "bootstrap": {
                                "configRef": {
                                    "apiGroup": "bootstrap.cluster.x-k8s.io",
                                    "kind": "KubeadmConfigTemplate",
                                    "name": "w",
                                }
                            },
                            "infrastructureRef": {
                                "apiGroup": "infrastructure.cluster.x-k8s.io",
                                "kind": "Metal3MachineTemplate",
                                "name": "tmpl",
                            },
                        }
                    },
                },
            )
        )
        self.md_step()
        self.now = datetime.datetime.now(datetime.UTC).replace(microsecond=0) + datetime.timedelta(seconds=1000)
        self.nodes: dict[str, dict] = {}
        for m in self.machines():
            self.give_node(meta.name(m))

    def clock(self):
        return self.now

    def md_step(self):
        md = self.store.get("MachineDeployment", "c1-md", NS)
        return deployment.reconcile_deployment(self.store, md, self.cluster)

    def machines(self):
        return sorted(self.store.list("Machine", NS), key=meta.name)

    def give_node(self, name, ready="True", since=500, **extra):
        m = self.store.get("Machine", name, NS)
        m.setdefault("status", {})["nodeRef"] = {"name": name}
        conditions.set_condition(m, names.NODE_READY, True, names.NODE_READY_REASON)
        self.store.update_status(m)
        self.set_node(name, ready, since, **extra)

    def set_node(self, name, ready="True", since=500, **extra):
        conds = [
            {
                "type": "Ready",
                "status": ready,
                "lastTransitionTime": stamp(self.now - datetime.timedelta(seconds=since)),
            }
        ]
        for ctype, (status, age) in extra.items():
            conds.append(
                {
                    "type": ctype,
                    "status": status,
                    "lastTransitionTime": stamp(self.now - datetime.timedelta(seconds=age)),
                }
            )
        self.nodes[name] = {"metadata": {"name": name}, "status": {"conditions": conds}}

    def mhc(self, **spec):
        body = {
            "clusterName": "c1",
            "selector": {"matchLabels": {names.DEPLOYMENT_NAME_LABEL: "c1-md"}},
            "checks": {
                "nodeStartupTimeoutSeconds": 600,
                "unhealthyNodeConditions": [
                    {"type": "Ready", "status": "False", "timeoutSeconds": 300},
                    {"type": "Ready", "status": "Unknown", "timeoutSeconds": 300},
                ],
            },
        }
        body.update(spec)
        return self.store.create(meta.new("MachineHealthCheck", "c1-workers", NS, spec=body))

    def reconcile(self, mhc=None, check=False):
        mhc = mhc or self.store.get("MachineHealthCheck", "c1-workers", NS)
        return health_check.reconcile(self.store, mhc, nodes=self.nodes, clock=self.clock, check=check)

    def cond(self, name, ctype):
        return conditions.get(self.store.get("Machine", name, NS), ctype) or {}


@pytest.fixture
def lab(store):
    return Lab(store)


def test_one_of_three_unhealthy_is_marked_then_replaced_by_its_machine_set(lab):
    lab.mhc()
    sick = meta.name(lab.machines()[1])
    lab.set_node(sick, ready="False", since=301)
    out = lab.reconcile()
    assert out["remediation_allowed"] and out["owner_remediated"] == [sick]
    assert lab.cond(sick, names.HEALTH_CHECK_SUCCEEDED)["reason"] == "UnhealthyNode"
    assert lab.cond(sick, names.HEALTH_CHECK_SUCCEEDED)["message"].startswith("Health check failed: ")
    assert lab.cond(sick, names.OWNER_REMEDIATED)["reason"] == "WaitingForRemediation"
    others = [meta.name(m) for m in lab.machines() if meta.name(m) != sick]
    assert all(lab.cond(n, names.HEALTH_CHECK_SUCCEEDED)["status"] == "True" for n in others)
    mhc = lab.store.get("MachineHealthCheck", "c1-workers", NS)
    assert {k: mhc["status"][k] for k in ("expectedMachines", "currentHealthy")} == {
        "expectedMachines": 3,
        "currentHealthy": 2,
    }
    assert conditions.get(mhc, health_check.REMEDIATION_ALLOWED)["status"] == "True"
    step = lab.md_step()
    assert step.data["deleted"] == [sick] and len(step.data["created"]) == 1
    assert sick not in {meta.name(m) for m in lab.machines()} and len(lab.machines()) == 3


def test_two_of_three_with_max_unhealthy_one_short_circuits(lab):
    lab.mhc(remediation={"triggerIf": {"unhealthyLessThanOrEqualTo": 1}})
    for m in lab.machines()[:2]:
        lab.set_node(meta.name(m), ready="Unknown", since=400)
    out = lab.reconcile()
    assert not out["remediation_allowed"] and out["unhealthy"] == [] and out["owner_remediated"] == []
    assert "exceeds unhealthyLessThanOrEqualTo (total: 3, unhealthy: 2" in out["remediation_blocked"]
    mhc = lab.store.get("MachineHealthCheck", "c1-workers", NS)
    cond = conditions.get(mhc, health_check.REMEDIATION_ALLOWED)
    assert (cond["status"], cond["reason"]) == ("False", "TooManyUnhealthy")
    assert mhc["status"]["remediationsAllowed"] == 0
    assert all(not lab.cond(meta.name(m), names.OWNER_REMEDIATED) for m in lab.machines())
    before = {meta.name(m) for m in lab.machines()}
    step = lab.md_step()
    assert step.data["deleted"] == [] and {meta.name(m) for m in lab.machines()} == before


def test_unhealthy_in_range_short_circuits_outside_it(lab):
    lab.mhc(remediation={"triggerIf": {"unhealthyInRange": "[1-1]"}})
    for m in lab.machines()[:2]:
        lab.set_node(meta.name(m), ready="False", since=400)
    out = lab.reconcile()
    assert not out["remediation_allowed"] and "does not fall within the range" in out["remediation_blocked"]


def test_node_that_never_registers_is_remediated_after_node_startup_timeout(lab):
    lab.mhc()
    lab.md_step()
    late = meta.name(lab.machines()[0])
    m = lab.store.get("Machine", late, NS)
    m["status"].pop("nodeRef")
    lab.store.update_status(m)
    lab.nodes.pop(late)
    # created ~1000 s before the clock: with a 2000 s startup timeout it is still starting
    lab.store.update(
        {**lab.store.get("MachineHealthCheck", "c1-workers", NS)}
        | {
            "spec": {
                **lab.store.get("MachineHealthCheck", "c1-workers", NS)["spec"],
                "checks": {"nodeStartupTimeoutSeconds": 2000},
            }
        }
    )
    assert lab.reconcile()["owner_remediated"] == []
    lab.now += datetime.timedelta(seconds=1001)
    out = lab.reconcile()
    assert out["owner_remediated"] == [late]
    assert lab.cond(late, names.HEALTH_CHECK_SUCCEEDED)["reason"] == "NodeStartupTimeout"


def test_node_deleted_and_custom_node_conditions(lab):
    lab.mhc(checks={"unhealthyNodeConditions": [{"type": "DiskPressure", "status": "True", "timeoutSeconds": 60}]})
    a, b, c = (meta.name(m) for m in lab.machines())
    lab.set_node(a, ready="False", since=900)  # Ready is not in this check's conditions
    lab.set_node(b, DiskPressure=("True", 61))
    lab.nodes.pop(c)
    out = lab.reconcile()
    reasons = {r["machine"]: r["reason"] for r in out["unhealthy"]}
    assert reasons == {b: "UnhealthyNode", c: "NodeDeleted"}


def test_with_a_template_the_remediation_is_requested_not_the_owner(lab):
    lab.store.create(
        meta.new(
            "Metal3RemediationTemplate",
            "reboot",
            NS,
            spec={"template": {"spec": {"strategy": {"type": "Reboot", "retryLimit": 1, "timeoutSeconds": 300}}}},
        )
    )
    lab.mhc(
        remediation={
            "templateRef": {
                "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
                "kind": "Metal3RemediationTemplate",
                "name": "reboot",
            }
        }
    )
    sick = meta.name(lab.machines()[0])
    lab.set_node(sick, ready="False", since=400)
    out = lab.reconcile()
    assert out["externally_remediated"] == [sick] and out["owner_remediated"] == []
    rem = lab.store.get("Metal3Remediation", sick, NS)
    assert rem["spec"]["strategy"]["retryLimit"] == 1
    assert rem["metadata"]["ownerReferences"][0]["name"] == sick
    assert lab.cond(sick, health_check.EXTERNALLY_REMEDIATED)["reason"] == "WaitingForRemediation"
    assert not lab.cond(sick, names.OWNER_REMEDIATED)
    assert lab.md_step().data["deleted"] == []  # the reboot flow acts, not the MachineSet


def test_a_template_of_a_kind_not_run_here_is_refused(lab):
    mhc = lab.mhc(remediation={"templateRef": {"kind": "FooRemediationTemplate", "name": "x"}})
    lab.set_node(meta.name(lab.machines()[0]), ready="False", since=400)
    with pytest.raises(Invalid, match=r"spec\.remediation\.templateRef\.kind"):
        lab.reconcile(mhc)


def test_control_plane_machines_are_marked_for_their_control_plane(store):
    lab = Lab(store, replicas=1)
    cp = meta.name(lab.machines()[0])
    m = store.get("Machine", cp, NS)
    m["metadata"]["labels"][names.CONTROL_PLANE_LABEL] = ""
    store.update(m)
    lab.mhc(selector={"matchLabels": {names.CONTROL_PLANE_LABEL: ""}})
    lab.set_node(cp, ready="Unknown", since=400)
    out = lab.reconcile()
    # marked as upstream does; the KubeadmControlPlane's guards decide, the MachineHealthCheck deletes nothing
    assert out["owner_remediated"] == [cp]
    assert not meta.is_deleting(store.get("Machine", cp, NS))


def test_healthy_again_loses_owner_remediated(lab):
    lab.mhc(remediation={"triggerIf": {"unhealthyLessThanOrEqualTo": 1}})
    sick = meta.name(lab.machines()[0])
    lab.set_node(sick, ready="False", since=400)
    lab.reconcile()
    lab.set_node(sick, ready="True", since=10)
    out = lab.reconcile()
    assert out["released"] == [sick] and not lab.cond(sick, names.OWNER_REMEDIATED)


def test_check_mode_writes_nothing(lab):
    lab.mhc()
    sick = meta.name(lab.machines()[0])
    lab.set_node(sick, ready="False", since=400)
    out = lab.reconcile(check=True)
    assert out["changed"] and out["owner_remediated"] == [sick]
    assert not lab.cond(sick, names.OWNER_REMEDIATED) and not lab.cond(sick, names.HEALTH_CHECK_SUCCEEDED)
    assert "status" not in lab.store.get("MachineHealthCheck", "c1-workers", NS) or not lab.store.get(
        "MachineHealthCheck", "c1-workers", NS
    )["status"].get("targets")


def test_module_marks_the_annotated_machine_once_and_check_mode_writes_nothing(run, store):
    from ansible_collections.baremetal.capi.plugins.modules import machine_health_check

    lab = Lab(store)  # no <cluster>-kubeconfig Secret: only what needs no Node is judged
    lab.mhc()
    marked = meta.name(lab.machines()[2])
    m = store.get("Machine", marked, NS)
    m["metadata"].setdefault("annotations", {})[names.REMEDIATE_MACHINE_ANNOTATION] = ""
    store.update(m)
    args = {"name": "c1-workers", "namespace": NS}
    planned = run(machine_health_check, args, check=True)
    assert planned["changed"] and planned["owner_remediated"] == [marked]
    assert not lab.cond(marked, names.OWNER_REMEDIATED)
    out = run(machine_health_check, args)
    assert out["changed"] and out["owner_remediated"] == [marked]
    assert lab.cond(marked, names.OWNER_REMEDIATED)["reason"] == "WaitingForRemediation"
    skipped = {r["machine"]: r["skipped"] for r in out["machines"]}
    assert [k for k, v in skipped.items() if v == "unreachable"] == sorted(set(skipped) - {marked})
    assert not run(machine_health_check, args)["changed"]


def test_module_names_the_missing_health_check(run, store):
    from ansible_collections.baremetal.capi.plugins.modules import machine_health_check

    out = run(machine_health_check, {"name": "nope", "namespace": NS})
    assert out["failed"] and "nope" in out["msg"]
