# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The MaasCluster flow: CAPMAAS's MaasCluster controller (cluster-api-provider-maas
controllers/maascluster_controller.go reconcileNormal, pkg/maas/dns/dns.go), v0.9 shapes.

One ``step``: owner Cluster, failure domains copied to status as a list
(``[{name, controlPlane: true}]``), finalizer, the DNS name (the Cluster's
``spec.controlPlaneEndpoint.host`` if set, else ``<cluster>-<6 random
chars>.<dnsDomain>``, kept in status), the DNS resource (TTL 10), the
controlPlaneEndpoint (port 6443 unless the Cluster says otherwise), ready, the
DNS attachments (with ``spec.apiServerInterfaceName``, each control plane's address on that MAAS interface,
and ``status.network.publishedInterfaceName``), and API-server readiness by listing the workload cluster's
Nodes.  Then what Cluster API core does for the Cluster's infrastructure
(capi.cluster).  Deletion waits for the cluster's MaasMachines and, unlike
upstream, deletes the DNS resource it created.
"""

from __future__ import annotations

import copy
import uuid

from ansible_collections.baremetal.capi.plugins.module_utils.capi import cluster as capi_cluster
from ansible_collections.baremetal.capi.plugins.module_utils.capi import refs
from ansible_collections.baremetal.capi.plugins.module_utils.capi import workload as wl
from ansible_collections.baremetal.capi.plugins.module_utils.errors import CapiError, Invalid, NotFound, Requeue
from ansible_collections.baremetal.capi.plugins.module_utils.maas import dns
from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions, meta, names
from ansible_collections.baremetal.capi.plugins.module_utils.runner import Step

KIND = "MaasCluster"


def owner_cluster(store, mc: dict) -> dict | None:
    """The Cluster owning it, or the one whose infrastructureRef names it."""
    return refs.owner_or_referrer(store, "Cluster", mc)


def failure_domains(mc: dict) -> list[dict]:
    """v0.9: a list of ``{name, controlPlane: true}`` (older releases kept a map; see migrate)."""
    return [{"name": fd, "controlPlane": True} for fd in (mc.get("spec") or {}).get("failureDomains") or []]


def dns_name_for(cluster: dict, mc: dict, rand=None) -> str:
    """GetDNSName: the Cluster's endpoint host, else the name kept in status, else a new random one."""
    host = ((cluster.get("spec") or {}).get("controlPlaneEndpoint") or {}).get("host")
    if host:
        return host
    kept = dns.dns_name(mc)
    if kept:
        return kept
    suffix = (rand or (lambda: uuid.uuid4().hex))()[-6:]
    return f"{meta.name(cluster)}-{suffix}.{mc['spec']['dnsDomain']}"


def api_port(cluster: dict) -> int:
    return int(((cluster.get("spec") or {}).get("clusterNetwork") or {}).get("apiServerPort") or 0) or (
        names.MAAS_DEFAULT_API_PORT
    )


def validate(mc: dict) -> None:
    spec = mc.get("spec") or {}
    if not isinstance(spec.get("dnsDomain"), str) or not spec["dnsDomain"]:
        raise Invalid("required (the MAAS DNS domain)", obj=meta.ref(mc), field="spec.dnsDomain")
    iface = spec.get("apiServerInterfaceName")
    # optional; "" is upstream's omitempty zero value: the legacy first ExternalIP
    if iface is not None and (not isinstance(iface, str) or (iface and (iface.strip() != iface or " " in iface))):
        raise Invalid(
            f"must be a MAAS interface name such as eno2, got {iface!r}",
            obj=meta.ref(mc),
            field="spec.apiServerInterfaceName",
        )
    fds = spec.get("failureDomains")
    if fds is not None and (not isinstance(fds, list) or not all(isinstance(f, str) and f for f in fds)):
        raise Invalid("must be a list of MAAS zone names", obj=meta.ref(mc), field="spec.failureDomains")


