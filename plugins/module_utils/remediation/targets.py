# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What the reboot strategy powers off and on: a BareMetalHost (Metal3) or a MAAS machine.

The state machine in reboot.py talks to one small adapter:

``resolve(rem, machine) -> dict``  the infrastructure machine and the host it runs on, re-read
``offline(target)``                 a host that is meant to be off (BMH ``spec.online=false``; a MAAS
                                    machine that is not deployed): the remediation fails
``request_off / request_on``        write (or remove) the power-off request on the host object: the
                                    ``reboot.metal3.io/...-remediation-<uid>`` annotation; the record is
                                    the request, so a repeated call never asks twice
``drive(target)``                   carry the request out one step (the host driver's reconcile, or a
                                    MAAS power call when MAAS does not show the wanted power yet)
``powered(target)``                 True / False / None (unknown yet)
``mark_unhealthy(target)``          keep the host from being chosen again
"""

from __future__ import annotations

from ansible_collections.baremetal.capi.plugins.module_utils.capi import refs
from ansible_collections.baremetal.capi.plugins.module_utils.errors import Requeue
from ansible_collections.baremetal.capi.plugins.module_utils.hosts import base as hosts
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta, names
from ansible_collections.baremetal.capi.plugins.module_utils.remediation import common
from ansible_collections.baremetal.capi.plugins.module_utils.store import mutate as rmw


def _mutate(store, kind: str, obj: dict, change) -> dict:
    """Re-read, ``change(obj) -> bool``, write metadata/spec (others write status)."""
    return rmw.mutate(store, kind, meta.name(obj), meta.namespace(obj), change)


def _set_annotation(key: str, value: str | None):
    def change(obj: dict) -> bool:
        ann = obj["metadata"].setdefault("annotations", {})
        if value is None:
            return ann.pop(key, None) is not None
        if ann.get(key) == value:
            return False
        ann[key] = value
        return True

    return change


def _infra(store, machine: dict, kind: str) -> dict:
    ref = (machine.get("spec") or {}).get("infrastructureRef") or {}
    if ref.get("kind") != kind:
        raise Requeue(f"{meta.ref(machine)}: spec.infrastructureRef is not a {kind}", after=30)
    obj = refs.get_or_none(store, kind, ref.get("name"), meta.namespace(machine))
    if obj is None:
        raise Requeue(f"waiting for {kind} {meta.namespace(machine)}/{ref.get('name')}", after=5)
    return obj


class Metal3Target:
    """A BareMetalHost, moved by a host driver (hosts/): ``ironic`` acts on the annotation itself;
    ``external`` (or None) leaves it to whoever moves the host and only reads ``status.poweredOn``."""

    remediation_kind = "Metal3Remediation"
    finalizer = names.METAL3_REMEDIATION_FINALIZER

    def __init__(self, store, driver=None):
        self.store = store
        self.driver = driver

    def resolve(self, rem: dict, machine: dict) -> dict:
        m3m = _infra(self.store, machine, "Metal3Machine")
        value = meta.annotations(m3m).get(names.HOST_ANNOTATION)
        host = refs.get_or_none(self.store, hosts.KIND, (value or "").split("/")[-1], meta.namespace(m3m))
        if host is None:
            raise Requeue(f"{meta.ref(m3m)} has no BareMetalHost (annotation {names.HOST_ANNOTATION})", after=5)
        return {"infra": m3m, "host": host, "name": meta.name(host)}

    def offline(self, target: dict) -> bool:
        return (target["host"].get("spec") or {}).get("online") is False

    def requested(self, rem: dict, target: dict) -> bool:
        return common.power_off_key(rem) in meta.annotations(target["host"])

    def request_off(self, rem: dict, target: dict) -> bool:
        before = target["host"]
        target["host"] = _mutate(
            self.store, hosts.KIND, before, _set_annotation(common.power_off_key(rem), common.POWER_OFF_VALUE)
        )
        return target["host"] is not before

    def request_on(self, rem: dict, target: dict) -> bool:
        before = target["host"]
        target["host"] = _mutate(self.store, hosts.KIND, before, _set_annotation(common.power_off_key(rem), None))
        return target["host"] is not before

    def drive(self, target: dict) -> str:
        if self.driver is not None:
            step = self.driver.reconcile(self.store, target["host"])
            target["host"] = self.store.get(hosts.KIND, meta.name(target["host"]), meta.namespace(target["host"]))
            return step.message
        return ""

    def powered(self, target: dict) -> bool | None:
        return (target["host"].get("status") or {}).get("poweredOn")

    def mark_unhealthy(self, target: dict) -> bool:
        before = target["host"]
        change = _set_annotation(names.UNHEALTHY_ANNOTATION, common.UNHEALTHY_ANNOTATION_VALUE)
        target["host"] = _mutate(self.store, hosts.KIND, before, change)
        return target["host"] is not before

    def describe(self, target: dict) -> dict:
        return {"host": target["name"], "poweredOn": self.powered(target)}


class MaasTarget:
    """A MAAS machine (CAPMAAS has no remediation): the request is an annotation on the MaasMachine,
    carried out with MAAS's power_off (stop_mode hard) / power_on; at the retry limit the machine gets
    the tag ``capi-unhealthy``, which allocation excludes with ``not_tags``."""

    remediation_kind = "MaasRemediation"
    finalizer = names.MAAS_REMEDIATION_FINALIZER

    def __init__(self, store, client, unhealthy_tag: str = common.MAAS_UNHEALTHY_TAG):
        self.store = store
        self.client = client
        self.unhealthy_tag = unhealthy_tag

    def resolve(self, rem: dict, machine: dict) -> dict:
        mm = _infra(self.store, machine, "MaasMachine")
        sid = (mm.get("spec") or {}).get("systemID")
        if not sid:
            raise Requeue(f"{meta.ref(mm)} has no MAAS machine yet (spec.systemID)", after=5)
        m = self.client.read_machine(sid)
        if m is None:
            raise Requeue(f"{meta.ref(mm)}: MAAS has no machine {sid}", after=10)
        return {"infra": mm, "maas": m, "name": m.get("hostname") or sid, "system_id": sid}

    def offline(self, target: dict) -> bool:
        # The MAAS analogue of online=false: the machine is no longer deployed (released, broken, ...)
        return target["maas"].get("status_name") not in names.MAAS_STATES_RUNNING

    def requested(self, rem: dict, target: dict) -> bool:
        return common.power_off_key(rem) in meta.annotations(target["infra"])

    def request_off(self, rem: dict, target: dict) -> bool:
        before = target["infra"]
        change = _set_annotation(common.power_off_key(rem), common.POWER_OFF_VALUE)
        target["infra"] = _mutate(self.store, "MaasMachine", before, change)
        return target["infra"] is not before

    def request_on(self, rem: dict, target: dict) -> bool:
        before = target["infra"]
        target["infra"] = _mutate(self.store, "MaasMachine", before, _set_annotation(common.power_off_key(rem), None))
        return target["infra"] is not before

    def drive(self, target: dict) -> str:
        """One MAAS power call when MAAS does not show the wanted power (a call repeated while MAAS is still
        switching asks for the same state again; it never adds a power cycle)."""
        want_off = any(k.startswith(common.MAAS_POWER_OFF_PREFIX) for k in meta.annotations(target["infra"]))
        state = target["maas"].get("power_state")
        sid = target["system_id"]
        if want_off and state != "off":
            self.client.call(
                f"power off machine {sid}",
                "Machine",
                "power_off",
                system_id=sid,
                stop_mode="hard",
                comment="baremetal.capi remediation",
            )
            target["maas"] = self.client.read_machine(sid) or target["maas"]
            return f"asked MAAS to power {target['name']} off"
        if not want_off and state == "off":
            # only a confirmed "off": power_on on a BMC in error/unknown power-cycles a host that may be up
            self.client.power_on(sid, comment="baremetal.capi remediation")
            target["maas"] = self.client.read_machine(sid) or target["maas"]
            return f"asked MAAS to power {target['name']} on"
        return ""

    def powered(self, target: dict) -> bool | None:
        state = target["maas"].get("power_state")
        return {"on": True, "off": False}.get(state)

    def mark_unhealthy(self, target: dict) -> bool:
        if self.unhealthy_tag in (target["maas"].get("tag_names") or []):
            return False
        from ansible_collections.baremetal.capi.plugins.module_utils.maas.client import MaasNotFound

        try:
            self.client.call(f"read tag {self.unhealthy_tag}", "Tag", "read", name=self.unhealthy_tag)
        except MaasNotFound:
            self.client.call(
                f"create tag {self.unhealthy_tag}",
                "Tags",
                "create",
                name=self.unhealthy_tag,
                comment="machines remediation gave up on; allocation excludes them",
            )
        self.client.call(
            f"tag machine {target['system_id']}",
            "Tag",
            "update_nodes",
            name=self.unhealthy_tag,
            add=target["system_id"],
        )
        return True

    def describe(self, target: dict) -> dict:
        return {
            "machine": target["name"],
            "system_id": target["system_id"],
            "power_state": target["maas"].get("power_state"),
        }
