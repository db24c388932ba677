#!/usr/bin/python
# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# The Apache License 2.0 is compatible with the GNU General Public License version 3 (GPLv3).

from __future__ import annotations

DOCUMENTATION = r"""
module: kubeadm_bootstrap
short_description: Kubeadm bootstrap data for a cluster's machines, as Cluster API's kubeadm bootstrap provider
version_added: 0.1.0
description:
  - Plays CABPK (and the certificate duties of the KubeadmControlPlane) for one Cluster.
  - The cluster's CA key pairs (Secrets C(<cluster>-ca), C(-etcd), C(-proxy), C(-sa)) are created once and reused
    afterwards (bring your own by creating them first); the C(<cluster>-kubeconfig) Secret (key C(value)) is made
    from the CA once the Cluster has a C(spec.controlPlaneEndpoint).
  - Every KubeadmConfig of the cluster's Machines without data gets it - C(kubeadm init) for the first control-plane
    Machine (which takes the C(<cluster>-lock) ConfigMap), C(kubeadm join) with the CA key pairs for the other
    control-plane Machines and with a bootstrap token and the CA hash for workers, once the Cluster's
    C(status.initialization.controlPlaneInitialized) is true. The token is written into the workload cluster's
    C(kube-system) and extended while its Machine has no Node, as CABPK's refresh does.
  - The data is stored in the Secret named like the KubeadmConfig (keys C(value) and C(format)), and the
    KubeadmConfig's C(status.dataSecretName) points at it. Data is never regenerated.
  - M(baremetal.capi.cluster_machines) does the same in each of its rounds; this module is for a step of its own
    (before machines exist, to have the kubeconfig; or to render with O(user_data_template)).
  - Optionally writes the cluster's admin kubeconfig to a file (O(kubeconfig_dest)), with the API server reached at
    another address than the endpoint's name when this machine cannot resolve it (a MAAS DNS name served by MAAS's
    own DNS).
author:
  - baremetal.capi contributors (!UNKNOWN)
extends_documentation_fragment:
  - baremetal.capi.store
  - baremetal.capi.namespace
  - baremetal.capi.attributes.no_diff
options:
  cluster:
    description: The Cluster.
    type: str
    required: true
  namespace:
    description: Its namespace. Defaults to O(store.namespace), then V(default).
    type: str
  token_ttl:
    description: Seconds a bootstrap token lives; extended while machines wait for their Node (CABPK's default is 900).
    type: int
    default: 14400
  workload_kubeconfig:
    description: A kubeconfig (text or path) for the workload cluster instead of the C(<cluster>-kubeconfig) Secret.
    type: str
  user_data_template:
    description:
      - Your own user data instead of the rendered cloud-config. A Python C(string.Template) (so that cloud-init's
        own C({{ ds.meta_data.* }}) passes untouched) with C($kubeadm_user_data) (the cloud-config CABPK would have
        written), C($machine), C($cluster), C($namespace) and C($role) (C(init), C(join-control-plane), C(join)).
    type: str
  kubeconfig_dest:
    description: Also write the cluster's admin kubeconfig to this file (mode 0600), once the Secret exists.
    type: path
  kubeconfig_server:
    description: The API server URL to write in O(kubeconfig_dest) instead of the one in the Secret.
    type: str
  endpoint_addresses:
    description:
      - Addresses the endpoint's name stands for (for example the MAAS DNS record's, from M(baremetal.capi.maas_dns)).
        The first one that accepts a connection on the endpoint's port becomes the server in O(kubeconfig_dest), as a
        client resolving the name would reach it; while none answers yet, the first one. Ignored when
        O(kubeconfig_server) is set.
    type: list
    elements: str
    default: []
notes:
  - The kubeconfig holds a client key of C(system:masters); O(kubeconfig_dest) is written with mode 0600.
seealso:
  - module: baremetal.capi.cluster_machines
"""

EXAMPLES = r"""
- name: Cluster CAs and the kubeconfig Secret, before any machine
  baremetal.capi.kubeadm_bootstrap:
    cluster: demo
    namespace: demo
    kubeconfig_dest: ~/.kube/demo.kubeconfig

- name: Wrap the kubeadm data in your own multi-part user data
  baremetal.capi.kubeadm_bootstrap:
    cluster: demo
    namespace: demo
    user_data_template: |
      #cloud-config
      # machine $machine of $cluster ($role)
      $kubeadm_user_data
"""

RETURN = r"""
configs:
  description: One entry per KubeadmConfig of the cluster's Machines.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: The KubeadmConfig (and bootstrap Secret) name.
      type: str
    machine:
      description: The Machine.
      type: str
    bootstrap:
      description: V(init), V(join-control-plane) or V(join) when rendered in this run.
      type: str
    changed:
      description: Whether data was rendered or the token extended.
      type: bool
    message:
      description: What happened, or why the config waits.
      type: str
certificates_created:
  description: Whether the cluster CA Secrets were (would be) created.
  returned: always
  type: bool
kubeconfig_secret:
  description: The name of the C(<cluster>-kubeconfig) Secret, when it exists (or would).
  returned: always
  type: str
kubeconfig_server:
  description: The server written in O(kubeconfig_dest).
  returned: when O(kubeconfig_dest) is written
  type: str
"""

from ansible_collections.baremetal.capi.plugins.module_utils.module import CapiModule, namespace_argument_spec  # noqa: E402


def main():
    module = CapiModule(
        argument_spec=dict(
            cluster=dict(type="str", required=True),
            **namespace_argument_spec(),
            token_ttl=dict(type="int", default=14400, no_log=False),
            workload_kubeconfig=dict(type="str", no_log=True),
            user_data_template=dict(type="str"),
            kubeconfig_dest=dict(type="path", no_log=False),
            kubeconfig_server=dict(type="str"),
            endpoint_addresses=dict(type="list", elements="str", default=[]),
        ),
        supports_check_mode=True,
    )
    p = module.params
    with module.errors():
        from ansible_collections.baremetal.capi.plugins.module_utils.bootstrap import task

        changed, result = task.run(
            module.store,
            p["cluster"],
            p["namespace"] or module.namespace,
            token_ttl=p["token_ttl"],
            workload_kubeconfig=p["workload_kubeconfig"],
            user_data_template=p["user_data_template"],
            kubeconfig_dest=p["kubeconfig_dest"],
            kubeconfig_server=p["kubeconfig_server"],
            endpoint_addresses=p["endpoint_addresses"],
            check=module.check_mode,
        )
    module.exit(changed, **result)


if __name__ == "__main__":
    main()
