# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""CABPK over one cluster: every KubeadmConfig of its Machines reconciled, in one loop.

The ``kubeadm_bootstrap`` module and the convergence loop (capi/converge.py) both call
:func:`reconcile_configs`; the Machine controller's part that comes with it (own the config, copy its
``dataSecretName`` to the Machine once the data exists) is done here too, so the infrastructure provider can
use the data in the same round.
"""

from __future__ import annotations

import copy
import os
import socket

from ansible_collections.baremetal.capi.plugins.module_utils.bootstrap import kubeadm
from ansible_collections.baremetal.capi.plugins.module_utils.bootstrap.tokens import WorkloadTokens
from ansible_collections.baremetal.capi.plugins.module_utils.capi import machine as capi_machine
from ansible_collections.baremetal.capi.plugins.module_utils.capi import refs
from ansible_collections.baremetal.capi.plugins.module_utils.capi import workload as wl
from ansible_collections.baremetal.capi.plugins.module_utils.errors import NotFound, Requeue
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta


def workload_tokens(store, cluster: dict, kubeconfig: str | None = None) -> WorkloadTokens | None:
    """The workload cluster's bootstrap-token writer once its control plane is initialized, else None."""
    if not kubeadm.control_plane_initialized(cluster):
        return None
    try:
        text = wl.kubeconfig_text(store, meta.name(cluster), meta.namespace(cluster), kubeconfig)
    except NotFound:
        return None
    # the client (and the kubernetes import under it) only once a token is read or written: a run whose
    # machines all have their Nodes touches no token
    return WorkloadTokens(make_core_v1=lambda: wl.cached_client(text).core_v1())


def reconcile_configs(
    store, cluster: dict, machines: list[dict], *, tokens, token_ttl: int, check: bool, template=None
) -> list[dict]:
    """One entry per KubeadmConfig of the (not deleting) Machines: ``name``, ``machine``, ``changed``,
    ``message``, ``bootstrap`` (init / join / None). A config that waits (Requeue) says why in ``message``.
    """
    ns = meta.namespace(cluster)
    out = []
    for machine in machines:
        if meta.is_deleting(machine):
            continue
        ref = ((machine.get("spec") or {}).get("bootstrap") or {}).get("configRef")
        if not ref or ref.get("kind") != "KubeadmConfig":
            continue
        # The Machine controller first owns its bootstrap config (CABPK finds its Machine by that owner).
        config = refs.take_ownership(store, machine, ref, check=check)
        if config is None:
            continue
        entry = {"name": meta.name(config), "machine": meta.name(machine), "bootstrap": None, "changed": False}
        out.append(entry)
        try:
            step = kubeadm.reconcile_config(
                store, config, tokens=tokens, token_ttl=token_ttl, check_mode=check, user_data_template=template
            )
        except Requeue as exc:
            entry["message"] = exc.message
            continue
        entry.update(changed=step.changed, message=step.message, bootstrap=(step.data or {}).get("bootstrap"))
        # ... and copies status.dataSecretName once the data exists, so the provider can use it this round.
        if not check and not capi_machine.bootstrap_ready(machine):
            fresh = store.get("Machine", meta.name(machine), ns)
            after = copy.deepcopy(fresh)
            if capi_machine.apply_bootstrap(after, store.get("KubeadmConfig", meta.name(config), ns)):
                refs.write(store, fresh, after)
    return out


def _reachable(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=2):
            return True
    except OSError:
        return False


def kubeconfig_server(current: str, server: str | None, endpoint_addresses, reachable=None) -> str:
    """``server`` when given, else the first control-plane address that answers on the endpoint's port, else the
    first address.

    The addresses are what the endpoint's name resolves to (the MAAS DNS record): a client that resolves it would
    reach one of them too, so while no API server answers yet (the first control plane is deployed, its kubeadm
    init still running) the first address stands in - never the name, which this machine may not resolve.
    """
    if server:
        return server
    reachable = reachable or _reachable
    port = int(current.rsplit(":", 1)[1]) if current.count(":") >= 2 else 443
    addresses = [a for a in endpoint_addresses or () if a]
    for address in addresses:
        if reachable(address, port):
            return f"https://{_host(address)}:{port}"
    return f"https://{_host(addresses[0])}:{port}" if addresses else current


def _host(address: str) -> str:
    """An address as the host part of a URL (IPv6 in brackets)."""
    return f"[{address}]" if ":" in address and not address.startswith("[") else address


def write_kubeconfig(store, cluster_name: str, ns: str, dest: str, *, server=None, endpoint_addresses=(), check=False):
    """The ``<cluster>-kubeconfig`` Secret's kubeconfig written to ``dest`` (mode 0600, atomically).

    Returns ``(changed, server)``; ``(False, None)`` while the Secret does not exist.
    """
    import yaml

    try:
        text = wl.kubeconfig_from_store(store, cluster_name, ns)
    except NotFound:
        return False, None
    kubeconfig = yaml.safe_load(text)
    chosen = kubeconfig_server(kubeconfig["clusters"][0]["cluster"]["server"], server, endpoint_addresses)
    kubeconfig["clusters"][0]["cluster"]["server"] = chosen
    out = yaml.safe_dump(kubeconfig, default_flow_style=False)
    try:
        with open(dest, encoding="utf-8") as fh:
            if fh.read() == out:
                return False, chosen
    except OSError:
        pass
    if not check:
        os.makedirs(os.path.dirname(os.path.abspath(dest)), exist_ok=True)
        fd = os.open(dest + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(out)
        os.replace(dest + ".tmp", dest)
    return True, chosen
