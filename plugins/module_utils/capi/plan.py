# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The machines part of a run's plan (``cluster_validate`` with ``plan_machines``; check mode).

``--check`` cannot run the rounds of a cluster that does not exist yet (there is no Machine to step), so the
plan works out from the description and what is stored what the rounds would do: how many Machines each
KubeadmControlPlane / MachineDeployment would create or delete, and for each new Machine the BareMetalHost or
MAAS machine it would get (or why none fits), the metaData / networkData CAPM3 would render for it and the
addresses its IPClaims would take.  It reads the store (and, for MAAS, lists the machines) and writes
nothing.  The choices follow the engine's: KCP's fewest-machines failure domain, CAPM3's host filter
(choose.classify: free, ready or available, not paused / errored / deleting, the template's hostSelector),
MAAS's allocate filters (maas.machine.why_not), the IPPool's next addresses (IPAM.peek).  Where upstream picks
at random (CAPM3 among the free hosts, MAAS among the matching machines) the plan names the first by name and
says how many others would do.  User data is never shown (it carries the join token and the cluster CAs).
"""

from __future__ import annotations

import copy
import json

from ansible_collections.baremetal.capi.plugins.module_utils.capi import failure_domains
from ansible_collections.baremetal.capi.plugins.module_utils.capi.machineset import deletion_rank
from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid, NotFound
from ansible_collections.baremetal.capi.plugins.module_utils.hosts import base as hosts
from ansible_collections.baremetal.capi.plugins.module_utils.maas import machine as maas_machine
from ansible_collections.baremetal.capi.plugins.module_utils.maas.constraints import allocate_constraints
from ansible_collections.baremetal.capi.plugins.module_utils.metal3 import choose, render
from ansible_collections.baremetal.capi.plugins.module_utils.metal3 import host as bmh_objects
from ansible_collections.baremetal.capi.plugins.module_utils.metal3.data_addresses import _answer
from ansible_collections.baremetal.capi.plugins.module_utils.metal3.ipam import IPAM
from ansible_collections.baremetal.capi.plugins.module_utils.model import kinds, meta, names, selectors

NEW = "<new-{}>"  # upstream names a Machine when it creates it (KCP / MachineSet: a random suffix)


class _Promised:
    """The store as read, plus the IPAddresses earlier machines of this plan would take (so two new machines
    are never promised one address)."""

    def __init__(self, store):
        self.store, self.taken = store, set()

    def get(self, kind, name, ns):
        if kind == kinds.M3_IPADDRESS and (name, ns) in self.taken:
            return {"metadata": {"name": name, "namespace": ns}}
        return self.store.get(kind, name, ns)

    def __getattr__(self, attr):
        return getattr(self.store, attr)


def _get(store, kind, name, ns):
    try:
        return store.get(kind, name, ns)
    except NotFound:
        return None


def _by(objects: list[dict], kind: str) -> list[dict]:
    return [o for o in objects if o.get("kind") == kind]


def _template_spec(objects, store, ref: dict, ns: str) -> dict:
    name = (ref or {}).get("name")
    found = next((o for o in _by(objects, ref.get("kind")) if meta.name(o) == name), None) if name else None
    found = found or (_get(store, ref.get("kind"), name, ns) if name else None) or {}
    return ((found.get("spec") or {}).get("template") or {}).get("spec") or {}


def _groups(desc: dict, objects: list[dict], store, ns: str) -> list[dict]:
    """The KubeadmControlPlane and each MachineDeployment: desired and stored replicas, their Machines."""
    cluster = desc["name"]
    machines = [
        m
        for m in store.list("Machine", ns, selectors.parse({"matchLabels": {names.CLUSTER_NAME_LABEL: cluster}}))
        if not meta.is_deleting(m)
    ]
    out = []
    for kcp in _by(objects, "KubeadmControlPlane"):
        ref = (((kcp.get("spec") or {}).get("machineTemplate") or {}).get("spec") or {}).get("infrastructureRef")
        stored = _get(store, "KubeadmControlPlane", meta.name(kcp), ns)
        own = [m for m in machines if names.CONTROL_PLANE_LABEL in meta.labels(m)]
        domains = list((desc.get("control_plane") or {}).get("failure_domains") or [])
        out.append(dict(kind="KubeadmControlPlane", name=meta.name(kcp), role="control-plane", obj=kcp,
                        stored=stored, machines=own, infra=_template_spec(objects, store, ref or {}, ns),
                        domains=domains))  # fmt: skip
    described = set()
    for md in _by(objects, "MachineDeployment"):
        described.add(meta.name(md))
        tspec = (md.get("spec") or {}).get("template", {}).get("spec") or {}
        stored = _get(store, "MachineDeployment", meta.name(md), ns)
        own = [m for m in machines if meta.labels(m).get(names.DEPLOYMENT_NAME_LABEL) == meta.name(md)]
        fd = tspec.get("failureDomain")
        out.append(dict(kind="MachineDeployment", name=meta.name(md), role="worker", obj=md, stored=stored,
                        machines=own, infra=_template_spec(objects, store, tspec.get("infrastructureRef") or {}, ns),
                        domains=[fd] if fd else []))  # fmt: skip
    for md in store.list(
        "MachineDeployment", ns, selectors.parse({"matchLabels": {names.CLUSTER_NAME_LABEL: cluster}})
    ):
        if meta.name(md) not in described:  # a pool no longer described: the machines role removes it
            own = [m for m in machines if meta.labels(m).get(names.DEPLOYMENT_NAME_LABEL) == meta.name(md)]
            gone = dict(md, spec={**md.get("spec", {}), "replicas": 0})
            out.append(dict(kind="MachineDeployment", name=meta.name(md), role="worker", obj=gone, stored=md,
                            machines=own, infra={}, domains=[], removed=True))  # fmt: skip
    return out


def _victims(group: dict, count: int) -> list[str]:
    """The Machines a scale-down takes: KCP's from the fullest failure domain, the MachineSet's by its order."""
    live = list(group["machines"])
    if group["kind"] == "KubeadmControlPlane":
        cluster = {"status": {"failureDomains": [{"name": d, "controlPlane": True} for d in group["domains"]]}}
        out = []
        for _i in range(count):
            victim = failure_domains.machine_for_scale_down(cluster, live)
            out.append(meta.name(victim))
            live = [m for m in live if meta.name(m) != meta.name(victim)]
        return out
    order = ((group["obj"].get("spec") or {}).get("deletion") or {}).get("order") or "Random"
    oldest = [
        meta.name(m) for m in sorted(live, key=lambda m: (m["metadata"].get("creationTimestamp", ""), meta.name(m)))
    ]
    return [meta.name(m) for m in sorted(live, key=lambda m: deletion_rank(m, order, oldest))[:count]]


# -- Metal3 --------------------------------------------------------------------------------------------


def _metal3_hosts(desc: dict, store, ns: str) -> tuple[list[dict], set]:
    """The namespace's BareMetalHosts as the machines would see them after registration: the stored ones, and
    the described ones this run would register (taken as available, with their HardwareData's details)."""
    found = {meta.name(h): h for h in store.list(hosts.KIND, ns)}
    registered_now = set()
    for entry in desc.get("hosts") or []:
        objs = bmh_objects.build(entry, ns)
        host = objs[0]
        if meta.name(host) in found:
            continue
        hw = next((o["spec"]["hardware"] for o in objs if o["kind"] == "HardwareData"), None)
        host["status"] = {"provisioning": {"state": names.BMH_STATE_AVAILABLE}, **({"hardware": hw} if hw else {})}
        found[meta.name(host)] = host
        registered_now.add(meta.name(host))
    return [found[n] for n in sorted(found)], registered_now


def _choose_host(every: list[dict], infra: dict, fd: str | None, taken: set, m3m: dict) -> tuple[dict | None, str]:
    selector = choose.host_selector(m3m)
    listed = [h for h in every if selector.matches(meta.labels(h)) and meta.name(h) not in taken]
    _own, _reuse, available, skipped = choose.classify(listed, m3m, None)
    if not available:
        reasons = dict(skipped)
        reasons.update({n: "taken by another new machine of this plan" for n in taken})
        reasons.update({meta.name(h): "labels do not match" for h in every if not selector.matches(meta.labels(h))})
        text = f"no available host matching {selector or 'any labels'}; {len(every)} BareMetalHost(s)"
        return None, text + (": " + "; ".join(f"{n} {why}" for n, why in sorted(reasons.items())) if reasons else "")
    in_fd = [h for h in available if fd and meta.labels(h).get(names.FAILURE_DOMAIN_LABEL) == fd]
    pool = in_fd or available
    where = f" in failure domain {fd}" if in_fd else ""
    return pool[0], f"{len(pool)} candidate(s) left: free hosts{where} matching {selector or 'any labels'}"


def _render(desc, objects, store, ipam, ns, infra, m3m, machine, host, index) -> dict:
    """metaData, networkData and the addresses, as CAPM3's Metal3Data would render them for this host."""
    dt_name = (infra.get("dataTemplate") or {}).get("name")
    if not dt_name:
        return {}
    own = desc.get("data_template") or {}
    if dt_name == (own.get("name") or f"{desc['name']}-nodes"):
        template = meta.new("Metal3DataTemplate", dt_name, ns, spec=copy.deepcopy(own.get("spec") or {}))
    else:
        template = _get(store, "Metal3DataTemplate", dt_name, ns) or meta.new("Metal3DataTemplate", dt_name, ns)
    data = meta.new("Metal3Data", f"{dt_name}-{index}", ns, spec={"index": index})
    pools = render.referenced_pools(template, {"metal3machine": m3m, "machine": machine, "baremetalhost": host})
    described_pools = {p["name"]: p for p in desc.get("ip_pools") or []}
    answers, addresses = {}, []
    for pool, ref in pools.items():
        if not render.is_metal3_pool(ref):
            answers[pool] = {"address": "", "prefix": 0, "gateway": "", "dnsServers": []}
            addresses.append(f"{pool}: from the IPAM provider of {ref.get('kind')} {pool} (not planned)")
            continue
        entry = described_pools.get(pool)
        pool_obj = (
            meta.new("IPPool", pool, ns, spec=copy.deepcopy(entry["spec"]))
            if entry
            else _get(store, "IPPool", pool, ns)
        )
        if pool_obj is None:
            raise Invalid(f'pool "{pool}" not found', obj=meta.ref(template), field=ref["field"])
        addr = ipam.peek(pool_obj, meta.new("IPClaim", f"{meta.name(data)}-{pool}", ns))
        if addr is None:
            answers[pool] = {"address": "", "prefix": 0, "gateway": "", "dnsServers": []}
            addresses.append(f"{pool}: pool exhausted")
            continue
        ipam.store.taken.add((meta.name(addr), ns))
        answers[pool] = _answer(addr, dns=True)
        gw = f" gateway {answers[pool]['gateway']}" if answers[pool]["gateway"] else ""
        addresses.append(f"{answers[pool]['address']}/{answers[pool]['prefix']}{gw} (IPPool {pool})")
    ctx = render.RenderContext(template, data, m3m, machine, host, answers)
    try:
        md, nd = render.render_meta_data(ctx), render.render_network_data(ctx)
    except Invalid as exc:  # a host not inspected yet has no NICs: the render waits for it, and so does the plan
        return {"addresses": addresses, "render_error": exc.message, "data": meta.name(data)}
    return {"addresses": addresses, "metaData": md, "networkData": nd, "data": meta.name(data)}


# -- the plan ------------------------------------------------------------------------------------------


def machines(desc: dict, objects: list[dict], store, maas_machines: list[dict] | None = None) -> dict:
    """{"create": [...], "delete": [...], "groups": [...], "lines": [...]} of the description against the store."""
    ns = desc.get("namespace") or "default"
    provider = desc["provider"]
    exists = _get(store, "Cluster", desc["name"], ns) is not None
    groups = _groups(desc, objects, store, ns)
    if provider == "metal3":
        every, registered_now = _metal3_hosts(desc, store, ns)
        ipam = IPAM(_Promised(store))
        indexes = {}
    taken: set = set()
    creates, deletes, out_groups = [], [], []
    for g in groups:
        want = int((g["obj"].get("spec") or {}).get("replicas") or 0)
        before = (g["stored"] or {}).get("spec", {}).get("replicas") if g["stored"] else None
        have = len(g["machines"])
        summary = dict(kind=g["kind"], name=g["name"], role=g["role"], replicas_before=before, replicas=want,
                       machines=have, create=max(0, want - have), delete=max(0, have - want),
                       removed=bool(g.get("removed")))  # fmt: skip
        out_groups.append(summary)
        for victim in _victims(g, summary["delete"]):
            deletes.append({"group": g["name"], "role": g["role"], "machine": victim})
        planned = list(g["machines"])
        for _i in range(summary["create"]):
            n = len(creates) + 1
            fd = None
            if g["domains"]:
                fd = failure_domains.pick_fewest(g["domains"], planned, [m for m in planned if not meta.is_deleting(m)])
            new_machine = meta.new("Machine", NEW.format(n), ns, spec={"clusterName": desc["name"]})
            if fd:
                new_machine["spec"]["failureDomain"] = fd
            planned.append(new_machine)
            row = {"group": g["name"], "role": g["role"], "machine": NEW.format(n), "failure_domain": fd}
            if provider == "metal3":
                m3m = meta.new("Metal3Machine", NEW.format(n), ns, spec=copy.deepcopy(g["infra"]))
                host, why = _choose_host(every, g["infra"], fd, taken, m3m)
                row.update(host=meta.name(host) if host else None, why=why)
                if host is not None:
                    taken.add(meta.name(host))
                    row["host_registered_by_this_run"] = meta.name(host) in registered_now
                    dt = (g["infra"].get("dataTemplate") or {}).get("name")
                    indexes[dt] = indexes.get(dt, _lowest_index(store, dt, ns))
                    row.update(_render(desc, objects, store, ipam, ns, g["infra"], m3m, new_machine, host, indexes[dt]))
                    indexes[dt] += 1
            else:
                row.update(_maas_choice(maas_machines, g["infra"], new_machine, fd, taken))
            creates.append(row)
    result = {"cluster": desc["name"], "namespace": ns, "provider": provider, "exists": exists,
              "groups": out_groups, "create": creates, "delete": deletes}  # fmt: skip
    result["lines"] = lines(result)
    return result


def _lowest_index(store, template: str | None, ns: str) -> int:
    stored = _get(store, "Metal3DataTemplate", template, ns) if template else None
    used = {e.get("index") for e in ((stored or {}).get("status") or {}).get("indexes") or []}
    i = 0
    while i in used:
        i += 1
    return i


def _maas_choice(listed: list[dict] | None, infra: dict, machine: dict, fd: str | None, taken: set) -> dict:
    mm = {"spec": dict(infra, **({"failureDomain": fd} if fd else {}))}
    constraints = allocate_constraints(mm, machine)
    wanted = ", ".join(f"{k}={','.join(v) if isinstance(v, list) else v}" for k, v in constraints.items())
    wanted = wanted or "no constraints"
    if listed is None:
        return {"host": None, "why": f"MAAS not asked (no connection given); would allocate with {wanted}"}
    why = maas_machine.why_not([m for m in listed if m.get("system_id") not in taken], constraints)
    fits = sorted(
        (m for m in listed if m.get("system_id") not in taken and why.get(_maas_name(m), "").startswith("matches")),
        key=lambda m: (m.get("hostname") or "", m.get("system_id")),
    )
    if not fits:
        promised = [m for m in listed if m.get("system_id") in taken]
        reasons = {**why, **{_maas_name(m): "taken by another new machine of this plan" for m in promised}}
        text = f"no available MAAS machine matching {wanted}; {len(listed)} MAAS machine(s)"
        return {
            "host": None,
            "why": text + (": " + "; ".join(f"{n} {w}" for n, w in sorted(reasons.items())) if reasons else ""),
        }
    m = fits[0]
    taken.add(m.get("system_id"))
    addrs = list(m.get("ip_addresses") or []) or ["assigned by MAAS when it deploys the machine"]
    zone = (m.get("zone") or {}).get("name")
    why = f"{len(fits)} candidate(s) left: Ready MAAS machines matching {wanted}"
    return {"host": f"{m.get('hostname')} ({m.get('system_id')}, zone {zone})", "why": why, "addresses": addrs}


def _maas_name(m: dict) -> str:
    sid = m.get("system_id") or "?"
    return f"{m.get('hostname') or sid} ({sid})" if m.get("hostname") else sid


def _replicas(g: dict) -> str:
    if g["removed"]:
        return f"replicas {g['replicas_before']} -> removed (pool no longer described)"
    if g["replicas_before"] is None:
        return f"replicas {g['replicas']} (new)"
    if g["replicas_before"] == g["replicas"]:
        return f"replicas {g['replicas']} (unchanged)"
    return f"replicas {g['replicas_before']} -> {g['replicas']}"


def _compact(value) -> str:
    return json.dumps(value, sort_keys=True, separators=(", ", ": "))


def lines(plan: dict) -> list[str]:
    """The plan as text: one block, a line per group, machine, address and rendered data."""
    head = "new cluster" if not plan["exists"] else "existing cluster"
    n_c, n_d = len(plan["create"]), len(plan["delete"])
    out = [f"plan of {plan['namespace']}/{plan['cluster']} ({plan['provider']}, {head}): "
           f"{n_c} machine(s) to create, {n_d} to delete - nothing written (check mode)"]  # fmt: skip
    for g in plan["groups"]:
        counts = (f", create {g['create']}" if g["create"] else "") + (f", delete {g['delete']}" if g["delete"] else "")
        out.append(f"{g['kind']} {g['name']}: {_replicas(g)}, {g['machines']} machine(s) now{counts}")
        for d in (d for d in plan["delete"] if d["group"] == g["name"]):
            out.append(f"  - {d['machine']} ({d['role']}): would be deleted")
        for c in (c for c in plan["create"] if c["group"] == g["name"]):
            fd = f", failure domain {c['failure_domain']}" if c.get("failure_domain") else ""
            if c.get("host") is None:
                out.append(f"  + {c['machine']} ({c['role']}{fd}): NO HOST - {c['why']}")
                continue
            reg = " (registered by this run)" if c.get("host_registered_by_this_run") else ""
            out.append(f"  + {c['machine']} ({c['role']}{fd}): host {c['host']}{reg} - {c['why']}")
            for a in c.get("addresses") or []:
                out.append(f"      address: {a}")
            if c.get("render_error"):
                out.append(f"      metaData/networkData: rendered once the host is inspected ({c['render_error']})")
            if c.get("metaData") is not None:
                out.append(f"      metaData ({c['data']}): {_compact(c['metaData'])}")
            if c.get("networkData") is not None:
                out.append(f"      networkData: {_compact(c['networkData'])}")
    if plan["create"]:
        pick = "CAPM3 picks at random" if plan["provider"] == "metal3" else "MAAS picks at allocation"
        out.append(f"(hosts: the first candidate by name is shown; {pick} among the candidates. User data not shown:"
                   " it carries the join token and the cluster's CA keys)")  # fmt: skip
    return out
