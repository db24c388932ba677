"""provision_cluster.yml and deprovision_cluster.yml on the oldest and the newest ansible-core the collection
declares (meta/runtime.yml's requires_ansible: 2.16; tests/core_venvs.py's NEWEST: 2.21), each from a venv of
its own on a Python it runs on (3.11 and 3.12; tests/core_venvs.py, built by ``make core-venvs``): a 1 control
plane + 1 worker Metal3 cluster on fake-hardware lab hosts.

Before 2.19 a value a filter returned was templated again when it reached a loop's ``item``, and cloud-init's
``{{ ds.meta_data.* }}`` in the KubeadmConfigs failed the run with ``'ds' is undefined``. The test checks that
the stored KubeadmConfigTemplate still carries them, and that the node simulator (cloud-init's part) rendered
them on the host: the Node's name and providerID come from the host's meta_data.

Each version also runs a 1 + 1 MAAS cluster on the MAAS simulator (its own tag, the endpoint a MAAS DNS name): the
same four runs, each checked on the simulator and the workload API.

Both run the playbooks as a user of the release does: from the galaxy artifact (``ansible-galaxy collection
build``, then ``install`` into a fresh collections path with that venv's own ansible-galaxy, which refuses a
collection whose requires_ansible excludes it, no override), as ``baremetal.capi.provision_cluster``, with
ansible-core's defaults (no ansible.cfg, so no progress callback). The progress lines and the machine table must
show all the same. On both, a re-run of the converged cluster changes nothing, and the workers scale from 1 to 2
(a third host) before the deprovision.
Neither version warns that the collection does not support it, nor that a module's result could not be read.
"""

from __future__ import annotations

import random
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from tests import core_venvs
from tests.integration.net import LOOP

from .conftest import E2E, REPO, free_endpoint, metal3_description, new_names
from .test_e2e_maas import _converged, _seed, _sim, maas_description


def install_artifact(py: Path, tmp: Path) -> Path:
    """The galaxy artifact of the work tree, built and installed into a fresh collections path; that path."""
    galaxy = str(py.with_name("ansible-galaxy"))
    version = yaml.safe_load((REPO / "galaxy.yml").read_text())["version"]
    dist, collections = tmp / "dist", tmp / "collections"
    subprocess.run([galaxy, "collection", "build", "--output-path", str(dist), str(REPO)], check=True, cwd=tmp)
    artifact = dist / f"baremetal-capi-{version}.tar.gz"
    # away from the work tree, or ansible-galaxy finds the collection "already installed" through ./build
    subprocess.run([galaxy, "collection", "install", "-p", str(collections), str(artifact)], check=True, cwd=tmp)
    manifest = collections / "ansible_collections" / "baremetal" / "capi" / "MANIFEST.json"
    assert manifest.exists(), sorted(p.name for p in collections.rglob("*"))[:50]
    return collections


pytestmark = pytest.mark.timeout(1200)


