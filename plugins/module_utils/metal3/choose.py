# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""chooseHost and the claim: which BareMetalHost a Metal3Machine gets (cluster-api-provider-metal3
baremetal/metal3machine_manager.go chooseHost, Associate).

The choice is CAPM3's: the host already consumed by this machine wins; a host
labelled for node reuse by this machine's control plane / MachineDeployment
comes next; otherwise a uniformly random ``ready``/``available`` host, preferring
the machine's failure domain.  Deleting, errored, paused and unhealthy hosts are
never chosen.

The claim is where this collection differs on purpose: CAPM3 serialises
association with a process mutex.  Here the claim is a write of
``spec.consumerRef`` carrying the resourceVersion the host was listed at; the
store refuses it (Conflict) when anyone else wrote the host since, and the
loser lists again and chooses again.  That holds across processes and across
machines sharing a kubernetes store.
"""

from __future__ import annotations

import copy
import random

from ansible_collections.baremetal.capi.plugins.module_utils.capi import refs
from ansible_collections.baremetal.capi.plugins.module_utils.errors import NoHostAvailable, Requeue
from ansible_collections.baremetal.capi.plugins.module_utils.hosts import base as hosts
from ansible_collections.baremetal.capi.plugins.module_utils.model import kinds, meta, names, selectors
from ansible_collections.baremetal.capi.plugins.module_utils.store import common
from ansible_collections.baremetal.capi.plugins.module_utils.store import mutate as rmw

NO_HOST = "No available host found"
# How many times one claim is retried after losing a race before the step gives up for now.
CLAIM_ATTEMPTS = 10

_SYSTEM_RANDOM = random.SystemRandom()  # CAPM3 picks with crypto/rand
CONSUMER_NAME = "spec.consumerRef.name"
_REUSE = selectors.requirement(names.NODE_REUSE_LABEL, "exists")


def host_selector(m3m: dict) -> selectors.Selector:
    """spec.hostSelector as a label selector; matchExpressions operators lower-cased as CAPM3 does."""
    hs = (m3m.get("spec") or {}).get("hostSelector") or {}
    where = f"{meta.ref(m3m)}: spec.hostSelector"
    exprs = [dict(e, operator=str(e.get("operator", "")).lower()) for e in hs.get("matchExpressions") or []]
    return selectors.parse({"matchLabels": hs.get("matchLabels") or {}, "matchExpressions": exprs}, where=where)


def consumed_by(host: dict, m3m: dict) -> bool:
    ref = (host.get("spec") or {}).get("consumerRef") or {}
    group = (ref.get("apiVersion") or "").split("/")[0]
    return (
        ref.get("kind") == "Metal3Machine"
        and group == kinds.INFRA_GROUP
        and ref.get("name") == meta.name(m3m)
        and (ref.get("namespace") or meta.namespace(host)) == meta.namespace(m3m)
    )


def skip_reason(host: dict) -> str | None:
    """Why a host can never be chosen (deleting, errored, paused, unhealthy), or None."""
    if meta.is_deleting(host):
        return "deleting"
    if (host.get("status") or {}).get("errorMessage"):
        return "error"
    ann = meta.annotations(host)
    if names.BMH_PAUSED_ANNOTATION in ann:
        return "paused"
    if names.UNHEALTHY_ANNOTATION in ann or names.UNHEALTHY_ANNOTATION_DEPRECATED in ann:
        return "unhealthy"
    return None


def node_reuse_value(store, machine: dict | None) -> str | None:
    """``cp-<KubeadmControlPlane>`` or ``md-<MachineDeployment>`` for the machine's owner, or None."""
    if machine is None:
        return None
    labels = meta.labels(machine)
    ns = meta.namespace(machine)
    if names.CONTROL_PLANE_LABEL in labels:
        kcp = refs.owner_of_kind(machine, "KubeadmControlPlane")
        name = kcp["name"] if kcp else labels.get(names.CONTROL_PLANE_NAME_LABEL)
        return f"cp-{name}" if name else None
    ms_ref = refs.owner_of_kind(machine, "MachineSet")
    md_name = labels.get(names.DEPLOYMENT_NAME_LABEL)
    if ms_ref:
        ms = refs.get_or_none(store, "MachineSet", ms_ref["name"], ns)
        md_ref = refs.owner_of_kind(ms, "MachineDeployment") if ms else None
        md_name = md_ref["name"] if md_ref else md_name
    return f"md-{md_name}" if md_name else None


