"""Pure pieces of the MAAS rules: staticIP checks, the failed-deployment cooldown list, the LXD host choice."""

from __future__ import annotations

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.maas import lxd, machine, network
from ansible_collections.baremetal.capi.plugins.module_utils.model import names


def _mm(spec=None, annotations=None):
    return {"kind": "MaasMachine", "metadata": {"name": "w-0", "namespace": "default", "uid": "ab-cdef-12",
                                                "annotations": annotations or {}}, "spec": spec or {}}  # fmt: skip


def test_static_ip_checked_before_anything():
    assert network.check(_mm()) is None
    assert network.check(_mm({"staticIP": {"ip": "10.0.0.5", "cidr": "10.0.0.0/24"}})) == {
        "ip": "10.0.0.5", "cidr": "10.0.0.0/24"}  # fmt: skip
    for static, field in (({"ip": "10.0.1.5", "cidr": "10.0.0.0/24"}, "spec.staticIP.ip"),
                          ({"ip": "nope", "cidr": "10.0.0.0/24"}, "spec.staticIP.ip"),
                          ({"ip": "10.0.0.5", "cidr": "10.0.0/33"}, "spec.staticIP.cidr")):  # fmt: skip
        with pytest.raises(Invalid) as err:
            network.check(_mm({"staticIP": static}))
        assert err.value.field == field


def test_failed_machines_kept_for_the_cooldown_only():
    now = 1_000_000
    recent, old = now - 10, now - names.MAAS_FAILED_COOLDOWN - 1
    mm = _mm(annotations={names.MAAS_FAILED_MACHINES_ANNOTATION: f"abc123@{recent},old999@{old},junk"})
    assert machine.failed_machines(mm, now) == {"abc123": float(recent)}
    assert machine.failed_machines(_mm(), now) == {}


def test_lxd_vm_name_and_host_choice():
    assert lxd.vm_name(_mm()) == "vm-w-0-abcde"
    assert lxd.vm_name(_mm(annotations={names.MAAS_VM_NAME_ANNOTATION: "given"})) == "given"
    spec = {"minCPU": 2, "minMemory": 4096, "lxd": {"enabled": True, "vmConfig": {"diskSize": 20}}}
    assert lxd.disk_gb(spec) == 20 and lxd.disk_gb({**spec, "minDiskSize": 80}) == 80

    def host(i, zone, cores, memory, disk_gb):
        return {"id": i, "name": f"h{i}", "zone": {"name": zone}, "pool": {"name": "default"},
                "available": {"cores": cores, "memory": memory, "local_storage": disk_gb * 1000**3}}  # fmt: skip

    hosts = [host(1, "az-1", 4, 8192, 100), host(2, "az-1", 8, 16384, 100), host(3, "az-2", 64, 65536, 100),
             host(4, "az-1", 1, 65536, 100), host(5, "az-1", 8, 65536, 10)]  # fmt: skip
    assert lxd.choose_host(hosts, spec, "az-1")["id"] == 2  # most free memory among those that fit
    assert lxd.choose_host(hosts, spec, None)["id"] == 3
    assert lxd.choose_host(hosts, {**spec, "minCPU": 16}, "az-1") is None
