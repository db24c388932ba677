# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# The Apache License 2.0 is compatible with the GNU General Public License version 3 (GPLv3).

from __future__ import annotations

DOCUMENTATION = r"""
name: machines
short_description: The Machines of Cluster API clusters in a baremetal.capi store as Ansible hosts
version_added: 0.1.0
description:
  - Reads the C(Machine) objects (cluster.x-k8s.io) of the clusters in the object store and makes each one an
    Ansible host, so that follow-up plays can run on the machines a playbook such as
    C(baremetal.capi.provision_cluster) provisioned.
  - C(ansible_host) is the Machine's address from C(status.addresses) (the first C(InternalIP), else the first
    C(ExternalIP)); a Machine without an address yet has no C(ansible_host).
  - Groups, with names sanitised as Ansible requires - C(cluster_<cluster>) for every machine of a cluster,
    C(control_plane) and C(workers) for all clusters, C(<cluster>_control_plane) and C(<cluster>_workers) per
    cluster, and C(namespace_<namespace>).
  - Host variables - C(capi_machine), C(capi_namespace), C(capi_cluster), C(capi_role) (C(control_plane) or
    C(worker)), C(capi_provider_id), C(capi_phase), C(capi_node_name), C(capi_address), C(capi_addresses),
    C(capi_labels), C(capi_failure_domain), C(capi_version), C(capi_deployment) (the MachineDeployment of a worker),
    C(capi_infrastructure) (C(kind) and C(name) of the infrastructure machine), C(capi_host) (the BareMetalHost
    C(<namespace>/<name>) of a Metal3Machine) and C(capi_system_id) (the MAAS system id of a MaasMachine).
  - The inventory file name must end with C(machines.yml) or C(machines.yaml), for example
    C(inventory.capi.machines.yml).
author:
  - baremetal.capi contributors (!UNKNOWN)
requirements:
  - kubernetes >= 30.1 (Python package), for the kubernetes store only
extends_documentation_fragment:
  - constructed
  - inventory_cache
options:
  plugin:
    description:
      - The name of this plugin, to tell Ansible the file is meant for it.
    type: str
    required: true
    choices: [baremetal.capi.machines]
  store:
    description:
      - Where the objects live, as the modules' C(store) option.
      - When not set, the sqlite store at E(BAREMETAL_CAPI_STORE_PATH), else
        C(~/.local/state/baremetal-capi/state.db) - the store the playbooks use by default.
    type: dict
    default: {}
    suboptions:
      kind:
        description:
          - V(sqlite) or V(kubernetes). When not set, V(sqlite) if O(store.path) is set, else the
            E(BAREMETAL_CAPI_STORE_KIND) environment variable, else V(kubernetes) when both E(K8S_AUTH_HOST)
            and E(K8S_AUTH_API_KEY) are set (what AWX's Kubernetes bearer token credential injects), else
            V(sqlite).
        type: str
        choices: [sqlite, kubernetes]
      path:
        description:
          - The sqlite file. When not set, the E(BAREMETAL_CAPI_STORE_PATH) environment variable, else
            C($XDG_STATE_HOME/baremetal-capi/state.db).
        type: path
      kubeconfig:
        description:
          - kubeconfig file of the management cluster (kubernetes store). When not set, E(K8S_AUTH_KUBECONFIG),
            else the kubernetes client's default.
        type: path
      context:
        description:
          - kubeconfig context (kubernetes store). When not set, E(K8S_AUTH_CONTEXT).
        type: str
      host:
        description:
          - URL of the management cluster's API server (kubernetes store). When not set, E(K8S_AUTH_HOST).
        type: str
      api_key:
        description:
          - Bearer token for the API server (kubernetes store). When not set, E(K8S_AUTH_API_KEY).
        type: str
      ca_cert:
        description:
          - CA certificate file of the API server (kubernetes store). When not set, E(K8S_AUTH_SSL_CA_CERT).
        type: path
      validate_certs:
        description:
          - Whether to verify the API server's certificate (kubernetes store). When not set,
            E(K8S_AUTH_VERIFY_SSL), else V(true).
        type: bool
  clusters:
    description:
      - Only the machines of these clusters (C(spec.clusterName)). All clusters when empty.
    type: list
    elements: str
    default: []
  namespaces:
    description:
      - Only the machines in these namespaces. All namespaces when empty.
    type: list
    elements: str
    default: []
  label_selector:
    description:
      - Only the Machines whose labels match this selector, for example V(cluster.x-k8s.io/deployment-name=md-0).
    type: str
  include_deleting:
    description:
      - Also list Machines that are being deleted (with a C(deletionTimestamp)).
    type: bool
    default: false
  hostnames:
    description:
      - What names the hosts.
      - V(machine) - the Machine's name.
      - V(namespaced) - C(<namespace>.<machine>), for stores where two namespaces hold machines of one name.
      - V(node) - the workload Node's name (C(status.nodeRef.name)), else the Machine's name.
    type: str
    choices: [machine, namespaced, node]
    default: machine
"""