class ClusterManager:
    def __init__(self, store, client, *, workload_kubeconfig=None, subnets=None, clock=None, rand=None):
        self.store = store
        self.client = client
        self.workload_kubeconfig = workload_kubeconfig
        self.subnets = subnets
        self.clock = clock
        self.rand = rand

    def _cond(self, obj, ctype, status, reason, message=""):
        return conditions.set_condition(obj, ctype, status, reason, message, clock=self.clock)

    def _save(self, before, after, check):
        return refs.save(self.store, before, after, check)

    def api_server_online(self, cluster_name: str, ns: str, check: bool = False) -> tuple[bool, str, bool]:
        """IsAPIServerOnline: listing the workload cluster's Nodes succeeds.  (online, why not, labelled).

        Once online, the workload kube-system namespace gets ``cluster-api-maas/api-server-ready=true``.
        """
        try:
            client = wl.client_for(self.store, cluster_name, ns, self.workload_kubeconfig)
            client.list_nodes()
        except NotFound:
            return False, f"no {wl.kubeconfig_secret_name(cluster_name)} Secret yet", False
        except CapiError as exc:
            return False, str(exc), False
        try:
            labelled = client.label_namespace("kube-system", {names.MAAS_API_SERVER_READY_LABEL: "true"}, check=check)
        except CapiError as exc:  # CAPMAAS retries the label after 30 s; the API itself answered
            return True, f"labelling kube-system: {exc}", False
        return True, "", labelled

    def step(self, name: str, ns: str, check: bool = False) -> Step:
        mc = refs.get_or_none(self.store, KIND, name, ns)
        if mc is None:
            raise NotFound(f'MaasCluster "{name}" not found', obj=f"MaasCluster {ns}/{name}")
        validate(mc)
        cluster = owner_cluster(self.store, mc)
        if meta.is_deleting(mc):
            return self._delete(mc, cluster, check)
        if cluster is None:
            raise Requeue("waiting for a Cluster whose infrastructureRef names this MaasCluster", after=10)
        cname = meta.name(cluster)
        if refs.is_paused(cluster, mc):
            return Step(message="paused", requeue_after=30)
        after = copy.deepcopy(mc)
        status = after.setdefault("status", {})
        status["failureDomains"] = failure_domains(after)
        meta.add_finalizer(after, names.MAAS_CLUSTER_FINALIZER)
        meta.set_owner(after, cluster)
        after["metadata"].setdefault("labels", {})[names.CLUSTER_NAME_LABEL] = cname
        # ReconcileDNS
        fqdn = dns_name_for(cluster, after, self.rand)
        network = status.setdefault("network", {})
        network["dnsName"] = fqdn
        try:
            _resource, created = dns.ensure_resource(self.client, fqdn, check=check)
        except CapiError as exc:
            self._cond(after, names.MAAS_LOAD_BALANCER_READY, False, names.MAAS_LOAD_BALANCER_FAILED_REASON, str(exc))
            self._save(mc, after, check)
            raise
        if created:
            network["dnsResourceCreated"] = True  # ours to delete with the cluster
        after["spec"]["controlPlaneEndpoint"] = {"host": fqdn, "port": api_port(cluster)}
        status["ready"] = True
        status.setdefault("initialization", {})["provisioned"] = True
        self._cond(after, names.MAAS_LOAD_BALANCER_READY, True, names.MAAS_LOAD_BALANCER_READY_REASON)
        dns_result = {"fqdn": fqdn, "created": created, "before": [], "after": [], "changed": created}
        if not check or not created:
            try:
                dns_result = dns.reconcile_dns(
                    self.store, self.client, cname, ns, subnets=self.subnets, check=check, maas_cluster=after
                )
            except CapiError:
                self._save(mc, after, check)  # upstream's scope is patched on the way out, error or not
                raise
            dns.set_published_interface(status, dns_result["published_interface"])
        online, why, labelled = self.api_server_online(cname, ns, check=check)
        if online:
            self._cond(after, names.MAAS_API_SERVER_AVAILABLE, True, names.MAAS_API_SERVER_AVAILABLE_REASON)
        else:
            self._cond(after, names.MAAS_API_SERVER_AVAILABLE, False, names.MAAS_API_SERVER_NOT_READY_REASON, why)
        ready = online
        self._cond(
            after,
            names.READY,
            ready,
            names.READY_REASON if ready else names.NOT_READY_REASON,
            "" if ready else "APIServerAvailable is not true",
        )
        stored = self._save(mc, after, check)
        cstep = capi_cluster.reconcile(self.store, cluster, clock=self.clock, check=check)
        data = {"dnsName": fqdn, "dns": dns_result, "apiServerAvailable": online, "maasCluster": stored}
        message = "API server available" if online else f"waiting for the API server: {why}"
        return Step(
            done=online,
            changed=stored != mc or dns_result["changed"] or cstep.changed or labelled,
            message=message,
            requeue_after=5,
            data=data,
        )

    def _delete(self, mc: dict, cluster: dict | None, check: bool) -> Step:
        ns = meta.namespace(mc)
        cname = meta.name(cluster) if cluster else meta.labels(mc).get(names.CLUSTER_NAME_LABEL) or meta.name(mc)
        left = dns.cluster_machines(self.store, cname, ns)
        if left:
            return Step(
                changed=False,
                message=f"waiting for {len(left)} MaasMachine(s) to be deleted: "
                + ", ".join(meta.name(m) for m in left[:5]),
                requeue_after=5,
            )
        fqdn = dns.dns_name(mc)
        removed = False
        if ((mc.get("status") or {}).get("network") or {}).get("dnsResourceCreated"):
            removed = dns.delete_resource(self.client, fqdn, check=check)
        if check:
            return Step(done=True, changed=True, message=f"would be deleted (DNS record {fqdn} removed: {removed})")
        after = copy.deepcopy(mc)
        meta.remove_finalizer(after, names.MAAS_CLUSTER_FINALIZER)
        try:
            refs.write(self.store, mc, after)
        except NotFound:
            pass
        return Step(
            done=True, changed=True, message=f"deleted; DNS record {fqdn} " + ("removed" if removed else "kept")
        )

    def remove(self, name: str, ns: str, check: bool = False) -> Step:
        """``state: absent`` on the MaasCluster alone: delete it and step until it is gone."""
        mc = refs.get_or_none(self.store, KIND, name, ns)
        if mc is None:
            return Step(done=True, changed=False, message="absent")
        if not meta.is_deleting(mc) and not check:
            self.store.delete(KIND, name, ns)
            mc = refs.get_or_none(self.store, KIND, name, ns)
            if mc is None:
                return Step(done=True, changed=True, message="deleted")
        return self._delete(mc, owner_cluster(self.store, mc), check)


