# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Reading MaasMachines with the live state of their MAAS machines (maas_machine_info)."""

from __future__ import annotations

from ansible_collections.baremetal.capi.plugins.module_utils import runner
from ansible_collections.baremetal.capi.plugins.module_utils.bootstrap import certificates
from ansible_collections.baremetal.capi.plugins.module_utils.capi import refs
from ansible_collections.baremetal.capi.plugins.module_utils.maas import state
from ansible_collections.baremetal.capi.plugins.module_utils.maas.batch import machine_keys
from ansible_collections.baremetal.capi.plugins.module_utils.maas.client import MaasAuthError
from ansible_collections.baremetal.capi.plugins.module_utils.maas.machine import KIND

FIELDS = ("system_id", "hostname", "fqdn", "status_name", "power_state", "ip_addresses", "tag_names", "owner")


def summary(m: dict | None) -> dict | None:
    if m is None:
        return None
    out = {k: m.get(k) for k in FIELDS}
    out["zone"] = (m.get("zone") or {}).get("name")
    out["pool"] = (m.get("pool") or {}).get("name")
    return out


def machines(store, client, ns: str, *, name=None, cluster=None, workers=8) -> list[dict]:
    keys = machine_keys(store, ns, name, cluster)
    objs = {k: refs.get_or_none(store, KIND, k[1], k[0]) for k in keys}

    refused = []

    def one(key):
        obj = objs[key]
        sid = state.system_id_of(((obj or {}).get("spec") or {}).get("providerID"))
        try:
            live = client.read_machine(sid) if sid else None
        except MaasAuthError as exc:
            refused.append(exc)
            raise
        return runner.Step(done=True, data={"maas": summary(live)})

    results = runner.run(keys, one, key=lambda k: f"{k[0]}/{k[1]}", workers=workers, wait=False)
    if refused:  # the key is wrong for every machine: one clear error, not one per machine
        raise refused[0]
    out = []
    for key, res in zip(keys, results, strict=True):
        if objs[key] is None:
            continue
        item = {"name": key[1], "namespace": key[0], "object": objs[key], "maas": res.data.get("maas")}
        owner = refs.owner_of_kind(objs[key], "Machine")
        machine = refs.get_or_none(store, "Machine", owner["name"], key[0]) if owner else None
        item.update(certificates.report(store, machine) if machine else {"caExpiry": None, "certificatesExpiry": None})
        if res.failed:
            item["error"] = res.message
        out.append(item)
    return out
