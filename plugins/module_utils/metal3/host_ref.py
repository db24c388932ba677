# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The BareMetalHost a Metal3Machine has (its ``metal3.io/BareMetalHost`` annotation): read it, change it,
label its BMC credentials Secret, report it.

Shared by the Metal3Machine's reconcile (metal3/machine.py), its delete (metal3/machine_delete.py) and the
machine info module, which take the store as an argument: none of them calls back into another.
"""

from __future__ import annotations

from ansible_collections.baremetal.capi.plugins.module_utils.capi import refs
from ansible_collections.baremetal.capi.plugins.module_utils.errors import Conflict
from ansible_collections.baremetal.capi.plugins.module_utils.hosts import base as hosts
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta, names
from ansible_collections.baremetal.capi.plugins.module_utils.store import mutate as rmw


def associated_host(store, m3m: dict) -> dict | None:
    """The BareMetalHost of the ``metal3.io/BareMetalHost`` annotation (name part; always our namespace)."""
    value = meta.annotations(m3m).get(names.HOST_ANNOTATION)
    if not value:
        return None
    return refs.get_or_none(store, hosts.KIND, value.split("/")[-1], meta.namespace(m3m))


def mutate_host(store, host: dict, change) -> dict:
    """Re-read, ``change(host) -> bool``, write; retried on Conflict (the host driver writes status meanwhile)."""
    ns, name = hosts.key(host)
    return rmw.mutate(store, hosts.KIND, name, ns, change)


def label_bmc_secret(store, host: dict, cluster_name: str, *, add: bool) -> None:
    """The BMC credentials Secret gets (loses) the cluster-name label, as CAPM3 does for clusterctl move."""
    secret_name = ((host.get("spec") or {}).get("bmc") or {}).get("credentialsName")
    secret = refs.get_or_none(store, "Secret", secret_name, meta.namespace(host))
    if secret is None:
        return
    labels = secret["metadata"].setdefault("labels", {})
    if add and labels.get(names.CLUSTER_NAME_LABEL) != cluster_name:
        labels[names.CLUSTER_NAME_LABEL] = cluster_name
    elif not add and labels.get(names.CLUSTER_NAME_LABEL) == cluster_name:
        del labels[names.CLUSTER_NAME_LABEL]
    else:
        return
    try:
        store.update(secret)
    except Conflict:
        pass  # re-done on the next step


def report(m3m: dict, host: dict | None, **extra) -> dict:
    """A Metal3Machine step's result data: its host, the host's state, the providerID (and ``extra``)."""
    return {
        "host": meta.name(host) if host else None,
        "host_state": hosts.state(host) if host else None,
        "providerID": (m3m.get("spec") or {}).get("providerID"),
        **extra,
    }
