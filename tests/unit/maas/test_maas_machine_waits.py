"""The MaasMachine flow's steps before MAAS is asked anything, on a real sqlite store.

The client points at a closed port: any MAAS call would fail these tests.
"""

from __future__ import annotations

import copy

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.maas import client as maas_client
from ansible_collections.baremetal.capi.plugins.module_utils.maas.machine import MachineManager
from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions

INFRA = "infrastructure.cluster.x-k8s.io"


@pytest.fixture
def mgr(store):
    return MachineManager(store, maas_client.Client("http://127.0.0.1:9/MAAS/", "a:b:c", retries=0))


def objects(store, secret=None, spec=None):
    store.create(
        {
            "apiVersion": "cluster.x-k8s.io/v1beta2",
            "kind": "Cluster",
            "metadata": {"name": "c1", "namespace": "default"},
            "spec": {"infrastructureRef": {"apiGroup": INFRA, "kind": "MaasCluster", "name": "c1"}},
        }
    )
    store.create(
        {
            "apiVersion": f"{INFRA}/v1beta1",
            "kind": "MaasCluster",
            "metadata": {"name": "c1", "namespace": "default"},
            "spec": {"dnsDomain": "maas"},
        }
    )
    bootstrap = {"dataSecretName": secret} if secret else {}
    store.create(
        {
            "apiVersion": "cluster.x-k8s.io/v1beta2",
            "kind": "Machine",
            "metadata": {"name": "m1", "namespace": "default", "labels": {"cluster.x-k8s.io/control-plane": ""}},
            "spec": {
                "clusterName": "c1",
                "bootstrap": bootstrap,
                "infrastructureRef": {"apiGroup": INFRA, "kind": "MaasMachine", "name": "m1"},
            },
        }
    )
    store.create(
        {
            "apiVersion": f"{INFRA}/v1beta1",
            "kind": "MaasMachine",
            "metadata": {"name": "m1", "namespace": "default"},
            "spec": {"image": "ubuntu/jammy", "minCPU": 2, "minMemory": 4096, **(spec or {})},
        }
    )


def provision_maas_cluster(store):
    """What the MaasCluster flow writes once its DNS record exists."""
    mc = copy.deepcopy(store.get("MaasCluster", "c1", "default"))
    mc["spec"]["controlPlaneEndpoint"] = {"host": "c1-abcdef.maas", "port": 6443}
    mc = store.update(mc)
    mc["status"] = {"ready": True, "initialization": {"provisioned": True}}
    store.update_status(mc)


def test_waits_for_the_cluster_infrastructure_then_the_bootstrap_data(store, mgr):
    objects(store)
    step = mgr.step("m1", "default")
    assert not step.done and "Cluster c1" in step.message
    mm = store.get("MaasMachine", "m1", "default")
    cond = conditions.get(mm, "MachineDeployed")
    assert (cond["status"], cond["reason"]) == ("False", "WaitingForClusterInfrastructure")
    # the Machine owns its MaasMachine now (what Cluster API's Machine controller does first)
    assert [o["kind"] for o in mm["metadata"]["ownerReferences"]] == ["Machine"]

    provision_maas_cluster(store)
    step = mgr.step("m1", "default")
    assert not step.done and "bootstrap data" in step.message
    mm = store.get("MaasMachine", "m1", "default")
    assert conditions.get(mm, "MachineDeployed")["reason"] == "WaitingForBootstrapData"
    assert "maasmachine.infrastructure.cluster.x-k8s.io" in mm["metadata"]["finalizers"]
    assert mm["metadata"]["labels"]["cluster.x-k8s.io/cluster-name"] == "c1"
    assert "cluster.x-k8s.io/control-plane" in mm["metadata"]["labels"]
    assert store.get("Cluster", "c1", "default")["status"]["initialization"]["infrastructureProvisioned"] is True
    assert "providerID" not in mm["spec"]


def test_bad_spec_fails_naming_the_field_before_anything_is_written(store, mgr):
    objects(store, secret="s", spec={"minMemory": "lots"})
    before = store.get("MaasMachine", "m1", "default")
    with pytest.raises(Invalid) as err:
        mgr.step("m1", "default")
    assert err.value.field == "spec.minMemory" and "MaasMachine default/m1" in str(err.value)
    assert store.get("MaasMachine", "m1", "default") == before


def _maas_machine(sid, status="Ready", owner=None, zone="az-1", cpu=4, memory=8192, tags=()):
    return {"system_id": sid, "hostname": f"h-{sid}", "status_name": status, "owner": owner, "zone": {"name": zone},
            "pool": {"name": "default"}, "cpu_count": cpu, "memory": memory, "tag_names": list(tags)}  # fmt: skip


