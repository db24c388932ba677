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


class _NoMachineMatches(maas_client.Client):
    """MAAS answering op=allocate as the region does when nothing matches (409, its own words); nothing else."""

    CONTENT = (
        "No available machine matches constraints: [('cpu_count', ['2']), ('mem', ['4096']), ('zone', ['az-1'])] "
        '(resolved to "cpu_count=2.0 mem=4096.0 zone=az-1")'
    )

    def __init__(self):
        super().__init__("http://maas.invalid/MAAS/", "a:b:c", retries=0)
        self.allocated: list[dict] = []

    def list_machines(self, **filters):
        return []

    def allocate(self, constraints, **kwargs):
        self.allocated.append(dict(constraints))
        raise maas_client.MaasConflict("allocate", status=409, content=self.CONTENT)


def test_no_maas_machine_names_the_constraints_and_the_zone(store):
    """The MAAS side of "no available host matching ...": what was asked of MAAS and what MAAS answered,
    the failure domain as the zone; a requeue (the deadline names it), with the MachineDeployed condition saying
    the same."""
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
    assert exc.message == f"no available MAAS machine matching {wanted}: {client.CONTENT}"
    assert exc.selector == wanted and exc.failure_domain == "az-1"
    cond = conditions.get(store.get("MaasMachine", "m1", "default"), "MachineDeployed")
    assert cond["status"] == "False" and cond["message"] == client.CONTENT