def classify(hosts_list: list[dict], m3m: dict, reuse_value: str | None):
    """(own host or None, reuse candidates, available candidates, skipped reasons) — pure."""
    reuse, available, skipped = [], [], {}
    for host in hosts_list:
        if consumed_by(host, m3m):
            return host, [], [], skipped
        reuse_label = meta.labels(host).get(names.NODE_REUSE_LABEL)
        if reuse_label is not None:
            if reuse_label != reuse_value:
                skipped[meta.name(host)] = "node-reuse label for another group"
                continue
        elif (host.get("spec") or {}).get("consumerRef"):
            ref = host["spec"]["consumerRef"]
            skipped[meta.name(host)] = f"consumed by {ref.get('kind')} {ref.get('namespace') or ''}/{ref.get('name')}"
            continue
        why = skip_reason(host)
        if why:
            skipped[meta.name(host)] = why
            continue
        if reuse_label is not None:
            reuse.append(host)
        elif hosts.state(host) in (names.BMH_STATE_READY, names.BMH_STATE_AVAILABLE):
            available.append(host)
        else:
            skipped[meta.name(host)] = f"state {hosts.state(host) or 'unregistered'}"
    return None, reuse, available, skipped


def pick(available: list[dict], failure_domain: str | None, rng=None) -> dict:
    """Uniformly random, among the failure domain's hosts when there are any (else all)."""
    rng = rng or _SYSTEM_RANDOM
    if failure_domain:
        in_fd = [h for h in available if meta.labels(h).get(names.FAILURE_DOMAIN_LABEL) == failure_domain]
        if in_fd:
            return rng.choice(in_fd)
    return rng.choice(available)


def candidates(store, m3m: dict, selector) -> list[dict]:
    """The hosts ``classify`` can pick from, read without decoding the hosts other machines consume.

    Free hosts, the host this machine already consumes, and node-reuse hosts (which keep their consumerRef):
    three indexed queries (store ``fields`` and label filters) instead of every host the selector matches.
    """
    ns = meta.namespace(m3m)
    if not getattr(store, "indexes_fields", False):  # the filters would be applied after reading every host
        return store.list(hosts.KIND, ns, selector)
    found = {}
    for host in (
        store.list(hosts.KIND, ns, selector, fields={CONSUMER_NAME: None})
        + store.list(hosts.KIND, ns, selector, fields={CONSUMER_NAME: meta.name(m3m)})
        + store.list(hosts.KIND, ns, selectors.Selector([*selector.requirements, _REUSE]))
    ):
        found[meta.name(host)] = host
    return [found[name] for name in sorted(found)]  # the store's order: by name


def choose_host(store, m3m: dict, machine: dict | None, rng=None, exclude=()) -> tuple[dict | None, str]:
    """(host, reason) where reason is the AssociateBareMetalHost success reason; (None, why) when none.

    ``exclude``: host names to leave out (check mode: those other machines of the batch would take).
    """
    host, reason = _choose(store, m3m, machine, rng, exclude)
    return (host, reason) if host is not None else (None, reason.message)


