# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A ``kubeadm_bootstrap`` task: the cluster's certificates and kubeconfig Secret, every KubeadmConfig's data
(bootstrap/cluster.py, the loop the convergence loop runs too), and the kubeconfig written out when asked."""

from __future__ import annotations

from ansible_collections.baremetal.capi.plugins.module_utils.bootstrap import cluster as bootstrap
from ansible_collections.baremetal.capi.plugins.module_utils.bootstrap import kubeadm
from ansible_collections.baremetal.capi.plugins.module_utils.model import names


def run(
    store,
    cluster_name: str,
    ns: str,
    *,
    token_ttl: int,
    workload_kubeconfig=None,
    user_data_template=None,
    kubeconfig_dest=None,
    kubeconfig_server=None,
    endpoint_addresses=(),
    check: bool = False,
) -> tuple[bool, dict]:
    """``(changed, result)``: ``configs``, ``certificates_created``, ``kubeconfig_secret`` and, with
    ``kubeconfig_dest``, ``kubeconfig_server``."""
    cluster = store.get("Cluster", cluster_name, ns)
    certs, changed = kubeadm.ensure_certificates(store, cluster, check_mode=check)
    certs_created = changed
    kubeconfig_secret = None
    if kubeadm.endpoint(cluster) is not None:
        changed |= kubeadm.ensure_kubeconfig(store, cluster, certs["ca"], check_mode=check)
        kubeconfig_secret = cluster_name + names.KUBECONFIG_SECRET_SUFFIX
    configs = bootstrap.reconcile_configs(
        store,
        cluster,
        store.list("Machine", ns, {"matchLabels": {names.CLUSTER_NAME_LABEL: cluster_name}}),
        tokens=bootstrap.workload_tokens(store, cluster, workload_kubeconfig),
        token_ttl=token_ttl,
        check=check,
        template=kubeadm.user_data_template(user_data_template),
    )
    changed |= any(c["changed"] for c in configs)
    result = dict(configs=configs, certificates_created=certs_created, kubeconfig_secret=kubeconfig_secret)
    if kubeconfig_dest and kubeconfig_secret:
        wrote, result["kubeconfig_server"] = bootstrap.write_kubeconfig(
            store, cluster_name, ns, kubeconfig_dest, server=kubeconfig_server,
            endpoint_addresses=endpoint_addresses, check=check,
        )  # fmt: skip
        changed |= wrote
    return changed, result
