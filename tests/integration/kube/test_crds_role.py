"""The crds role through ansible-playbook against a real API server, with the state checked afterwards."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from kubernetes import client as k
from test_crds import bare_apiserver, foreign_crd  # noqa: F401 (a fixture)

from ansible_collections.baremetal.capi.plugins.module_utils.model import kinds
from lab.config import REPO

CUSTOM = {kd.crd_name for kd in kinds.ALL if not kd.core}


def play(tmp_path: Path, extra: dict, *flags: str, fails: bool = False):
    """Run roles/crds in a play on localhost; return the crds task's result (``fails``: the play's output)."""
    playbook = tmp_path / "crds.yml"
    playbook.write_text(
        "- hosts: localhost\n  gather_facts: false\n  roles:\n    - role: baremetal.capi.crds\n"
        "  post_tasks:\n    - ansible.builtin.copy:\n        content: '{{ crds_result | to_json }}'\n"
        "        dest: '{{ result_file }}'\n      check_mode: false\n"
    )
    result_file = tmp_path / "result.json"
    env = dict(os.environ)
    env.update(
        ANSIBLE_COLLECTIONS_PATH=str(REPO / "build"),
        ANSIBLE_ROLES_PATH=str(tmp_path),
        ANSIBLE_LOCALHOST_WARNING="False",
        ANSIBLE_INVENTORY_UNPARSED_WARNING="False",
    )
    argv = [str(Path(sys.executable).with_name("ansible-playbook")), str(playbook), "-e", json.dumps(extra)]
    argv += ["-e", json.dumps({"result_file": str(result_file), "ansible_python_interpreter": sys.executable})]
    proc = subprocess.run(argv + list(flags), env=env, capture_output=True, text=True, check=False)
    if fails:
        assert proc.returncode == 2, proc.stdout[-3000:] + proc.stderr[-3000:]
        return proc.stdout
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(result_file.read_text())


def test_role_installs_crds_idempotently_and_honours_check_mode(bare_apiserver, tmp_path):  # noqa: F811
    info, client = bare_apiserver
    ext = k.ApiextensionsV1Api(client)
    ext.create_custom_resource_definition(foreign_crd("baremetalhosts", "metal3.io", "BareMetalHost", "v1alpha1"))
    store = {"crds_store": {"kind": "kubernetes", "kubeconfig": info["kubeconfig"]}}

    checked = play(tmp_path, store, "--check")
    assert checked["changed"] is True and len(checked["created"]) == len(CUSTOM) - 1
    assert [c.metadata.name for c in ext.list_custom_resource_definition().items] == ["baremetalhosts.metal3.io"]

    first = play(tmp_path, store)
    assert first["changed"] is True
    assert set(first["skipped"]) == {"baremetalhosts.metal3.io"}
    served = {c.metadata.name for c in ext.list_custom_resource_definition().items}
    assert served == CUSTOM
    assert (
        "labels"
        not in json.loads(ext.read_custom_resource_definition("baremetalhosts.metal3.io", _preload_content=False).data)[
            "metadata"
        ]
    )

    again = play(tmp_path, store)
    assert again["changed"] is False and again["created"] == [] and again["updated"] == []


def test_role_fails_naming_a_crd_served_at_other_versions_only_and_writes_nothing(bare_apiserver, tmp_path):  # noqa: F811
    info, client = bare_apiserver
    ext = k.ApiextensionsV1Api(client)
    # A management cluster with an old CAPM3: Metal3Machine served at v1beta1 only.
    ext.create_custom_resource_definition(
        foreign_crd("metal3machines", "infrastructure.cluster.x-k8s.io", "Metal3Machine", "v1beta1")
    )
    store = {"crds_store": {"kind": "kubernetes", "kubeconfig": info["kubeconfig"]}}
    for flags in (("--check",), ()):
        out = play(tmp_path, store, *flags, fails=True)
        assert "CRD metal3machines.infrastructure.cluster.x-k8s.io was installed by another project" in out, out
        assert "serves v1beta1; the collection stores Metal3Machine at infrastructure.cluster.x-k8s.io/v1beta2" in out
        assert "Upgrade CAPM3 (cluster-api-provider-metal3)" in out
    served = [c.metadata.name for c in ext.list_custom_resource_definition().items]
    assert served == ["metal3machines.infrastructure.cluster.x-k8s.io"]


def test_role_with_the_sqlite_store_changes_nothing(tmp_path):
    result = play(tmp_path, {"crds_store": {"kind": "sqlite", "path": str(tmp_path / "state.db")}})
    assert result["changed"] is False and result["created"] == []
