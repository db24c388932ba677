"""cluster_info's engine (capi/describe.py): the tree of a cluster's objects and its text, on a real sqlite store.

The healthy cluster and the one with a machine stuck (no host matching its hostSelector) are brought there by
the engine's own steps (describe_world.py); the stuck machine's line carries the condition its Metal3Machine step
wrote, with its reason and message.
"""

from __future__ import annotations

import datetime
import json

import pytest
from capi_objects import cluster, machine, put
from describe_world import CP, NOW, NS, SECRET_TEXT, WORKERS, build, cells

from ansible_collections.baremetal.capi.plugins.module_utils.capi import describe, describe_text
from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions, names

W0, W1 = WORKERS
NO_HOST = (
    "No available host found: no available host matching rack=r9; 3 BareMetalHost(s) in demo, 0 matching: "
    "h-cp-0 labels do not match; h-w-0 labels do not match; h-w-1 labels do not match"
)


HOST_OK = ("operationalStatus=OK", "provisioned", "4h", "")
READY = ("Ready=True", "Ready", "4h", "")


def healthy_rows(w1_host="h-w-1") -> list[tuple]:
    return [
        ("Cluster/c1", "3/3", "", "3", "3", "InfrastructureReady=True", "InfrastructureReady", "4h", ""),
        ("├─ClusterInfrastructure - Metal3Cluster/c1", "", "", "", "", *READY),
        ("├─ControlPlane - KubeadmControlPlane/c1-cp", "1/1", "", "1", "1", "", "", "", ""),
        (f"│ └─Machine/{CP}", "1", "1", "1", "", *READY),
        (f"│   └─MachineInfrastructure - Metal3Machine/{CP}", "", "", "", "", *READY),
        ("│     └─Host - BareMetalHost/h-cp-0", "", "", "", "", *HOST_OK),
        ("└─Workers", "", "", "", "", "", "", "", ""),
        ("  └─MachineDeployment/c1-md-0", "2/2", "2", "2", "2", "", "", "", ""),
        ("    └─MachineSet/c1-md-0-5d8f9", "2/2", "2", "2", "2", "", "", "", ""),
        (f"      ├─Machine/{W0}", "1", "1", "1", "", *READY),
        (f"      │ └─MachineInfrastructure - Metal3Machine/{W0}", "", "", "", "", *READY),
        ("      │   └─Host - BareMetalHost/h-w-0", "", "", "", "", *HOST_OK),
        (f"      └─Machine/{W1}", "1", "1", "1", "", *READY),
        (f"        └─MachineInfrastructure - Metal3Machine/{W1}", "", "", "", "", *READY),
        (f"          └─Host - BareMetalHost/{w1_host}", "", "", "", "", *HOST_OK),
    ]


def test_a_healthy_cluster_reads_as_clusterctl_describe_prints_it(store):
    build(store)
    tree = describe.describe(store, "c1", NS)
    lines = describe_text.render(tree, NOW)
    assert lines[0].split() == ["NAME", "REPLICAS", "AVAILABLE", "READY", "UP", "TO", "DATE", "STATUS", "REASON",
                                "SINCE", "MESSAGE"]  # fmt: skip
    assert cells(lines) == healthy_rows()
    assert describe_text.failing(tree) == []
    assert lines[3] == lines[3].rstrip() and lines[4].startswith("│ └─Machine/c1-cp-x7k2p ")


