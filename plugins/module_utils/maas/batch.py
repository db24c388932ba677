# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Many MaasMachines at once: which ones a task names, and the module's result for them."""

from __future__ import annotations

from ansible_collections.baremetal.capi.plugins.module_utils.capi import refs
from ansible_collections.baremetal.capi.plugins.module_utils.capi.infra_machine import owner_machine
from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid, NotFound, Requeue
from ansible_collections.baremetal.capi.plugins.module_utils.maas import dns
from ansible_collections.baremetal.capi.plugins.module_utils.maas.machine import KIND
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta, names


def machine_keys(store, ns: str, name: str | None = None, cluster: str | None = None) -> list[tuple[str, str]]:
    """(namespace, name) of one MaasMachine, or of every MaasMachine of a cluster (label or Machine reference)."""
    if name:
        return [(ns, name)]
    names_ = {meta.name(m) for m in dns.cluster_machines(store, cluster, ns)}
    for machine in store.list("Machine", ns):
        infra = (machine.get("spec") or {}).get("infrastructureRef") or {}
        if (machine.get("spec") or {}).get("clusterName") == cluster and infra.get("kind") == KIND:
            if refs.get_or_none(store, KIND, infra.get("name"), ns) is not None:
                names_.add(infra["name"])
    return [(ns, n) for n in sorted(names_)]


def reconcile_many(mgr, ns, *, name=None, cluster=None, delete=False, check=False, **run) -> dict:
    """What the maas_machine module does: run the machines, then report them and the cluster's DNS record."""
    store = mgr.store
    keys = machine_keys(store, ns, name, cluster)
    before = [refs.get_or_none(store, KIND, n, k) for k, n in keys]
    if name and before[0] is None and not delete:
        raise Invalid(f'MaasMachine "{name}" not found', obj=f"MaasMachine {ns}/{name}")
    if cluster is None:
        labelled = [meta.labels(b).get(names.CLUSTER_NAME_LABEL) for b in before if b]
        owner = owner_machine(store, before[0], check=True) if before and before[0] else None
        cluster = (labelled and labelled[0]) or ((owner or {}).get("spec") or {}).get("clusterName")
    results = {r.key: r for r in mgr.run(keys, delete=delete, check=check, **run)}
    wait = run.get("wait", True)
    machines, after = [], []
    for (k, n), prev in zip(keys, before, strict=True):
        res = results[f"{k}/{n}"]
        obj = refs.get_or_none(store, KIND, n, k) if not check else prev
        after.append(obj)
        data = {key: value for key, value in res.data.items() if key not in ("dns", "traceback")}
        machines.append(
            {
                "name": n,
                "namespace": k,
                "changed": res.changed,
                "failed": res.failed or (wait and not check and not res.done),
                "message": res.message,
                **data,
                "object": obj,
            }
        )
    dns_result = None
    if cluster:
        try:
            dns_result = mgr.maas.reconcile_dns(store, cluster, ns, check=check)
        except (Requeue, NotFound):
            dns_result = None
    return {
        "machines": machines,
        "dns": dns_result,
        "changed": any(m["changed"] for m in machines) or bool(dns_result and dns_result["changed"]),
        "before": before,
        "after": after,
    }
