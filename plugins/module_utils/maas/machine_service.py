# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The MAAS machine service: every MAAS call the MaasMachine flow makes for one machine (cluster-api-provider-maas
pkg/maas/machine/machine.go).

CAPMAAS's MaasMachineReconciler never talks to MAAS itself: it goes through its machine service
(``pkg/maas/machine``: GetMachine, DeployMachine = allocate + swap off + deploy, ReleaseMachine, PowerOnMachine)
and its DNS service. This file is that service; ``maas/machine.py`` (the reconcile) and
``maas/machine_delete.py`` (reconcileDelete) read the objects, decide, and call it. It knows nothing of the
store or of conditions: it takes what MAAS needs and returns MAAS's answer (machines as MAAS's JSON dicts),
raising the client's errors (``MaasConflict`` for a 409) for the caller to decide on.
"""

from __future__ import annotations

from ansible_collections.baremetal.capi.plugins.module_utils.maas import dns, lxd, network
from ansible_collections.baremetal.capi.plugins.module_utils.maas.client import MaasConflict
from ansible_collections.baremetal.capi.plugins.module_utils.model import names


class MachineService:
    """One MAAS client (and the cluster's preferred DNS subnets) for the machines of a MaasMachine flow."""

    def __init__(self, client, *, subnets=None):
        self.client = client
        self.subnets = subnets

    # -- reads ---------------------------------------------------------------------------

    def get_machine(self, system_id: str | None) -> dict | None:
        """GetMachine: the machine, or None when there is no system ID or MAAS has no such machine."""
        return self.client.read_machine(system_id) if system_id else None

    def allocated_to(self, agent_name: str) -> list[dict]:
        """Machines allocated (and still in use) under ``agent_name``: an allocation an earlier run made."""
        found = self.client.list_machines(agent_name=agent_name)
        return [m for m in found if m.get("status_name") in names.MAAS_STATES_OPERATIONAL]

    def list_machines(self) -> list[dict]:
        """Every machine MAAS has (read only): what explains a refused allocation."""
        return self.client.list_machines()

    # -- allocate ------------------------------------------------------------------------

    def compose_vm(self, mm: dict, machine: dict | None, *, check: bool) -> str | None:
        """The system_id of the Ready LXD VM for ``mm``, composed first (maas/lxd.py); None in check mode."""
        return lxd.ensure_vm(self.client, mm, machine, check=check)

    def excluding(self, constraints: dict, avoid: set) -> dict:
        """``constraints`` narrowed to the ready, unowned machines other than ``avoid``.

        op=allocate cannot exclude a machine; GET machines/ can (not_id): allocate among the rest.
        A MaasConflict when none is left.
        """
        listed = self.client.list_machines(**constraints, status="ready", not_id=sorted(avoid))
        candidates = sorted(x["system_id"] for x in listed if x.get("owner") is None)
        if not candidates:
            raise MaasConflict(
                f"no available machine matches, other than {', '.join(sorted(avoid))} (deployment failed recently)",
                status=409,
                content=f"only {', '.join(sorted(avoid))} match, and their deployment failed recently",
            )
        return {**constraints, "system_id": candidates}

    def allocate(self, constraints: dict, *, agent_name: str, dry_run: bool) -> dict:
        """op=allocate (MaasConflict when no machine matches); ``dry_run`` only says which machine it would be."""
        return self.client.allocate(constraints, dry_run=dry_run, agent_name=agent_name)

    # -- deploy, power, release ------------------------------------------------------------

    def deploy(self, m: dict, *, user_data_b64, osystem, distro_series, ephemeral, static=None, swap_off=True) -> dict:
        """DeployMachine on an allocated machine: the static IP (spectro-master), swap off, op=deploy."""
        sid = m["system_id"]
        if static is not None:
            network.apply(self.client, m, static)  # spectro-master: the boot interface gets staticIP first
        if swap_off and m.get("swap_size") not in (0, "0"):
            self.client.update_machine(sid, swap_size="0")
        return self.client.deploy(
            sid, user_data_b64=user_data_b64, osystem=osystem, distro_series=distro_series, ephemeral=ephemeral
        )

    def power_on(self, system_id: str) -> None:
        self.client.power_on(system_id, comment=names.MAAS_POWER_ON_COMMENT)

    def release(self, system_id: str, *, comment: str) -> None:
        """op=release; a MaasConflict when MAAS cannot release it now (already releasing, or busy)."""
        self.client.release(system_id, comment=comment)

    def decompose_vm(self, mm: dict, m: dict | None) -> bool:
        """Delete a composed VM's machine (MAAS decomposes it); True when one was deleted."""
        return lxd.decompose(self.client, mm, m)

    # -- the cluster's DNS record ------------------------------------------------------------

    def reconcile_dns(self, store, cluster_name: str, ns: str, *, check: bool) -> dict:
        """The DNS service's reconcile of the cluster's API record (maas/dns.py), through this client."""
        return dns.reconcile_dns(store, self.client, cluster_name, ns, subnets=self.subnets, check=check)