def test_a_machine_with_no_host_matching_says_why_on_its_line(store):
    build(store, stuck=True)
    tree = describe.describe(store, "c1", NS)
    lines = describe_text.render(tree, NOW)
    want = healthy_rows()[:12] + [
        (f"      └─Machine/{W1}", "1", "0", "0", "", "InfrastructureReady=False", "InfrastructureNotReady", "4h",
         f"Metal3Machine {W1} is not provisioned yet"),
        (f"        └─MachineInfrastructure - Metal3Machine/{W1}", "", "", "", "", "AssociateBareMetalHost=False",
         "AssociateBareMetalHostFailed", "4h", NO_HOST[: NO_HOST.index(" h-cp-0")]),
        ("", "", "", "", "", "", "", "", NO_HOST[NO_HOST.index("h-cp-0"):]),
    ]  # fmt: skip
    # one Machine less is ready and available: the MachineSet's, the MachineDeployment's and the Cluster's counts
    want[0] = ("Cluster/c1", "3/3", "", "2", "3", "InfrastructureReady=True", "InfrastructureReady", "4h", "")
    want[7] = ("  └─MachineDeployment/c1-md-0", "2/2", "1", "1", "2", "", "", "", "")
    want[8] = ("    └─MachineSet/c1-md-0-5d8f9", "2/2", "1", "1", "2", "", "", "", "")
    assert cells(lines) == want
    # the message goes on under the MESSAGE column, on the line right below the failing object's
    assert lines[-1].lstrip() == NO_HOST[NO_HOST.index("h-cp-0") :]
    assert lines[-1].index("h-cp-0") == lines[0].index("MESSAGE")
    failing = describe_text.failing(tree)
    assert [f["object"] for f in failing] == [f"Machine/{W1}", f"MachineInfrastructure - Metal3Machine/{W1}"]
    stored = conditions.get(store.get("Metal3Machine", W1, NS), names.ASSOCIATE_BMH)
    assert failing[1]["condition"] == {k: stored[k] for k in failing[1]["condition"]}
    assert stored["reason"] == names.ASSOCIATE_BMH_FAILED_REASON and stored["message"] == NO_HOST


class Recording:
    """The store, with the kinds read written down."""

    def __init__(self, inner):
        self.inner, self.kinds = inner, set()

    def get(self, kind, *args, **kwargs):
        self.kinds.add(kind)
        return self.inner.get(kind, *args, **kwargs)

    def list(self, kind, *args, **kwargs):
        self.kinds.add(kind)
        return self.inner.list(kind, *args, **kwargs)


def test_secrets_are_never_read_nor_shown(store):
    build(store, stuck=True)
    spy = Recording(store)
    tree = describe.describe(spy, "c1", NS)
    assert "Secret" not in spy.kinds and "BareMetalHost" in spy.kinds
    text = json.dumps(tree) + "\n".join(describe_text.render(tree, NOW))
    assert SECRET_TEXT not in text and "userData" not in text and "bmc" not in text


def test_missing_references_get_failing_lines_and_orphans_go_under_other(store):
    put(store, cluster("c2", NS))  # its Metal3Cluster was never created
    put(store, machine("lone", "c2", NS))  # no owner, no infrastructure machine
    tree = describe.describe(store, "c2", NS)
    rows = cells(describe_text.render(tree, NOW))
    assert rows[1][:1] + rows[1][5:7] == ("├─ClusterInfrastructure - Metal3Cluster/c2", "Exists=False", "NotFound")
    assert rows[1][8] == "Metal3Cluster demo/c2 not found"
    assert [r[0] for r in rows[2:]] == [
        "└─Workers",
        "  └─Other",
        "    └─Machine/lone",
        "      └─MachineInfrastructure - Metal3Machine/lone",
    ]
    assert rows[4][1:] == ("1", "0", "0", "", "", "", "", "")  # never reconciled: no condition to show yet
    assert [f["object"] for f in describe_text.failing(tree)] == [
        "ClusterInfrastructure - Metal3Cluster/c2",
        "MachineInfrastructure - Metal3Machine/lone",
    ]


def test_an_unknown_cluster_is_an_error_naming_it(store):
    with pytest.raises(Invalid) as info:
        describe.describe(store, "nope", NS)
    assert "Cluster demo/nope not found" in str(info.value) and info.value.field == "cluster"


def _cond(ctype, status, reason="", message=""):
    return {"type": ctype, "status": status, "reason": reason, "message": message}


@pytest.mark.parametrize(
    "kind, conds, want, failing",
    [
        # the summary condition when nothing fails: Available for these kinds, Ready for the rest
        ("MachineDeployment", [_cond("Ready", "True"), _cond("Available", "True")], "Available", False),
        ("Machine", [_cond("Available", "True"), _cond("Ready", "True")], "Ready", False),
        # the most specific failing one: not the summary, and with a message
        ("Machine", [_cond("Ready", "False", "NotReady", "x not true"), _cond("NodeReady", "False"),
                     _cond("InfrastructureReady", "False", "InfrastructureNotReady", "m3m not provisioned")],
         "InfrastructureReady", True),
        ("Machine", [_cond("NodeReady", "False"), _cond("Ready", "False", "NotReady")], "Ready", True),
        # negative polarity: True is the bad state, False is not failing
        ("Machine", [_cond("Ready", "True"), _cond("Deleting", "True", "DrainingNode", "draining n1")],
         "Deleting", True),
        ("Machine", [_cond("Paused", "False", "NotPaused"), _cond("Ready", "True")], "Ready", False),
        ("KubeadmControlPlane", [_cond("RollingOut", "False", "NotRollingOut")], None, False),
        # no summary: an Unknown one, then a True one
        ("Cluster", [_cond("InfrastructureReady", "True"), _cond("X", "Unknown")], "X", False),
        ("Cluster", [_cond("InfrastructureReady", "True")], "InfrastructureReady", False),
        ("MachineSet", [], None, False),
    ],
)  # fmt: skip
def test_which_condition_a_line_shows(kind, conds, want, failing):
    cond, is_failing = describe.pick({"kind": kind, "status": {"conditions": conds}})
    assert (cond or {}).get("type") == want and is_failing is failing


