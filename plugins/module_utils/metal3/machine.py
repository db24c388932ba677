# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The Metal3Machine flow: CAPM3's Metal3Machine controller plus what Cluster API core does (cluster-api-provider-metal3
controllers/metal3machine_controller.go reconcileNormal, baremetal/metal3machine_manager.go).

``MachineManager.step(name, ns)`` is one reconcile of one Metal3Machine, in
the controller's order: owner Machine, Cluster infrastructure, pause, delete or
normal (finalizer, bootstrap data, associate = choose + claim a host, data
claim and render, host spec, drive the host one step through the host driver,
wait for ``provisioned``, providerID on the Node, addresses), then the
Machine's core duties (capi.machine).  Steps are idempotent and safe to
interrupt; ``runner.run`` calls them until done, many machines at once.

The choice of host is in metal3/choose.py, the pure host-spec functions in
metal3/host_spec.py, the step's report and the BMC Secret's label in
metal3/host_ref.py, deletion in metal3/machine_delete.py (handed the store,
the host driver and the data manager, never this manager).
"""

from __future__ import annotations

import copy
import threading

from ansible_collections.baremetal.capi.plugins.module_utils.capi import cluster as capi_cluster
from ansible_collections.baremetal.capi.plugins.module_utils.capi import infra_machine, refs
from ansible_collections.baremetal.capi.plugins.module_utils.capi import machine as capi_machine
from ansible_collections.baremetal.capi.plugins.module_utils.capi import workload as wl
from ansible_collections.baremetal.capi.plugins.module_utils.errors import (
    CapiError,
    Invalid,
    NoHostAvailable,
    NotFound,
    Requeue,
)
from ansible_collections.baremetal.capi.plugins.module_utils.hosts import base as hosts
from ansible_collections.baremetal.capi.plugins.module_utils.metal3 import (
    choose,
    host_ref,
    host_spec,
    machine_delete,
    provider_id,
)
from ansible_collections.baremetal.capi.plugins.module_utils.model import conditions, meta, names
from ansible_collections.baremetal.capi.plugins.module_utils.runner import Step

KIND = "Metal3Machine"


class MachineManager:
    """Reconciles Metal3Machines against a store, a host driver and the workload clusters."""

    KIND = KIND

    def __init__(
        self,
        store,
        driver,
        *,
        workload_kubeconfig=None,
        rng=None,
        clock=None,
        no_host_requeue=30.0,
        fail_on_host_error=True,
        wait_for="running",
    ):
        from ansible_collections.baremetal.capi.plugins.module_utils.metal3.data import DataManager

        self.store = store
        self.driver = driver
        self.data = DataManager(store)
        self.workload_kubeconfig = workload_kubeconfig
        self.rng = rng
        self.clock = clock
        self.no_host_requeue = no_host_requeue
        # A host with a new error (one it did not have when this run first saw it) fails its machine at
        # once, the error on the host and in the result; a later run lets the host driver retry it, with
        # BMO's backoff, as baremetal-operator does.
        self.fail_on_host_error = fail_on_host_error
        self._errors = hosts.NewErrors()
        # "running": until the Machine has its Node; "provisioned": until the host is provisioned.
        self.wait_for = wait_for
        # Check mode: hosts already promised to other machines of this batch, so each gets its own.
        self._would_take: set[str] = set()
        self._lock = threading.Lock()

    # -- helpers -----------------------------------------------------------------------

    def workload(self, cluster_name: str, ns: str):
        try:
            return wl.client_for(self.store, cluster_name, ns, self.workload_kubeconfig)
        except NotFound:
            raise Requeue(
                f"waiting for the {wl.kubeconfig_secret_name(cluster_name)} Secret of the workload cluster", after=10
            ) from None

    def _cond(self, m3m, ctype, status, reason, message=""):
        return conditions.set_condition(m3m, ctype, status, reason, message, clock=self.clock)

    def _save(self, before: dict, after: dict, check: bool) -> dict:
        return refs.save(self.store, before, after, check)

    # -- one step ----------------------------------------------------------------------

    def step(self, name: str, ns: str, check: bool = False) -> Step:
        m3m = refs.get_or_none(self.store, KIND, name, ns)
        if m3m is None:
            raise Invalid(f'Metal3Machine "{name}" not found', obj=f"Metal3Machine {ns}/{name}")
        machine = infra_machine.owner_machine(self.store, m3m, check=check)
        m3m = self.store.get(KIND, name, ns)
        if meta.is_deleting(m3m):
            return self._delete(m3m, machine, check=check)
        host_spec.validate(m3m)  # the webhook's rules, before anything is written for this machine
        after = copy.deepcopy(m3m)
        if machine is None:
            self._cond(
                after, names.ASSOCIATE_BMH, False, names.WAITING_FOR_METAL3_MACHINE_OWNER_REF_REASON, "no owner Machine"
            )
            self._save(m3m, after, check)
        cluster = infra_machine.owning_cluster(self.store, KIND, machine)  # a Requeue while one is missing
        cluster_name = meta.name(cluster)
        machine = capi_machine.ensure_ownership(self.store, machine, cluster, check=check)
        cstep = capi_cluster.reconcile(self.store, cluster, clock=self.clock, check=check)
        if not cstep.done:
            self._cond(
                after, names.ASSOCIATE_BMH, False, names.WAITING_FOR_CLUSTER_INFRASTRUCTURE_READY_REASON, cstep.message
            )
            self._save(m3m, after, check)
            raise Requeue(f"Cluster {cluster_name}: {cstep.message}", after=5)
        m3c = refs.get_ref(self.store, cluster["spec"].get("infrastructureRef"), ns)
        if m3c is None:
            self._cond(after, names.ASSOCIATE_BMH, False, names.WAITING_FOR_METAL3_CLUSTER_REASON)
            self._save(m3m, after, check)
            raise Requeue(f"waiting for the Metal3Cluster of Cluster {cluster_name}", after=10)
        host = host_ref.associated_host(self.store, m3m)
        paused = refs.is_paused(cluster, m3m)
        if host is not None and not check:
            cluster_paused = bool((cluster.get("spec") or {}).get("paused"))
            host = host_ref.mutate_host(
                self.store,
                host,
                lambda h: (
                    (host_spec.set_pause(h) if cluster_paused else host_spec.remove_pause(h, cluster_name))
                    | (False if cluster_paused else host_spec.ensure_block_move(h))
                ),
            )
        if paused:
            self._cond(after, names.PAUSED, True, names.PAUSED_REASON)
            self._save(m3m, after, check)
            return Step(done=False, message="paused", requeue_after=30, data=host_ref.report(after, host))
        changed = self._cond(after, names.PAUSED, False, names.NOT_PAUSED_REASON)
        changed |= meta.add_finalizer(after, names.METAL3_MACHINE_FINALIZER)
        fd = (machine.get("spec") or {}).get("failureDomain")
        if fd and after["spec"].get("failureDomain") != fd:
            after["spec"]["failureDomain"] = fd
            changed = True
        if not host_spec.user_data_secret(after, machine) or not infra_machine.bootstrap_ready(machine):
            self._cond(after, names.ASSOCIATE_BMH, False, names.WAITING_FOR_BOOTSTRAP_DATA_REASON)
            self._save(m3m, after, check)
            raise Requeue("waiting for the bootstrap data secret (Machine spec.bootstrap.dataSecretName)", after=5)
        if host is None:
            return self._associate(m3m, after, machine, check)
        return self._normal(m3m, after, machine, m3c, host, check, changed)

    # -- associate ---------------------------------------------------------------------

    def _associate(self, m3m: dict, after: dict, machine: dict, check: bool) -> Step:
        ns = meta.namespace(m3m)
        after.setdefault("status", {})["userData"] = host_spec.user_data_secret(after, machine)
        template = (after["spec"].get("dataTemplate") or {}).get("name")

        def prepare(new_host):
            if not template:  # without a template the spec goes in with the claim
                host_spec.set_host_spec(new_host, after, machine)
            return new_host

        try:
            if check:
                with self._lock:  # one choice at a time, so two machines are never promised one host
                    host, reason = choose.claim(
                        self.store, after, machine, check=True, rng=self.rng, exclude=self._would_take
                    )
                    self._would_take.add(meta.name(host))
            else:
                host, reason = choose.claim(self.store, after, machine, prepare=prepare, rng=self.rng)
        except NoHostAvailable as exc:
            self._cond(after, names.ASSOCIATE_BMH, False, names.ASSOCIATE_BMH_FAILED_REASON, exc.message)
            self._save(m3m, after, check)
            raise NoHostAvailable(
                exc.message,
                selector=exc.selector,
                failure_domain=exc.failure_domain,
                seen=exc.seen,
                skipped=exc.skipped,
                after=self.no_host_requeue,
            ) from None
        if check:
            return Step(
                done=True,
                changed=True,
                message=f"would associate with host {meta.name(host)}",
                data=host_ref.report(after, host),
            )
        host_ref.label_bmc_secret(self.store, host, machine["spec"]["clusterName"], add=True)
        after["metadata"].setdefault("annotations", {})[names.HOST_ANNOTATION] = f"{ns}/{meta.name(host)}"
        self._cond(after, names.ASSOCIATE_BMH, True, reason)
        self._save(m3m, after, check)
        return Step(
            changed=True,
            message=f"associated with host {meta.name(host)}",
            requeue_after=0,
            data=host_ref.report(after, host),
        )

    # -- metadata, host spec, provisioning, providerID -----------------------------------

    def _metadata(self, after: dict, check: bool) -> bool:
        """AssociateM3Metadata + WaitForM3Metadata: user secrets, then the rendered data.  True when ready."""
        ns, status = meta.namespace(after), after.setdefault("status", {})
        for key in ("metaData", "networkData"):
            ref = after["spec"].get(key)
            if ref and ref.get("name") and not status.get(key):
                status[key] = {"name": ref["name"], "namespace": ns}
        if not (after["spec"].get("dataTemplate") or {}).get("name"):
            self._cond(after, names.ASSOCIATE_METADATA, True, names.ASSOCIATE_METADATA_SUCCESS_REASON)
            return True
        try:
            result = self.data.reconcile(meta.name(after), ns, check=check)
        except Requeue:
            raise
        except Invalid as exc:
            self._cond(after, names.ASSOCIATE_METADATA, False, names.ASSOCIATE_METADATA_FAILED_REASON, str(exc))
            raise
        except Exception as exc:  # AllocationFailed and friends: the claim waits, as CAPM3 requeues
            self._cond(after, names.METAL3_DATA_READY, False, names.WAITING_FOR_METAL3_DATA_REASON, str(exc))
            raise Requeue(f"waiting for Metal3Data: {exc}", after=10) from None
        self._cond(after, names.ASSOCIATE_METADATA, True, names.ASSOCIATE_METADATA_SUCCESS_REASON)
        if check:
            return True
        status["renderedData"] = {"name": result["data"], "namespace": ns}
        for key, secret in (result.get("secrets") or {}).items():
            if not status.get(key):  # the user's secrets win
                status[key] = {"name": secret, "namespace": ns}
        self._cond(after, names.METAL3_DATA_READY, True, names.METAL3_DATA_SECRETS_READY_REASON)
        return True

    def _normal(self, m3m, after, machine, m3c, host, check, changed) -> Step:
        ns = meta.namespace(after)
        status = after.setdefault("status", {})
        user_data = host_spec.user_data_secret(after, machine)
        if status.get("userData") != user_data:
            status["userData"] = user_data
        provisioned = bool((status.get("initialization") or {}).get("provisioned"))
        if not provisioned:
            self._metadata(after, check)
        if check:
            would = not provisioned or not (machine.get("status") or {}).get("nodeRef")
            msg = f"would continue on host {meta.name(host)}" if would else f"provisioned on host {meta.name(host)}"
            return Step(done=True, changed=would or changed, message=msg, data=host_ref.report(after, host))
        cluster_name = machine["spec"]["clusterName"]

        def update_host(h):
            if not choose.consumed_by(h, after):
                raise Invalid(
                    f"BareMetalHost {meta.name(h)} is consumed by {(h['spec'].get('consumerRef') or {}).get('name')}",
                    obj=meta.ref(after),
                    field=f"metadata.annotations[{names.HOST_ANNOTATION}]",
                )
            return host_spec.set_host_spec(h, after, machine) | host_spec.ensure_block_move(h)

        host = host_ref.mutate_host(self.store, host, update_host)
        addresses = host_spec.addresses(hosts.hardware_of(self.store, host))
        if status.get("addresses") != addresses:
            status["addresses"] = addresses
        self._cond(after, names.ASSOCIATE_BMH, True, names.ASSOCIATE_BMH_SUCCESS_REASON)
        # the host's error when this run first saw it: only a new one fails the machine
        self._errors.start(hosts.key(host), host.get("status"))
        step = self.driver.reconcile(self.store, host) if hosts.state(host) != names.BMH_STATE_PROVISIONED else None
        host = self.store.get(hosts.KIND, meta.name(host), ns)
        new_error = self._errors.is_new(hosts.key(host), host.get("status"))
        if hosts.state(host) != names.BMH_STATE_PROVISIONED or not hosts.image_deployed(host):
            self._cond(after, names.READY, False, names.NOT_READY_REASON, f"host {meta.name(host)} not provisioned")
            self._save(m3m, after, check)
            summary = hosts.summary(host)
            msg = (step.message if step else "") or f"host {meta.name(host)} is {summary['state']}"
            if hosts.failed(host):
                msg = f"host {meta.name(host)}: {summary['errorType']}: {summary['errorMessage']}"
                if self.fail_on_host_error and new_error:
                    raise CapiError(msg, obj=meta.ref(after))
            poll = step.requeue_after if step and step.requeue_after is not None else 2
            report = host_ref.report(after, host, hostStatus=summary)
            return Step(changed=True, message=msg, requeue_after=poll, data=report)
        try:
            client = self.workload(cluster_name, ns)
            if not provisioned or not after["spec"].get("providerID"):
                node = provider_id.set_node_provider_id(client, after, host, m3c, machine, addresses)
                after["spec"]["providerID"] = node["spec"]["providerID"]
                status.setdefault("initialization", {})["provisioned"] = True
        except Requeue as exc:
            if self.wait_for != "provisioned":
                raise
            # The caller only waits for the host: done, saying what the Node step waits for.
            stored = self._save(m3m, after, check)
            msg = f"host {meta.name(host)} provisioned; {exc.message}"
            return Step(done=True, changed=stored != m3m, message=msg, data=host_ref.report(after, host))
        self._cond(after, names.READY, True, names.READY_REASON)
        stored = self._save(m3m, after, check)
        mstep = capi_machine.reconcile(
            self.store, self.store.get("Machine", meta.name(machine), ns), workload=client, clock=self.clock
        )
        msg = f"host {meta.name(host)} provisioned; Machine {mstep.message}"
        phase = ((mstep.data.get("machine") or {}).get("status") or {}).get("phase")
        return Step(
            done=mstep.done,
            changed=(stored is not m3m and stored != m3m) or mstep.changed,
            message=msg,
            requeue_after=5,
            data=host_ref.report(after, host, machinePhase=phase),
        )

    # -- many at once ------------------------------------------------------------------

    def keys_for_cluster(self, cluster_name: str, ns: str) -> list[tuple[str, str]]:
        """Every Metal3Machine of a cluster: named by its Machines, owned by them, or labelled with the cluster."""
        return infra_machine.keys_for_cluster(self.store, KIND, cluster_name, ns, names.CLUSTER_NAME_LABEL)

    def run(self, keys, **kw):
        """Reconcile (or delete) every (namespace, name) concurrently until done or the deadline."""
        return infra_machine.run(self, keys, **kw)

    def delete_step(self, name: str, ns: str, check: bool = False) -> Step:
        return infra_machine.remove(self, name, ns, self._delete, check=check)

    def _delete(self, m3m: dict, machine: dict | None, check: bool = False) -> Step:
        """reconcileDelete (metal3/machine_delete.py), handed this manager's store, host driver and data manager."""
        return machine_delete.step(
            m3m, machine, store=self.store, driver=self.driver, data=self.data, clock=self.clock, check=check
        )