def reconcile(
    mgr: ClusterManager,
    name: str,
    ns: str,
    *,
    check=False,
    wait=True,
    timeout=None,
    poll=2.0,
    wait_for_api_server=False,
) -> dict:
    """What the maas_cluster module does for ``state: present``: step until provisioned (or the API is up)."""
    from ansible_collections.baremetal.capi.plugins.module_utils import runner

    before = refs.get_or_none(mgr.store, KIND, name, ns)
    if before is None:
        raise NotFound(f'MaasCluster "{name}" not found', obj=f"MaasCluster {ns}/{name}")

    def one(_key):
        s = mgr.step(name, ns, check=check)
        provisioned = bool(((s.data.get("maasCluster") or {}).get("status") or {}).get("ready"))
        s.done = s.done or (provisioned and not wait_for_api_server) or check
        return s

    res = runner.run([name], one, wait=wait and not check, timeout=timeout, poll=poll)[0]
    after = refs.get_or_none(mgr.store, KIND, name, ns) if not check else res.data.get("maasCluster", before)
    return {"result": res, "before": before, "after": after}


def teardown(
    mgr: ClusterManager, machines_mgr, name: str, ns: str, *, check=False, wait=True, timeout=None, poll=2.0, workers=8
) -> dict:
    """``state: absent``: the Cluster is deleted as Cluster API deletes one - its machines (concurrently:
    DNS detach, release, Node), then the MaasCluster (and the DNS record it created), then the Cluster."""
    from ansible_collections.baremetal.capi.plugins.module_utils import runner
    from ansible_collections.baremetal.capi.plugins.module_utils.maas import batch

    store = mgr.store
    before = refs.get_or_none(store, KIND, name, ns)
    cluster = owner_cluster(store, before) if before else None
    cname = meta.name(cluster) if cluster else (meta.labels(before or {}).get(names.CLUSTER_NAME_LABEL) or name)
    keys = batch.machine_keys(store, ns, cluster=cname)
    machine_results = machines_mgr.run(
        keys, delete=True, check=check, wait=wait, timeout=timeout, poll=poll, workers=workers
    )
    left = [r for r in machine_results if r.failed or (wait and not check and not r.done)]
    out = {"before": before, "machines": [r.as_dict() for r in machine_results], "cluster": cname}
    if left or (not wait and keys and not check):
        out["result"] = runner.Result(name, message=f"{len(left) or len(keys)} machine(s) not deleted yet")
        out["result"].failed = bool(left)
        out["result"].changed = any(r.changed for r in machine_results)
        return out
    res = runner.run(
        [name], lambda _k: mgr.remove(name, ns, check=check), wait=wait and not check, timeout=timeout, poll=poll
    )[0]
    res.changed = res.changed or any(r.changed for r in machine_results)
    if res.done and cluster is not None and not check:
        current = refs.get_or_none(store, "Cluster", cname, ns)
        if current is not None:
            if meta.remove_finalizer(current, names.CLUSTER_FINALIZER):
                current = store.update(current)
            try:
                store.delete("Cluster", cname, ns)
            except NotFound:
                pass
            res.changed = True
    elif check and (cluster is not None or before is not None):
        res.changed = True
    out["result"] = res
    return out
