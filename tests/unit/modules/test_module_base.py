"""The CapiModule base: option fallbacks, no_log, the one error path."""

from __future__ import annotations

import json

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.baremetal.capi.plugins.module_utils.errors import NotFound
from ansible_collections.baremetal.capi.plugins.module_utils.module import CapiModule, mask


def finish(capsys, fn) -> dict:
    with pytest.raises(SystemExit):
        fn()
    return json.loads(capsys.readouterr().out)


def test_k8s_auth_variables_fill_a_kubernetes_store(monkeypatch):
    monkeypatch.setenv("K8S_AUTH_HOST", "https://127.0.0.1:6443")
    monkeypatch.setenv("K8S_AUTH_API_KEY", "token-from-awx")
    monkeypatch.setenv("K8S_AUTH_VERIFY_SSL", "no")
    monkeypatch.setenv("K8S_AUTH_SSL_CA_CERT", "/ca.pem")
    with patch_module_args({"store": {"kind": "kubernetes", "context": "given"}}):
        module = CapiModule(argument_spec={})
    opts = module.store_options()
    assert opts["host"] == "https://127.0.0.1:6443" and opts["api_key"] == "token-from-awx"
    assert opts["validate_certs"] is False and opts["ca_cert"] == "/ca.pem" and opts["context"] == "given"
    assert "token-from-awx" in module.no_log_values


def test_sqlite_is_the_default_and_ignores_k8s_variables(monkeypatch, tmp_path):
    monkeypatch.setenv("K8S_AUTH_HOST", "https://127.0.0.1:6443")
    monkeypatch.setenv("BAREMETAL_CAPI_STORE_PATH", str(tmp_path / "env.db"))
    monkeypatch.delenv("BAREMETAL_CAPI_STORE_KIND", raising=False)
    with patch_module_args({}):
        module = CapiModule(argument_spec={})
    opts = module.store_options()
    assert opts["kind"] == "sqlite" and opts["host"] is None and opts["path"] == str(tmp_path / "env.db")
    assert module.store.path == str(tmp_path / "env.db")
    module.close_store()


@pytest.mark.parametrize(
    "env, kind",
    [
        # AWX's built-in Kubernetes bearer token credential: the store is kubernetes, its connection filled
        ({"K8S_AUTH_HOST": "https://10.0.0.1:6443", "K8S_AUTH_API_KEY": "awx-token"}, "kubernetes"),
        # the kind named in the environment wins
        (
            {
                "K8S_AUTH_HOST": "https://10.0.0.1:6443",
                "K8S_AUTH_API_KEY": "awx-token",
                "BAREMETAL_CAPI_STORE_KIND": "sqlite",
            },
            "sqlite",
        ),  # fmt: skip
        # a kubeconfig variable alone (a developer's shell) selects nothing
        ({"K8S_AUTH_KUBECONFIG": "/nowhere"}, "sqlite"),
    ],
)
def test_awx_kubernetes_credential_selects_the_kubernetes_store(monkeypatch, env, kind):
    for var in ("K8S_AUTH_HOST", "K8S_AUTH_API_KEY", "K8S_AUTH_KUBECONFIG", "BAREMETAL_CAPI_STORE_KIND"):
        monkeypatch.delenv(var, raising=False)
    for var, value in env.items():
        monkeypatch.setenv(var, value)
    with patch_module_args({}):
        module = CapiModule(argument_spec={})
    opts = module.store_options()
    assert opts["kind"] == kind
    if kind == "kubernetes":
        assert opts["host"] == "https://10.0.0.1:6443" and opts["api_key"] == "awx-token"
        assert "awx-token" in module.no_log_values


def test_errors_fail_once_without_secrets(capsys, tmp_path):
    def engine():
        raise NotFound('metal3machines "m" not found', obj="Metal3Machine default/m", field="spec.hostSelector")

    # exit_json / fail_json need the serialization profile patch_module_args sets: stay inside it.
    with patch_module_args({"store": {"path": str(tmp_path / "s.db"), "api_key": "never-shown"}}):
        result = finish(capsys, lambda: CapiModule(argument_spec={}).run(engine))
    assert result["failed"] is True and result["error"] == "NotFound"
    assert result["msg"] == 'Metal3Machine default/m: spec.hostSelector: metal3machines "m" not found'
    assert "never-shown" not in json.dumps(result)


