# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations


class ModuleDocFragment:
    # The store options every module that reads or writes objects takes.
    DOCUMENTATION = r"""
options:
  store:
    description:
      - Where the objects live.
      - The sqlite store is one file on the machine that runs the module (the default, for one operator).
      - The kubernetes store keeps the objects in a management cluster, as Cluster API does; use it when jobs
        run on several machines or in throwaway containers (AWX).
      - Set it once for a play with O(ignore:module_defaults) and the C(group/baremetal.capi.capi) action group.
    type: dict
    suboptions:
      kind:
        description:
          - V(sqlite) or V(kubernetes).
          - When not set, V(sqlite) if O(store.path) is set, else the E(BAREMETAL_CAPI_STORE_KIND) environment
            variable, else V(kubernetes) when both
            E(K8S_AUTH_HOST) and E(K8S_AUTH_API_KEY) are set (what AWX's Kubernetes bearer token credential
            injects), else V(sqlite).
        type: str
        choices: [sqlite, kubernetes]
      path:
        description:
          - The sqlite file, created with mode 0600 since it holds Secrets.
          - When not set, the E(BAREMETAL_CAPI_STORE_PATH) environment variable, else
            C($XDG_STATE_HOME/baremetal-capi/state.db) (C(~/.local/state/baremetal-capi/state.db)).
          - sqlite store only.
        type: path
      kubeconfig:
        description:
          - Path to a kubeconfig file for the management cluster.
          - When not set, the E(K8S_AUTH_KUBECONFIG) environment variable, else the kubernetes client's default
            (E(KUBECONFIG), C(~/.kube/config), or the in-cluster service account).
          - kubernetes store only.
        type: path
      context:
        description:
          - The kubeconfig context to use. When not set, the E(K8S_AUTH_CONTEXT) environment variable.
          - kubernetes store only.
        type: str
      host:
        description:
          - URL of the management cluster's API server. When not set, the E(K8S_AUTH_HOST) environment variable.
          - kubernetes store only.
        type: str
      api_key:
        description:
          - Bearer token for the API server. When not set, the E(K8S_AUTH_API_KEY) environment variable.
          - kubernetes store only.
        type: str
      ca_cert:
        description:
          - CA certificate file that signed the API server's certificate.
          - When not set, the E(K8S_AUTH_SSL_CA_CERT) environment variable.
          - kubernetes store only.
        type: path
        aliases: [ssl_ca_cert]
      validate_certs:
        description:
          - Whether to verify the API server's TLS certificate.
          - When not set, the E(K8S_AUTH_VERIFY_SSL) environment variable, else V(true).
          - kubernetes store only.
        type: bool
        aliases: [verify_ssl]
      namespace:
        description:
          - The namespace a task works in when it names none. V(default) when not set.
        type: str
      adopt:
        description:
          - Every object the collection writes carries the annotation C(capi.baremetal.io/managed-by=baremetal.capi).
            An existing object without it that a running upstream controller (Cluster API, CAPM3, the
            baremetal-operator) writes to, as its field manager in C(metadata.managedFields) shows, is refused.
            The task fails naming the object, unless the object is paused as C(clusterctl move) pauses objects
            (Cluster C(spec.paused), annotation C(cluster.x-k8s.io/paused) or C(baremetalhost.metal3.io/paused)).
          - V(true) takes such objects over (and marks them). Stop the upstream controller first, or both
            reconcile the same objects.
          - See the collection's C(docs/management-cluster.md).
        type: bool
        default: false
        version_added: 0.2.0
"""