EXAMPLES = r"""
# inventory.capi.machines.yml, every machine in the default sqlite store, is the one line
#   plugin: baremetal.capi.machines
#
# prod.machines.yml: one cluster of a management cluster, grouped by failure domain too
plugin: baremetal.capi.machines
store:
  kind: kubernetes
  kubeconfig: ~/.kube/management.yaml
clusters: [prod]
namespaces: [metal3]
keyed_groups:
  - key: capi_failure_domain
    prefix: fd
compose:
  ansible_user: "'ubuntu'"

# Then, for example:
#   ansible-inventory -i inventory.capi.machines.yml --graph
#   ansible -i inventory.capi.machines.yml test1_control_plane -m ansible.builtin.ping
"""

from ansible.errors import AnsibleError, AnsibleParserError  # noqa: E402 (imports follow the docs)
from ansible.module_utils.common.text.converters import to_native  # noqa: E402 (imports follow the docs)
from ansible.plugins.inventory import BaseInventoryPlugin, Cacheable, Constructable  # noqa: E402 (imports follow the docs)

from ansible_collections.baremetal.capi.plugins.module_utils.errors import CapiError, NotFound, UnknownKind  # noqa: E402 (imports follow the docs)
from ansible_collections.baremetal.capi.plugins.module_utils.model import names  # noqa: E402 (imports follow the docs)


def machine_address(machine: dict) -> str | None:
    """The first InternalIP, else the first ExternalIP of ``status.addresses`` (what a user would ssh to)."""
    addresses = (machine.get("status") or {}).get("addresses") or []
    for wanted in ("InternalIP", "ExternalIP"):
        for address in addresses:
            if address.get("type") == wanted and address.get("address"):
                return address["address"]
    return None


def machine_record(machine: dict, infra: dict | None) -> dict:
    """Plain data about one Machine (what is cached): its host variables before ``ansible_host``."""
    md, spec, status = machine["metadata"], machine.get("spec") or {}, machine.get("status") or {}
    labels = md.get("labels") or {}
    ref = spec.get("infrastructureRef") or {}
    record = {
        "capi_machine": md["name"],
        "capi_namespace": md.get("namespace") or "default",
        "capi_cluster": spec.get("clusterName") or labels.get(names.CLUSTER_NAME_LABEL),
        "capi_role": "control_plane" if names.CONTROL_PLANE_LABEL in labels else "worker",
        "capi_provider_id": spec.get("providerID"),
        "capi_phase": status.get("phase"),
        "capi_node_name": (status.get("nodeRef") or {}).get("name"),
        "capi_addresses": status.get("addresses") or [],
        "capi_labels": labels,
        "capi_failure_domain": spec.get("failureDomain"),
        "capi_version": spec.get("version"),
        "capi_deployment": labels.get(names.DEPLOYMENT_NAME_LABEL),
        "capi_infrastructure": {"kind": ref.get("kind"), "name": ref.get("name")} if ref else None,
        "capi_host": None,
        "capi_system_id": None,
        "capi_address": machine_address(machine),
    }
    if infra is not None:
        if infra.get("kind") == "Metal3Machine":
            record["capi_host"] = ((infra["metadata"].get("annotations") or {}).get(names.HOST_ANNOTATION)) or None
        elif infra.get("kind") == "MaasMachine":
            record["capi_system_id"] = (infra.get("spec") or {}).get("systemID")
    return record


