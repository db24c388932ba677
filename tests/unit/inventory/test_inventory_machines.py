"""The baremetal.capi.machines inventory plugin over a real sqlite store, run by ansible-inventory.

Machines, Metal3Machines and MaasMachines are created through the store as the machine flows write them; the
plugin is then run as a user runs it (``ansible-inventory -i <file>.machines.yml``) and its groups and host
variables are read back.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ansible_collections.baremetal.capi.plugins.inventory.machines import machine_address
from ansible_collections.baremetal.capi.plugins.module_utils.store.base import open_store

REPO = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent
INFRA = "infrastructure.cluster.x-k8s.io"


def machine(name, cluster, ns, *, control_plane=False, infra_kind="Metal3Machine", deployment=None) -> dict:
    labels = {"cluster.x-k8s.io/cluster-name": cluster}
    if control_plane:
        labels["cluster.x-k8s.io/control-plane"] = ""
    if deployment:
        labels["cluster.x-k8s.io/deployment-name"] = deployment
    return {
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "Machine",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": {
            "clusterName": cluster,
            "version": "v1.31.0",
            "bootstrap": {"dataSecretName": f"{name}-bootstrap"},
            "infrastructureRef": {"apiGroup": INFRA, "kind": infra_kind, "name": name},
        },
    }


def provisioned(store, obj: dict, addresses: list[dict], provider_id: str, node: str, failure_domain=None) -> dict:
    """The Machine as CAPI core leaves it once its infrastructure is provisioned and its Node registered."""
    created = store.create(obj)
    created["spec"]["providerID"] = provider_id
    if failure_domain:
        created["spec"]["failureDomain"] = failure_domain
    created = store.update(created)
    created["status"] = {"addresses": addresses, "phase": "Running", "nodeRef": {"name": node}}
    return store.update_status(created)


@pytest.fixture
def world(tmp_path):
    """Two clusters in two namespaces: metal3 ``m3`` (1 control plane, 2 workers), MAAS ``mc`` (1 + 1)."""
    path = tmp_path / "state.db"
    store = open_store({"kind": "sqlite", "path": str(path)})
    for name in ("m3-cp-0", "m3-md-0", "m3-md-1"):
        store.create(
            {
                "apiVersion": f"{INFRA}/v1beta2",
                "kind": "Metal3Machine",
                "metadata": {
                    "name": name,
                    "namespace": "metal3",
                    "annotations": {"metal3.io/BareMetalHost": f"metal3/host-{name}"},
                },
                "spec": {"image": {"url": "http://192.0.2.1/i.img", "checksum": "x", "checksumType": "sha256"}},
            }
        )
    provisioned(
        store,
        machine("m3-cp-0", "m3", "metal3", control_plane=True),
        [{"type": "ExternalIP", "address": "127.0.0.21"}, {"type": "InternalIP", "address": "127.0.0.11"}],
        "metal3://metal3/host-m3-cp-0/m3-cp-0",
        "node-m3-cp-0",
        failure_domain="rack-a",
    )
    provisioned(
        store,
        machine("m3-md-0", "m3", "metal3", deployment="m3-md"),
        [{"type": "ExternalIP", "address": "127.0.0.22"}],
        "metal3://metal3/host-m3-md-0/m3-md-0",
        "node-m3-md-0",
        failure_domain="rack-b",
    )
    # A worker still provisioning: no address, no providerID yet
    store.create(machine("m3-md-1", "m3", "metal3", deployment="m3-md"))
    for name, cp, sid in (("mc-cp-0", True, "abc123"), ("mc-md-0", False, "def456")):
        store.create(
            {
                "apiVersion": f"{INFRA}/v1beta1",
                "kind": "MaasMachine",
                "metadata": {"name": name, "namespace": "maas"},
                "spec": {"image": "u-1c-133", "systemID": sid, "providerID": f"maas:///zone-a/{sid}"},
            }
        )
        provisioned(
            store,
            machine(name, "mc", "maas", control_plane=cp, infra_kind="MaasMachine", deployment=None if cp else "mc-md"),
            [{"type": "InternalIP", "address": "127.0.0.3" + ("1" if cp else "2")}],
            f"maas:///zone-a/{sid}",
            f"node-{name}",
        )
    yield store, path
    store.close()


def inventory(tmp_path, config: dict, *args: str, name="test.capi.machines.yml") -> dict:
    src = tmp_path / name
    src.write_text(yaml.safe_dump({"plugin": "baremetal.capi.machines", **config}))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(REPO / "build"), ANSIBLE_INVENTORY_UNPARSED_FAILED="true")
    env.pop("BAREMETAL_CAPI_STORE_PATH", None)
    proc = subprocess.run(
        [str(BIN / "ansible-inventory"), "-i", str(src), "--list", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return unwrap(json.loads(proc.stdout))


def unwrap(value):
    """ansible-inventory's legacy output profile marks strings ``{"__ansible_unsafe": ...}``."""
    if isinstance(value, dict):
        if set(value) == {"__ansible_unsafe"}:
            return value["__ansible_unsafe"]
        return {k: unwrap(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unwrap(v) for v in value]
    return value


def hosts(inv: dict, group: str) -> set[str]:
    return set(inv.get(group, {}).get("hosts", []))


def test_address_prefers_internal_then_external():
    both = {"status": {"addresses": [{"type": "ExternalIP", "address": "e"}, {"type": "InternalIP", "address": "i"}]}}
    assert machine_address(both) == "i"
    assert (
        machine_address(
            {"status": {"addresses": [{"type": "Hostname", "address": "h"}, {"type": "ExternalIP", "address": "e"}]}}
        )
        == "e"
    )
    assert machine_address({"status": {}}) is None


def test_every_machine_grouped_by_cluster_and_role(world, tmp_path):
    _store, path = world
    inv = inventory(tmp_path, {"store": {"path": str(path)}})
    assert hosts(inv, "cluster_m3") == {"m3-cp-0", "m3-md-0", "m3-md-1"}
    assert hosts(inv, "cluster_mc") == {"mc-cp-0", "mc-md-0"}
    assert hosts(inv, "control_plane") == {"m3-cp-0", "mc-cp-0"}
    assert hosts(inv, "workers") == {"m3-md-0", "m3-md-1", "mc-md-0"}
    assert hosts(inv, "m3_control_plane") == {"m3-cp-0"}
    assert hosts(inv, "mc_workers") == {"mc-md-0"}
    assert hosts(inv, "namespace_maas") == {"mc-cp-0", "mc-md-0"}

    hv = inv["_meta"]["hostvars"]
    cp = hv["m3-cp-0"]
    assert cp["ansible_host"] == "127.0.0.11"  # InternalIP wins over the ExternalIP listed first
    assert cp["capi_provider_id"] == "metal3://metal3/host-m3-cp-0/m3-cp-0"
    assert cp["capi_phase"] == "Running"
    assert cp["capi_node_name"] == "node-m3-cp-0"
    assert cp["capi_host"] == "metal3/host-m3-cp-0"
    assert cp["capi_system_id"] is None
    assert cp["capi_infrastructure"] == {"kind": "Metal3Machine", "name": "m3-cp-0"}
    assert cp["capi_role"] == "control_plane"
    assert cp["capi_failure_domain"] == "rack-a"
    assert hv["m3-md-0"]["ansible_host"] == "127.0.0.22"
    assert hv["m3-md-0"]["capi_deployment"] == "m3-md"
    # Not provisioned yet: listed, but nothing to connect to
    assert "ansible_host" not in hv["m3-md-1"]
    assert hv["m3-md-1"]["capi_provider_id"] is None
    assert hv["mc-md-0"]["capi_system_id"] == "def456"
    assert hv["mc-md-0"]["capi_host"] is None
    assert hv["mc-cp-0"]["ansible_host"] == "127.0.0.31"


def test_cluster_namespace_and_label_filters(world, tmp_path):
    _store, path = world
    inv = inventory(tmp_path, {"store": {"path": str(path)}, "clusters": ["mc"]})
    assert set(inv["_meta"]["hostvars"]) == {"mc-cp-0", "mc-md-0"}
    inv = inventory(tmp_path, {"store": {"path": str(path)}, "namespaces": ["metal3"]})
    assert set(inv["_meta"]["hostvars"]) == {"m3-cp-0", "m3-md-0", "m3-md-1"}
    inv = inventory(
        tmp_path, {"store": {"path": str(path)}, "label_selector": "cluster.x-k8s.io/deployment-name=m3-md"}
    )
    assert set(inv["_meta"]["hostvars"]) == {"m3-md-0", "m3-md-1"}
    inv = inventory(tmp_path, {"store": {"path": str(path)}, "clusters": ["nope"]})
    assert inv["_meta"]["hostvars"] == {}


def test_store_path_from_the_environment(world, tmp_path, monkeypatch):
    _store, path = world
    src = tmp_path / "env.machines.yml"
    src.write_text("plugin: baremetal.capi.machines\n")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(REPO / "build"), BAREMETAL_CAPI_STORE_PATH=str(path))
    proc = subprocess.run(
        [str(BIN / "ansible-inventory"), "-i", str(src), "--graph", "cluster_mc"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert "mc-cp-0" in proc.stdout and "mc-md-0" in proc.stdout


def test_deleting_machines_left_out_unless_asked(world, tmp_path):
    store, path = world
    obj = store.get("Machine", "m3-md-0", "metal3")
    obj["metadata"]["finalizers"] = ["machine.cluster.x-k8s.io"]
    store.update(obj)
    store.delete("Machine", "m3-md-0", "metal3")
    assert "m3-md-0" not in inventory(tmp_path, {"store": {"path": str(path)}})["_meta"]["hostvars"]
    inv = inventory(tmp_path, {"store": {"path": str(path)}, "include_deleting": True})
    assert "m3-md-0" in inv["_meta"]["hostvars"]


def test_hostnames_node_and_namespaced(world, tmp_path):
    _store, path = world
    inv = inventory(tmp_path, {"store": {"path": str(path)}, "hostnames": "node"})
    # The provisioning worker has no Node yet: it keeps its Machine name
    assert set(inv["_meta"]["hostvars"]) >= {"node-m3-cp-0", "node-mc-md-0", "m3-md-1"}
    inv = inventory(tmp_path, {"store": {"path": str(path)}, "hostnames": "namespaced"})
    assert "maas.mc-cp-0" in inv["_meta"]["hostvars"]


def test_compose_and_keyed_groups(world, tmp_path):
    _store, path = world
    config = {
        "store": {"path": str(path)},
        "compose": {"ansible_user": "'ubuntu'", "capi_short": "capi_machine.split('-')[-1]"},
        "keyed_groups": [{"key": "capi_failure_domain", "prefix": "fd"}],
        "groups": {"maas_provider": "capi_system_id is not none"},
    }
    inv = inventory(tmp_path, config)
    assert hosts(inv, "fd_rack_a") == {"m3-cp-0"}
    assert hosts(inv, "fd_rack_b") == {"m3-md-0"}
    assert hosts(inv, "maas_provider") == {"mc-cp-0", "mc-md-0"}
    assert inv["_meta"]["hostvars"]["m3-md-0"]["ansible_user"] == "ubuntu"
    assert inv["_meta"]["hostvars"]["m3-md-0"]["capi_short"] == "0"


def test_cache_serves_the_last_read_until_flushed(world, tmp_path):
    store, path = world
    config = {
        "store": {"path": str(path)},
        "cache": True,
        "cache_plugin": "ansible.builtin.jsonfile",
        "cache_connection": str(tmp_path / "cache"),
    }
    assert "mc-md-0" in inventory(tmp_path, config)["_meta"]["hostvars"]
    assert any((tmp_path / "cache").iterdir())
    store.delete("Machine", "mc-md-0", "maas")
    # From the cache: the deleted machine is still listed
    assert "mc-md-0" in inventory(tmp_path, config)["_meta"]["hostvars"]
    # --flush-cache reads the store again
    assert "mc-md-0" not in inventory(tmp_path, config, "--flush-cache")["_meta"]["hostvars"]


def test_file_name_must_name_the_plugin(world, tmp_path):
    _store, path = world
    src = tmp_path / "inventory.yml"
    src.write_text(yaml.safe_dump({"plugin": "baremetal.capi.machines", "store": {"path": str(path)}}))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(REPO / "build"), ANSIBLE_INVENTORY_UNPARSED_FAILED="true")
    proc = subprocess.run(
        [str(BIN / "ansible-inventory"), "-i", str(src), "--list"], capture_output=True, text=True, env=env
    )
    assert proc.returncode != 0


def test_bad_store_option_fails_with_its_name(tmp_path):
    src = tmp_path / "bad.machines.yml"
    src.write_text(yaml.safe_dump({"plugin": "baremetal.capi.machines", "store": {"kind": "sqlite", "host": "x"}}))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(REPO / "build"), ANSIBLE_INVENTORY_UNPARSED_FAILED="true")
    proc = subprocess.run(
        [str(BIN / "ansible-inventory"), "-i", str(src), "--list"], capture_output=True, text=True, env=env
    )
    assert proc.returncode != 0
    assert "apply to the kubernetes store only" in proc.stderr