def test_in_check_mode_a_missing_object_is_what_an_earlier_task_would_create(capsys, tmp_path, monkeypatch):
    from ansible.module_utils import _internal

    # as on a target: warnings go into the result (a controller module imported earlier in this process
    # would send them to the display instead)
    monkeypatch.setattr(_internal, "is_controller", False)

    def engine():
        raise NotFound('clusters "c1" not found', obj="Cluster default/c1")

    args = {"store": {"path": str(tmp_path / "s.db")}, "_ansible_check_mode": True}
    with patch_module_args(args):
        result = finish(capsys, lambda: CapiModule(argument_spec={}, supports_check_mode=True).run(engine))
    assert not result.get("failed") and result["changed"] is True
    assert result["check_mode_missing"] == 'Cluster default/c1: clusters "c1" not found'
    assert "check mode: Cluster default/c1" in json.dumps(result["warnings"])


def test_unexpected_exception_is_one_failure(capsys, tmp_path):
    def buggy():
        return {}["missing"]

    with patch_module_args({"store": {"path": str(tmp_path / "s.db")}}):
        result = finish(capsys, lambda: CapiModule(argument_spec={}).run(buggy))
    assert result["failed"] is True and result["msg"] == "unexpected error: KeyError: 'missing'"
    assert "exception" not in result  # the traceback only at -vvv / ANSIBLE_DEBUG


def test_maas_options_fall_back_to_environment(monkeypatch, capsys):
    monkeypatch.setenv("MAAS_URL", "http://127.0.0.1:5240/MAAS")
    monkeypatch.setenv("MAAS_API_KEY", "a:b:c-secret")
    with patch_module_args({}):
        module = CapiModule(argument_spec={}, store=False, maas=True)
    assert module.maas_options() == dict(
        url="http://127.0.0.1:5240/MAAS", api_key="a:b:c-secret", validate_certs=True, ca_bundle=None
    )
    assert "a:b:c-secret" in module.no_log_values
    monkeypatch.setenv("MAAS_CA_BUNDLE", "/etc/ssl/maas-ca.pem")
    with patch_module_args({}):
        module = CapiModule(argument_spec={}, store=False, maas=True)
    assert module.maas_options()["ca_bundle"] == "/etc/ssl/maas-ca.pem"
    monkeypatch.setenv("MAAS_URL", "https://maas.example:5443/MAAS")
    from ansible.module_utils import _internal

    monkeypatch.setattr(_internal, "is_controller", False)  # warnings into the result, as on a target
    with patch_module_args({"maas_validate_certs": False}):
        module = CapiModule(argument_spec={}, store=False, maas=True)
        result = finish(capsys, lambda: module.exit_json(validate=module.maas_options()["validate_certs"]))
    assert result["validate"] is False
    assert "maas_validate_certs=false: the TLS certificate of https://maas.example:5443/MAAS" in json.dumps(
        result["warnings"]
    )
    monkeypatch.setenv("MAAS_URL", "http://127.0.0.1:5240/MAAS")

    monkeypatch.delenv("MAAS_API_KEY")
    with patch_module_args({}):
        result = finish(capsys, CapiModule(argument_spec={}, store=False, maas=True).maas_options)
    assert result["failed"] and "maas_api_key" in result["msg"]


def test_mask_only_touches_secrets():
    objs = [
        {"kind": "Secret", "data": {"a": "eA=="}, "stringData": {"b": "y"}},
        {"kind": "ConfigMap", "data": {"a": "x"}},
    ]
    assert mask(objs) == [
        {
            "kind": "Secret",
            "data": {"a": "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"},
            "stringData": {"b": "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"},
        },
        {"kind": "ConfigMap", "data": {"a": "x"}},
    ]
    assert objs[0]["data"] == {"a": "eA=="}


def test_k8s_auth_variables_do_not_break_the_sqlite_store(monkeypatch, capsys, tmp_path):
    from ansible_collections.baremetal.capi.plugins.modules import object as obj_module

    monkeypatch.setenv("K8S_AUTH_HOST", "https://127.0.0.1:1")
    monkeypatch.setenv("K8S_AUTH_API_KEY", "a-token-value")
    args = {"store": {"path": str(tmp_path / "s.db")}, "kind": "ConfigMap", "name": "c"}
    with patch_module_args(args):
        result = finish(capsys, obj_module.main)
    assert result["changed"] is True and result["object"]["metadata"]["namespace"] == "default"
