# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The BareMetalHost a Metal3Machine has (its ``metal3.io/BareMetalHost`` annotation): read it, change it.

Shared by the Metal3Machine's reconcile, its delete and the machine info module.
"""

from __future__ import annotations

from ansible_collections.baremetal.capi.plugins.module_utils.capi import refs
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
