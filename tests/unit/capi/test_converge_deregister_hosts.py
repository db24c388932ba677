"""Cluster deletion with its hosts (deprovision_cluster.yml with capi_deregister_hosts): each BareMetalHost a
deleted Machine consumed is deleted in the same loop as soon as that Machine is gone; a host of the list that
no Machine consumed is left to the task after the loop; a stop_when does not end the loop before they are gone."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "metal3_machine"))

from flow_world import add_machine, host_of, make_world, manager, play_bmo_available  # noqa: E402

from ansible_collections.baremetal.capi.plugins.module_utils.capi import converge_task  # noqa: E402
from ansible_collections.baremetal.capi.plugins.module_utils.capi.converge import Converger  # noqa: E402
from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid, NotFound  # noqa: E402
from ansible_collections.baremetal.capi.plugins.module_utils.model import names  # noqa: E402


def _deleting_workers(store) -> dict[str, str]:
    """Workers w1 and w2 on hosts of their own, deprovisioned (BMO played), their Machines being deleted; the
    control-plane Machine cp-keep (no host) stays. Returns Machine -> host."""
    make_world(store, n_hosts=3)
    mgr = manager(store)
    hosts = {}
    for name in ("w1", "w2"):
        add_machine(store, name)
        mgr.step(name, "default")
        hosts[name] = host_of(store, name)
        assert hosts[name], f"{name} got no host"
        w = store.get("Machine", name, "default")
        w["metadata"]["finalizers"] = [names.MACHINE_FINALIZER]
        store.update(w)
        play_bmo_available(store, hosts[name])
        store.delete("Machine", name, "default")
    return hosts


def _exists(store, name: str) -> bool:
    try:
        store.get("BareMetalHost", name, "default")
        return True
    except NotFound:
        return False


def test_each_consumed_host_is_deleted_once_its_machine_is_gone(store):
    hosts = _deleting_workers(store)
    spare = ({"h0", "h1", "h2"} - set(hosts.values())).pop()
    seen = []

    def progress(row, _timing):
        seen.append((row["machine"], row["role"], row["state"]))

    conv = Converger(store, manager(store), "c1", "default", infra_kind="Metal3Machine",
                     deregister_hosts=["h0", "h1", "h2"])  # fmt: skip
    report = conv.converge(timeout=30, poll=0.2, progress=progress, until=converge_task.workers_deleted)
    assert not report["timed_out"]
    assert report["hosts_deleted"] == sorted(hosts.values())
    assert not any(_exists(store, h) for h in hosts.values())
    assert _exists(store, spare)  # no Machine released it: the deregister task after the loop deletes it
    for machine, host in hosts.items():
        # the host's deletion follows its Machine's, in the progress lines too
        assert seen.index((machine, "worker", "Deleted")) < seen.index((host, "host", "Deleted"))
    params = {"cluster": "c1", "wait": True, "wait_timeout": 30, "stop_when": "workers_deleted"}
    result, failed = converge_task.outcome(params, "default", report, check_mode=False)
    assert failed is None and result["hosts_deleted"] == sorted(hosts.values())


def test_without_the_list_no_host_is_deleted(store):
    hosts = _deleting_workers(store)
    conv = Converger(store, manager(store), "c1", "default", infra_kind="Metal3Machine")
    report = conv.converge(timeout=30, poll=0.2, until=converge_task.workers_deleted)
    assert report["hosts_deleted"] == []
    assert all(_exists(store, h) for h in hosts.values())
    # released: no consumer, back to be chosen
    assert not any(store.get("BareMetalHost", h, "default")["spec"].get("consumerRef") for h in hosts.values())


def test_a_maas_cluster_has_no_hosts_to_deregister(store):
    make_world(store, n_hosts=0)
    params = {"cluster": "c1", "provider": "maas", "workers": 8, "deregister_hosts": ["h0"], "wait": True}
    with pytest.raises(Invalid) as err:
        converge_task.run(params, store, "default", maas_options=dict, check_mode=False)
    assert err.value.field == "deregister_hosts"
