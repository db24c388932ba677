"""``format: ignition`` is refused before anything is written: the collection renders cloud-config only,
and cloud-config labelled ignition would not boot an Ignition host."""

from __future__ import annotations

import pytest
from test_kubeadm import NS, make_cluster, make_machine

from ansible_collections.baremetal.capi.plugins.module_utils.bootstrap import kubeadm
from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid


@pytest.mark.parametrize("fmt", ["ignition", "Ignition", "other"])
def test_non_cloud_config_format_is_refused(store, fmt):
    make_cluster(store)
    _machine, config = make_machine(store, "m0", control_plane=True, spec={"format": fmt})
    with pytest.raises(Invalid) as exc:
        kubeadm.reconcile_config(store, config)
    assert exc.value.obj == f"KubeadmConfig {NS}/m0" and exc.value.field == "spec.format"
    assert "renders cloud-config bootstrap data only" in exc.value.message
    assert store.list("Secret", NS) == []
    assert not (store.get("KubeadmConfig", "m0", NS).get("status") or {}).get("dataSecretName")


def test_cloud_config_format_renders(store):
    make_cluster(store)
    _machine, config = make_machine(store, "m0", control_plane=True, spec={"format": "cloud-config"})
    step = kubeadm.reconcile_config(store, config)
    assert step.data["dataSecretName"] == "m0"