class _NoMachineMatches(maas_client.Client):
    """MAAS answering op=allocate as the region does when nothing matches (409, its own words), and listing its
    machines; nothing else."""

    CONTENT = (
        "No available machine matches constraints: [('cpu_count', ['2']), ('mem', ['4096']), ('zone', ['az-1'])] "
        '(resolved to "cpu_count=2.0 mem=4096.0 zone=az-1")'
    )
    MACHINES = [
        _maas_machine("aaa001", status="Deployed", owner="alice"),
        _maas_machine("aaa002", zone="az-2"),
        _maas_machine("aaa003", cpu=1),
        _maas_machine("aaa004", memory=2048),
        _maas_machine("aaa005", tags=["capi-unhealthy"]),
    ]

    def __init__(self):
        super().__init__("http://maas.invalid/MAAS/", "a:b:c", retries=0)
        self.allocated: list[dict] = []

    def list_machines(self, **filters):
        return [] if filters else list(self.MACHINES)  # none allocated to this MaasMachine (agent_name) yet

    def allocate(self, constraints, **kwargs):
        self.allocated.append(dict(constraints))
        raise maas_client.MaasConflict("allocate", status=409, content=self.CONTENT)


def test_no_maas_machine_names_the_constraints_the_zone_and_why_each_machine_was_not_given(store):
    """The MAAS side of "no available host matching ...": what was asked of MAAS, what MAAS answered, how many
    machines it has and why each was not given (MAAS's 409 names none), the failure domain as the zone; a requeue
    (the deadline names it), with the MachineDeployed condition giving MAAS's words."""
    from ansible_collections.baremetal.capi.plugins.module_utils.errors import NoHostAvailable

    objects(store, secret="m1-bootstrap", spec={"failureDomain": "az-1"})
    provision_maas_cluster(store)
    client = _NoMachineMatches()
    with pytest.raises(NoHostAvailable) as info:
        MachineManager(store, client).step("m1", "default")
    exc = info.value
    # not_tags: the machines remediation marked unhealthy are never allocated again
    wanted = "cpu_count=2, mem=4096, zone=az-1, not_tags=['capi-unhealthy']"
    assert client.allocated == [{"cpu_count": "2", "mem": "4096", "zone": "az-1", "not_tags": ["capi-unhealthy"]}]
    assert exc.message == (
        f"no available MAAS machine matching {wanted}: {client.CONTENT}; 5 MAAS machine(s): "
        "h-aaa001 (aaa001) status Deployed, owned by alice; h-aaa002 (aaa002) in zone az-2; "
        "h-aaa003 (aaa003) 1 CPUs; h-aaa004 (aaa004) 2048 MiB of memory; h-aaa005 (aaa005) tagged capi-unhealthy"
    )
    assert exc.selector == wanted and exc.failure_domain == "az-1" and exc.seen == 5
    assert exc.skipped["h-aaa002 (aaa002)"] == "in zone az-2"
    cond = conditions.get(store.get("MaasMachine", "m1", "default"), "MachineDeployed")
    assert cond["status"] == "False" and cond["message"] == client.CONTENT


def test_why_not_names_the_rule_each_machine_fails():
    from ansible_collections.baremetal.capi.plugins.module_utils.maas.machine import why_not

    wanted = {"cpu_count": "2", "mem": "4096", "zone": "az-1", "pool": "gpu", "tags": ["fast", "ssd"]}
    got = why_not(
        [
            {**_maas_machine("b1"), "pool": {"name": "default"}},
            {**_maas_machine("b2", tags=["fast"]), "pool": {"name": "gpu"}},
            {**_maas_machine("b3", tags=["fast", "ssd"]), "pool": {"name": "gpu"}},
            {**_maas_machine("b4", tags=["fast", "ssd"]), "pool": {"name": "gpu"}},
            {**_maas_machine("b5", status="Ready", owner="bob"), "pool": {"name": "gpu"}},
        ],
        {**wanted, "system_id": ["b1", "b2", "b3", "b5"]},
        avoid={"b3"},
    )
    assert got == {
        "h-b1 (b1)": "in pool default",
        "h-b2 (b2)": "without tag(s) ssd",
        "h-b3 (b3)": "its deployment failed recently",
        "h-b4 (b4)": "not among the system IDs asked for",
        "h-b5 (b5)": "status Ready, owned by bob",
    }
    [(name, why)] = why_not([{**_maas_machine("b6", tags=["fast", "ssd"]), "pool": {"name": "gpu"}}], wanted).items()
    assert why.startswith("matches these constraints; MAAS refused it")