def _choose(store, m3m: dict, machine: dict | None, rng=None, exclude=()):
    selector = host_selector(m3m)
    reuse_value = node_reuse_value(store, machine)
    if getattr(store, "indexes_fields", False):
        found = _choose_indexed(store, m3m, selector, reuse_value, rng, exclude)
        if found is not None:
            return found
    # Every host the selector matches, classified (the kubernetes store: the API server filters custom resources
    # by labels only); on the sqlite store, the way to the NoHostAvailable error and its reasons.
    listed = [h for h in candidates(store, m3m, selector) if meta.name(h) not in exclude]
    own, reuse, available, skipped = classify(listed, m3m, reuse_value)
    if own is not None:
        return own, names.ASSOCIATE_BMH_SUCCESS_REASON
    if reuse:
        return _reuse_choice(reuse)
    if not available:
        return None, no_host(store, m3m, selector, listed, skipped, exclude)
    return pick(available, (m3m.get("spec") or {}).get("failureDomain"), rng), names.ASSOCIATE_BMH_SUCCESS_REASON


def _reuse_choice(reuse: list[dict]):
    not_ready = [h for h in reuse if hosts.state(h) not in (names.BMH_STATE_READY, names.BMH_STATE_AVAILABLE)]
    if not_ready:
        raise Requeue(f"node-reuse host(s) {', '.join(meta.name(h) for h in not_ready)} not ready yet", after=30)
    return reuse[-1], names.ASSOCIATE_BMH_VIA_NODE_REUSE_SUCCESS_REASON


# What classify asks of an "available" host, as store field filters (one index answers them on the sqlite store);
# the node-reuse label DoesNotExist and the host selector are label requirements beside them.
_FREE_FIELDS = common.FREE_HOST_FIELDS
_REUSE_ONLY = selectors.Selector([_REUSE])
_NO_REUSE = selectors.requirement(names.NODE_REUSE_LABEL, selectors.NOT_EXISTS)


def _choose_indexed(store, m3m: dict, selector, reuse_value, rng, exclude):
    """The choice classify + pick make among every candidate, reading whole only the hosts that must be read:
    the one this machine consumes and the node-reuse ones (few), then the names of the available hosts (the
    store filters them: classify's rules as field filters), a random one of which is read and checked again.
    None when there is no host to take (the caller's full read then says why)."""
    ns = meta.namespace(m3m)
    few = {}
    # (the node-reuse hosts by their label alone, the selector checked here: SQLite would otherwise walk every
    # host of the namespace for the selector's label lists)
    reusable = [h for h in store.list(hosts.KIND, ns, _REUSE_ONLY) if selector.matches(meta.labels(h))]
    for host in store.list(hosts.KIND, ns, selector, fields={CONSUMER_NAME: meta.name(m3m)}) + reusable:
        few[meta.name(host)] = host
    own, reuse, _available, _skipped = classify(
        [few[name] for name in sorted(few) if name not in exclude], m3m, reuse_value
    )
    if own is not None:
        return own, names.ASSOCIATE_BMH_SUCCESS_REASON
    if reuse:
        return _reuse_choice(reuse)
    rng = rng or _SYSTEM_RANDOM
    free = selectors.Selector([*selector.requirements, _NO_REUSE])
    fd = (m3m.get("spec") or {}).get("failureDomain")
    for _attempt in range(CLAIM_ATTEMPTS):
        # pick()'s rule: uniformly random among the failure domain's hosts when there are any, else among all;
        # the same name-ordered lists pick() draws from, so that a given rng draws the same host
        pool = []
        if fd and selectors.label_value_error(fd) is None:  # (no label can hold another value)
            pool = _free_hosts(store, ns, selectors.Selector([*free.requirements, _in_domain(fd)]), exclude)
        in_fd = bool(pool)
        if not pool:
            pool = _free_hosts(store, ns, free, exclude)
        if not pool:
            return None
        name = meta.name(rng.choice(pool))
        host = refs.get_or_none(store, hosts.KIND, name, ns)
        # written since it was listed (claimed, say): choose again, as a lost claim does
        if host is not None and selector.matches(meta.labels(host)) and classify([host], m3m, reuse_value)[2]:
            if not in_fd or meta.labels(host).get(names.FAILURE_DOMAIN_LABEL) == fd:
                return host, names.ASSOCIATE_BMH_SUCCESS_REASON
    return None


