"""The modules in-process (as Ansible runs them) on a sqlite store and the lab wkube-apiserver."""

from __future__ import annotations


def test_maas_remediation_needs_the_maas_connection(run, store, monkeypatch):
    monkeypatch.delenv("MAAS_URL", raising=False)
    monkeypatch.delenv("MAAS_API_KEY", raising=False)
    from ansible_collections.baremetal.capi.plugins.modules import maas_remediation

    out = run(maas_remediation, {"machines": ["m-0"]})
    assert out["failed"] and "maas_url and maas_api_key required" in out["msg"]