@pytest.mark.parametrize("version", core_venvs.declared(), ids=lambda v: f"ansible-core-{v}")
def test_provision_deprovision_on_declared_ansible_core(version, e2e_lab, ironic_inventory, tmp_path):
    py = core_venvs.python(version)
    assert py.exists(), f"{py} missing: run `make core-venvs` (pip-installs ansible-core {version}.*)"
    inv = ironic_inventory
    name, ns = new_names("v")
    desc = metal3_description(name, ns, free_endpoint(f"{LOOP}.9"), inv, random.randint(100, 199), hosts=3)
    driver = {"ironic_url": inv["ironic"]["url"], "boot_iso": inv["images"]["boot_iso"], "poll": 1}
    collections = install_artifact(py, tmp_path)
    e = E2E(
        e2e_lab, tmp_path, "metal3", desc, {"capi_host_driver_options": driver}, python=str(py),
        collections=collections,
    )  # fmt: skip
    try:
        run = e.play("provision_cluster.yml")
        assert f"ansible-playbook [core {version}." in e.version(), e.version()
        assert "does not support Ansible version" not in run.out, run.out[:3000]
        assert "could not read the module's result" not in run.out, run.out[-6000:]
        assert "config file = None" in e.version(), e.version()
        assert str(collections) in e.version(), e.version()
        # no callback: the playbook's last task prints the table (the default callback's debug output)
        assert "Machines of" not in run.out, run.out[-4000:]
        table = re.search(rf'"{name} \(metal3\)",\n\s+"MACHINE +ROLE .* NODE READY', run.out)
        assert table, run.out[-4000:]
        # host registration reports as it goes, under the task's no_log (plugins/action/baremetalhost.py)
        assert f"BareMetalHost {ns}/{name}-host-0: " in run.out, run.out[:6000]
        # and each machine as it moves (plugins/action/cluster_machines.py)
        assert re.search(rf"^  {ns}/{name} {name}-\S+ \[control-plane\] ", run.out, re.M), run.out[:6000]
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

        # a re-run changes nothing; the workers scale from 1 to 2
        again = e.play("provision_cluster.yml")
        assert again.changed == 0, again.changed_tasks()
        described = e.host_vars["capi_cluster"]  # with the CNI stand-in E2E added
        e.rewrite({**described, "workers": [{**described["workers"][0], "replicas": 2}]})
        scaled = e.play("provision_cluster.yml")
        assert "could not read the module's result" not in scaled.out, scaled.out[-6000:]
        s = e.store()
        try:
            machines = s.list("Machine", ns)
        finally:
            s.close()
        nodes = e.workload_nodes()
        assert len(machines) == 3 and len(nodes) == 3, (len(machines), sorted(nodes))
        assert all(m["status"]["phase"] == "Running" for m in machines), [m["status"] for m in machines]
        assert all(n["ready"] == "True" for n in nodes.values()), nodes

        e.play("deprovision_cluster.yml")
        s = e.store()
        try:
            assert s.list("Machine", ns) == [] and s.list("Cluster", ns) == []
            assert all(not h["spec"].get("consumerRef") for h in s.list("BareMetalHost", ns))
        finally:
            s.close()
    finally:
        e.play("deprovision_cluster.yml", {"capi_deregister_hosts": True}, expect_ok=False)


@pytest.mark.parametrize("version", core_venvs.declared(), ids=lambda v: f"ansible-core-{v}")
def test_maas_provision_rerun_scale_deprovision_on_declared_ansible_core(version, e2e_lab, tmp_path):
    py = core_venvs.python(version)
    assert py.exists(), f"{py} missing: run `make core-venvs` (pip-installs ansible-core {version}.*)"
    control = e2e_lab.info["maas"]["control_url"]
    name, ns = new_names("c")
    tag = f"t{name}"
    _seed(control, tag)
    desc = maas_description(name, ns, tag)
    maas = e2e_lab.info["maas"]
    collections = install_artifact(py, tmp_path)  # run from the artifact, as on the Metal3 side
    extra = {"capi_maas_url": maas["url"], "capi_maas_api_key": maas["api_key"]}
    e = E2E(e2e_lab, tmp_path, "maas", desc, extra, python=str(py), collections=collections)
    try:
        run = e.play("provision_cluster.yml")
        assert f"ansible-playbook [core {version}." in e.version(), e.version()
        assert "does not support Ansible version" not in run.out, run.out[:3000]
        assert "could not read the module's result" not in run.out, run.out[-6000:]
        _converged(e, control, tag, workers=1)
        again = e.play("provision_cluster.yml")
        assert again.changed == 0, again.changed_tasks()
        described = e.host_vars["capi_cluster"]
        e.rewrite({**described, "workers": [{**described["workers"][0], "replicas": 2}]})
        scaled = e.play("provision_cluster.yml")
        assert "could not read the module's result" not in scaled.out, scaled.out[-6000:]
        _converged(e, control, tag, workers=2)
        e.play("deprovision_cluster.yml")
        s = e.store()
        try:
            assert s.list("Machine", ns) == [] and s.list("Cluster", ns) == [] and s.list("MaasMachine", ns) == []
        finally:
            s.close()
        # every machine of the tag released again
        assert {m["status_name"] for m in _sim(control, tag).values()} == {"Ready"}
    finally:
        e.play("deprovision_cluster.yml", expect_ok=False)