def test_a_maas_cluster_shows_each_machines_maas_machine(store):
    put(store, cluster("m1", NS, infra_kind="MaasCluster"))
    mc = {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "MaasCluster",
          "metadata": {"name": "m1", "namespace": NS}, "spec": {"dnsDomain": "maas"}}  # fmt: skip
    put(store, {**mc, "status": {"conditions": [_cond("LoadBalancerReady", "True", "LoadBalancerReady")]}})
    for name, system_id, state, deployed in (
        ("m1-a", "abc123", "Deployed", _cond(names.MAAS_MACHINE_DEPLOYED, "True", names.MAAS_MACHINE_DEPLOYED_REASON)),
        ("m1-b", "def456", "Failed deployment", _cond(names.MAAS_MACHINE_DEPLOYED, "False",
                                                      names.MAAS_MACHINE_DEPLOY_FAILED_REASON, "deploy failed")),
    ):  # fmt: skip
        put(store, machine(name, "m1", NS, infra_kind="MaasMachine"))
        mm = {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "MaasMachine",
              "metadata": {"name": name, "namespace": NS}, "spec": {"systemID": system_id}}  # fmt: skip
        put(store, {**mm, "status": {"machineState": state, "machinePowered": state == "Deployed",
                                     "hostname": f"node-{system_id}", "conditions": [deployed]}})  # fmt: skip
    tree = describe.describe(store, "m1", NS)
    rows = cells(describe_text.render(tree, NOW))
    by_name = {r[0].lstrip("│├└─ "): r for r in rows}
    assert by_name["ClusterInfrastructure - MaasCluster/m1"][5] == "LoadBalancerReady=True"
    assert by_name["MAAS machine - abc123"][5:7] == ("machineState=Deployed", "PoweredOn")
    assert by_name["MAAS machine - abc123"][8] == "node-abc123"
    assert by_name["MachineInfrastructure - MaasMachine/m1-b"][5:9:3] == ("MachineDeployed=False", "deploy failed")
    assert by_name["MAAS machine - def456"][5:7] == ("machineState=Failed deployment", "PoweredOff")
    assert [f["object"] for f in describe_text.failing(tree)] == [
        "MachineInfrastructure - MaasMachine/m1-b",
        "MAAS machine - def456",
    ]


@pytest.mark.parametrize(
    "seconds, want",
    [(-5, "<invalid>"), (0, "0s"), (119, "119s"), (150, "2m30s"), (600, "10m"), (3 * 3600, "3h"),
     (5 * 3600 + 60, "5h1m"), (30 * 3600, "30h"), (3 * 86400 + 3600, "3d1h"), (30 * 86400, "30d"),
     (3 * 365 * 86400 + 86400, "3y1d"), (9 * 365 * 86400, "9y")],
)  # fmt: skip
def test_since_reads_as_kubectl_ages(seconds, want):
    assert describe_text.human_duration(seconds) == want


def test_long_messages_wrap_at_100_columns_keeping_line_breaks():
    text = " ".join(["word"] * 40) + "\n* item " + " ".join(["x"] * 60)
    lines = describe_text.format_paragraph(text)
    assert all(len(line) <= 100 for line in lines) and len(lines) == 4
    assert lines[2].startswith("* item") and lines[3].startswith("  x")
    assert describe_text.format_paragraph("") == [""]


def test_since_of_an_unparseable_time_is_blank():
    tree = describe.virtual("x", condition={"type": "Ready", "status": "True", "lastTransitionTime": "yesterday"})
    assert cells(describe_text.render(tree, datetime.datetime.now(datetime.UTC)))[0][7] == ""