def store_options(given: dict | None) -> dict:
    """The ``store`` option with the environment fallbacks the modules apply (module_utils/store/options.py)."""
    from ansible_collections.baremetal.capi.plugins.module_utils.store import options

    return {
        k: v
        for k, v in options.resolve({k: v for k, v in (given or {}).items() if v is not None}).items()
        if v is not None
    }


def read_machines(store, clusters=(), namespaces=(), label_selector=None, include_deleting=False) -> list[dict]:
    """One record per Machine of the store that passes the filters, sorted by namespace and name."""
    from ansible_collections.baremetal.capi.plugins.module_utils.capi import refs

    wanted_ns = list(namespaces) or [None]
    machines = []
    for ns in wanted_ns:
        machines.extend(store.list("Machine", namespace=ns, label_selector=label_selector or None))
    records = []
    for machine in machines:
        if machine["metadata"].get("deletionTimestamp") and not include_deleting:
            continue
        cluster = (machine.get("spec") or {}).get("clusterName")
        if clusters and cluster not in clusters:
            continue
        ref = (machine.get("spec") or {}).get("infrastructureRef")
        try:
            infra = refs.get_ref(store, ref, machine["metadata"]["namespace"])
        except (NotFound, UnknownKind):  # an infrastructure kind this collection does not know: no host / system id
            infra = None
        records.append(machine_record(machine, infra))
    return records


class InventoryModule(BaseInventoryPlugin, Constructable, Cacheable):
    NAME = "baremetal.capi.machines"

    def verify_file(self, path):
        return super().verify_file(path) and path.endswith(("machines.yml", "machines.yaml"))

    def parse(self, inventory, loader, path, cache=True):
        super().parse(inventory, loader, path, cache)
        self._read_config_data(path)
        cache_key = self.get_cache_key(path)
        use_cache = self.get_option("cache") and cache
        update_cache = self.get_option("cache") and not cache
        records = None
        if use_cache:
            try:
                records = self._cache[cache_key]
            except KeyError:
                update_cache = True
        if records is None:
            records = self._fetch()
        if update_cache:
            self._cache[cache_key] = records
        self._populate(records)

    def _fetch(self) -> list[dict]:
        from ansible_collections.baremetal.capi.plugins.module_utils.store.base import open_store

        try:
            store = open_store(store_options(self.get_option("store")))
        except CapiError as exc:
            raise AnsibleParserError(f"baremetal.capi.machines: store: {to_native(exc)}") from exc
        try:
            return read_machines(
                store,
                clusters=self.get_option("clusters") or (),
                namespaces=self.get_option("namespaces") or (),
                label_selector=self.get_option("label_selector"),
                include_deleting=self.get_option("include_deleting"),
            )
        except CapiError as exc:
            raise AnsibleError(f"baremetal.capi.machines: reading the Machines: {to_native(exc)}") from exc
        finally:
            store.close()

    def _hostname(self, record: dict) -> str:
        how = self.get_option("hostnames")
        if how == "namespaced":
            return f"{record['capi_namespace']}.{record['capi_machine']}"
        if how == "node" and record["capi_node_name"]:
            return record["capi_node_name"]
        return record["capi_machine"]

    def _group(self, name: str) -> str:
        return self.inventory.add_group(self._sanitize_group_name(name))

    def _populate(self, records: list[dict]) -> None:
        strict = self.get_option("strict")
        for record in records:
            host = self._hostname(record)
            self.inventory.add_host(host)
            role_group = "control_plane" if record["capi_role"] == "control_plane" else "workers"
            groups = [f"namespace_{record['capi_namespace']}", role_group]
            if record["capi_cluster"]:
                groups += [f"cluster_{record['capi_cluster']}", f"{record['capi_cluster']}_{role_group}"]
            for group in groups:
                self.inventory.add_child(self._group(group), host)
            for key, value in record.items():
                self.inventory.set_variable(host, key, value)
            if record["capi_address"]:
                self.inventory.set_variable(host, "ansible_host", record["capi_address"])
            hostvars = self.inventory.get_host(host).get_vars()
            self._set_composite_vars(self.get_option("compose"), hostvars, host, strict=strict)
            self._add_host_to_composed_groups(self.get_option("groups"), hostvars, host, strict=strict)
            self._add_host_to_keyed_groups(self.get_option("keyed_groups"), hostvars, host, strict=strict)