def _in_domain(fd: str):
    return selectors.requirement(names.FAILURE_DOMAIN_LABEL, selectors.EQUALS, [fd])


def _free_hosts(store, ns: str, selector, exclude) -> list[dict]:
    """The available hosts as {"metadata": {name, namespace}}, by name (what pick draws from)."""
    return [
        {"metadata": {"name": name, "namespace": ns}}
        for _ns, name in store.list_keys(hosts.KIND, ns, selector, fields=_FREE_FIELDS)
        if name not in exclude
    ]


def no_host(store, m3m: dict, selector, _listed: list, skipped: dict, exclude=()) -> NoHostAvailable:
    """The typed error: "No available host found: no available host matching <selector> ...", with every host
    of the namespace seen and why each was not taken (CAPM3 logs only the first line)."""
    ns = meta.namespace(m3m)
    fd = (m3m.get("spec") or {}).get("failureDomain")
    every = store.list(hosts.KIND, ns)
    shown = str(selector) or "any labels"
    text = f"{NO_HOST}: no available host matching {shown}" + (f" (failure domain {fd}, preferred)" if fd else "")
    matching = sum(1 for h in every if selector.matches(meta.labels(h)))
    text += f"; {len(every)} BareMetalHost(s) in {ns}, {matching} matching"
    reasons = dict(skipped)
    for name in exclude:
        reasons.setdefault(name, "taken by another machine of this run")
    for host in every:
        ref = (host.get("spec") or {}).get("consumerRef") or {}
        if not selector.matches(meta.labels(host)):
            reasons.setdefault(meta.name(host), "labels do not match")
        elif ref.get("name"):  # candidates() never read the consumed hosts: say why they were not taken
            reasons.setdefault(
                meta.name(host), f"consumed by {ref.get('kind')} {ref.get('namespace') or ns}/{ref['name']}"
            )
    if reasons:
        text += ": " + "; ".join(f"{name} {why}" for name, why in sorted(reasons.items())[:20])
        if len(reasons) > 20:
            text += f"; ... {len(reasons) - 20} more"
    return NoHostAvailable(
        text, selector=shown, failure_domain=fd, seen=len(every), skipped=reasons, obj=meta.ref(m3m), after=30
    )


def consumer_ref(m3m: dict) -> dict:
    return {
        "apiVersion": m3m["apiVersion"],
        "kind": m3m["kind"],
        "name": meta.name(m3m),
        "namespace": meta.namespace(m3m),
    }


def claimed(host: dict, m3m: dict, cluster_name: str) -> dict:
    """The host as the claim writes it: consumerRef, cluster label, node-reuse label gone (pure)."""
    new = copy.deepcopy(host)
    new["spec"]["consumerRef"] = consumer_ref(m3m)
    labels = new["metadata"].setdefault("labels", {})
    labels[names.CLUSTER_NAME_LABEL] = cluster_name
    labels.pop(names.NODE_REUSE_LABEL, None)
    return new


def claim(store, m3m: dict, machine: dict, *, prepare=None, check: bool = False, rng=None, exclude=()):
    """Choose a host and claim it; returns (host, reason).  NoHostAvailable (a Requeue) when none.

    ``prepare(host) -> host`` adds what the same write should carry (the host
    spec when there is no data template).  The write carries the listed
    resourceVersion: on Conflict another claimer won (or the host moved), so
    list and choose again.
    """
    cluster_name = machine["spec"]["clusterName"]

    def attempt():
        host, reason = _choose(store, m3m, machine, rng, exclude)
        if host is None:
            raise reason
        if check:
            return host, reason
        new = claimed(host, m3m, cluster_name)
        if prepare is not None:
            new = prepare(new)
        if new == host:
            return host, reason
        new.pop("status", None)
        return store.update(new), reason

    return rmw.on_conflict(attempt, what="the host chosen", attempts=CLAIM_ATTEMPTS, after=0.2, obj=meta.ref(m3m))
