"""The modules in-process (as Ansible runs them) on a sqlite store and the lab wkube-apiserver."""

from __future__ import annotations


def test_maas_remediation_needs_the_maas_connection(run, store, monkeypatch):
    monkeypatch.delenv("MAAS_URL", raising=False)
    monkeypatch.delenv("MAAS_API_KEY", raising=False)
    from ansible_collections.baremetal.capi.plugins.modules import maas_remediation

    out = run(maas_remediation, {"machines": ["m-0"]})
    assert out["failed"] and "maas_url and maas_api_key required" in out["msg"]


def test_the_remediation_modules_hand_check_mode_to_the_engine():
    from ansible_collections.baremetal.capi.plugins.module_utils.module import remediation_arguments

    params = {"machines": ["m-0"], "namespace": None, "state": "present", "strategy": None, "force": False,
              "fencing": "auto", "workload_kubeconfig": None, "wait": True, "wait_timeout": 60, "wait_sleep": 1.0,
              "workers": 2}  # fmt: skip
    assert remediation_arguments(params, "ns1", True)["check"] is True
    assert remediation_arguments(params, "ns1", False)["check"] is False
    assert remediation_arguments(params, "ns1", False)["ns"] == "ns1"
