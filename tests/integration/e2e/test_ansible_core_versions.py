"""provision_cluster.yml and deprovision_cluster.yml on the oldest and the newest ansible-core the collection
declares (meta/runtime.yml's requires_ansible), each from a venv of its own (tests/core_venvs.py, built by
``make core-venvs``): a 1 control plane + 1 worker Metal3 cluster on fake-hardware lab hosts.

Before 2.19 a value a filter returned was templated again when it reached a loop's ``item``, and cloud-init's
``{{ ds.meta_data.* }}`` in the KubeadmConfigs failed the run with ``'ds' is undefined``. The test checks that
the stored KubeadmConfigTemplate still carries them, and that the node simulator (cloud-init's part) rendered
them on the host: the Node's name and providerID come from the host's meta_data.
"""

from __future__ import annotations

import random

import pytest

from tests import core_venvs

from .conftest import E2E, free_endpoint, metal3_description, new_names

pytestmark = pytest.mark.timeout(1200)


@pytest.mark.parametrize("version", core_venvs.declared(), ids=lambda v: f"ansible-core-{v}")
def test_provision_deprovision_on_declared_ansible_core(version, e2e_lab, ironic_inventory, tmp_path):
    py = core_venvs.python(version)
    assert py.exists(), f"{py} missing: run `make core-venvs` (pip-installs ansible-core {version}.*)"
    inv = ironic_inventory
    name, ns = new_names("v")
    desc = metal3_description(name, ns, free_endpoint("127.0.9"), inv, random.randint(100, 199), hosts=2)
    driver = {"ironic_url": inv["ironic"]["url"], "boot_iso": inv["images"]["boot_iso"], "poll": 1}
    e = E2E(e2e_lab, tmp_path, "metal3", desc, {"capi_host_driver_options": driver}, python=str(py))
    try:
        run = e.play("provision_cluster.yml")
        assert f"ansible-playbook [core {version}." in e.version(), e.version()
        assert "Machines of" in run.out and "NODE READY" in run.out, run.out[-4000:]
        # host registration reports as it goes, under the task's no_log (plugins/action/baremetalhost.py)
        assert f"BareMetalHost {ns}/{name}-host-0: " in run.out, run.out[:6000]
        s = e.store()
        try:
            kct = s.list("KubeadmConfigTemplate", ns)[0]
            reg = kct["spec"]["template"]["spec"]["joinConfiguration"]["nodeRegistration"]
            assert reg["name"] == "{{ ds.meta_data.name }}", reg
            assert {"name": "provider-id", "value": "metal3://{{ ds.meta_data.providerid }}"} in reg[
                "kubeletExtraArgs"
            ], reg
            machines = {m["metadata"]["name"]: m for m in s.list("Machine", ns)}
            hosts = {h["metadata"]["name"]: h for h in s.list("BareMetalHost", ns)}
        finally:
            s.close()
        nodes = e.workload_nodes()
        assert len(machines) == 2 and len(nodes) == 2, (sorted(machines), sorted(nodes))
        for m in machines.values():
            assert m["status"]["phase"] == "Running", m["status"]
            node = nodes[m["status"]["nodeRef"]["name"]]
            # rendered on the host from its meta_data: metal3://<namespace>/<host>/<Metal3Machine>
            _, _, path = m["spec"]["providerID"].partition("metal3://")
            host_ns, host, _m3m = path.split("/")
            assert host_ns == ns and host in hosts, m["spec"]["providerID"]
            assert node["providerID"] == m["spec"]["providerID"] and node["ready"] == "True", node

        e.play("deprovision_cluster.yml")
        s = e.store()
        try:
            assert s.list("Machine", ns) == [] and s.list("Cluster", ns) == []
            assert all(not h["spec"].get("consumerRef") for h in s.list("BareMetalHost", ns))
        finally:
            s.close()
    finally:
        e.play("deprovision_cluster.yml", {"capi_deregister_hosts": True}, expect_ok=False)
