"""The two action plugins (cluster_machines, baremetalhost) through ansible-playbook: the engine call and its
error path (module.py controller_call, the same as CapiModule.errors for a module), on a sqlite store."""

from __future__ import annotations

import json

from ansible_collections.baremetal.capi.plugins.module_utils.store.base import open_store
from tests.unit.hosts.test_baremetalhost_module import PASSWORD, entry
from tests.unit.roles.test_role_store import run_play


def test_the_action_plugins_call_the_engine_and_report_its_errors(tmp_path):
    store = {"kind": "sqlite", "path": str(tmp_path / "state.db"), "namespace": "lab"}
    host = entry()
    out = tmp_path / "results.json"
    tasks = [
        {
            "name": "a plan for a cluster an earlier task would create",
            "baremetal.capi.cluster_machines": {"cluster": "nope", "store": store, "provider": "metal3"},
            "check_mode": True,
            "register": "planned",
        },
        {
            "name": "the same cluster for real",
            "baremetal.capi.cluster_machines": {"cluster": "nope", "store": store, "provider": "metal3"},
            "register": "missing",
            "ignore_errors": True,
        },
        {
            "name": "a host, with the external driver",
            "baremetal.capi.baremetalhost": {"hosts": [host], "host_driver": "external", "store": store},
            "register": "registered",
        },
        {
            "name": "the results",
            "ansible.builtin.copy": {
                "dest": str(out),
                "content": "{{ {'planned': planned, 'missing': missing, 'registered': registered} | to_json }}",
            },
        },
    ]
    proc = run_play(tmp_path, tasks)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-3000:]
    results = json.loads(out.read_text())

    planned = results["planned"]
    assert planned["changed"] is True and not planned.get("failed")
    assert "nope" in planned["check_mode_missing"] and planned["msg"].startswith("would act once it exists")
    assert "an earlier task would create it" in proc.stdout + proc.stderr

    missing = results["missing"]
    assert missing["failed"] is True and missing["error"] == "NotFound" and "nope" in missing["msg"]

    registered = results["registered"]
    assert registered["changed"] is True and not registered.get("failed")
    assert PASSWORD not in proc.stdout + json.dumps(registered)
    s = open_store({"kind": "sqlite", "path": store["path"]})
    try:
        assert s.get("BareMetalHost", "node-0", "lab")["spec"]["bmc"]["credentialsName"] == "node-0-bmc-secret"
    finally:
        s.close()
