# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The description's rules against what the store holds already (capi/validate.py runs them before any write).

An API server admits one object at a time, so what only the whole store can refuse is found late upstream
too: Ironic refuses a second port with a MAC it knows, two IPPools of two clusters hand out one address twice,
and kubeadm fails on the joining node when the control plane skips a minor version.  Here each rule reads the
store (every namespace: one Ironic, one network) and raises Invalid naming the description's object and field
and the stored object it collides with.  Sequential runs only: two validations racing each other can both pass
(the write paths do not re-check).
"""

from __future__ import annotations

from ansible_collections.baremetal.capi.plugins.module_utils.capi import description
from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid, NotFound
from ansible_collections.baremetal.capi.plugins.module_utils.metal3 import ipaddr
from ansible_collections.baremetal.capi.plugins.module_utils.model import kinds, meta, names

WHERE = description.WHERE


def _list(store, kind: str) -> list[dict]:
    return [] if store is None else store.list(kind)


def stored(store, kind: str, name: str, ns: str | None):
    """The stored object, or None (no store: a description checked alone)."""
    if store is None:
        return None
    try:
        return store.get(kind, name, ns)
    except NotFound:
        return None


def span_holding(mine: list, key) -> tuple | None:
    """(origin, pool name, span text, field) of the first of the description's pool spans that holds ``key``."""
    for origin, name, spans in mine:
        for lo, hi, text, field in spans:
            if lo <= key <= hi:
                return origin, name, text, field
    return None


# -- hosts: boot MAC and BMC address ---------------------------------------------------------------------


def mac_key(mac: str) -> str:
    return mac.lower().replace("-", ":")


def _unicast(mac: str, where: str, field: str) -> None:
    """Ironic's port needs a host's own address: not the broadcast one, not a group (multicast) one."""
    first = int(mac_key(mac).split(":")[0], 16)
    if mac_key(mac) == "ff:ff:ff:ff:ff:ff":
        raise Invalid(f"{mac} is the broadcast address, not a NIC's", obj=where, field=field)
    if first & 1:
        raise Invalid(f"{mac} is a multicast address (its first octet is odd), not a NIC's", obj=where, field=field)


def hosts(desc: dict, ns: str, built: list[tuple[int, dict]], store) -> None:
    """Each host's boot MAC a unicast one, and boot MAC and BMC address each used by one host: within the
    description, and against every BareMetalHost stored (any namespace) but the host itself.  Ironic refuses a
    second port with a known MAC (exception.MACAlreadyExists) and a BMC enrolled twice is driven by two nodes."""
    seen_mac: dict = {}
    seen_bmc: dict = {}
    for i, host in built:
        where = f"{meta.ref(host)} ({WHERE}.hosts[{i}])"
        spec = host.get("spec") or {}
        mac, bmc = spec.get("bootMACAddress"), (spec.get("bmc") or {}).get("address")
        if mac:
            _unicast(mac, where, "spec.bootMACAddress")
            if mac_key(mac) in seen_mac:
                raise Invalid(
                    f"bootMACAddress {mac} is also hosts[{seen_mac[mac_key(mac)]}]'s: one NIC, one host",
                    obj=where,
                    field="spec.bootMACAddress",
                )
            seen_mac[mac_key(mac)] = i
        if bmc:
            if bmc in seen_bmc:
                raise Invalid(
                    f"BMC address {bmc} is also hosts[{seen_bmc[bmc]}]'s: one BMC, one host",
                    obj=where,
                    field="spec.bmc.address",
                )
            seen_bmc[bmc] = i
    ours = {(meta.namespace(h) or ns, meta.name(h)) for _i, h in built}
    by_mac = {mac_key(m): i for m, i in ((h["spec"].get("bootMACAddress"), i) for i, h in built) if m}
    by_bmc = {(h["spec"].get("bmc") or {}).get("address"): i for i, h in built}
    hosts_by_index = dict(built)
    for other in _list(store, "BareMetalHost"):
        if (meta.namespace(other), meta.name(other)) in ours:
            continue
        spec = other.get("spec") or {}
        other_mac, other_bmc = spec.get("bootMACAddress"), (spec.get("bmc") or {}).get("address")
        if other_mac and mac_key(other_mac) in by_mac:
            i = by_mac[mac_key(other_mac)]
            raise Invalid(
                f"bootMACAddress {other_mac} is already {meta.ref(other)}'s (stored)",
                obj=f"{meta.ref(hosts_by_index[i])} ({WHERE}.hosts[{i}])",
                field="spec.bootMACAddress",
            )
        if other_bmc and other_bmc in by_bmc:
            i = by_bmc[other_bmc]
            raise Invalid(
                f"BMC address {other_bmc} is already {meta.ref(other)}'s (stored)",
                obj=f"{meta.ref(hosts_by_index[i])} ({WHERE}.hosts[{i}])",
                field="spec.bmc.address",
            )


# -- IP pools: overlaps with stored pools and allocated addresses -----------------------------------------


def pools(ns: str, mine: list[tuple[str, str, list]], store, spans_of) -> None:
    """``mine``: (origin, name, spans) of the description's pools.  Refused when a span overlaps a span of any
    other IPPool stored (any namespace, any cluster), or holds an address an IPAddress already has from
    another pool: the hosts of two clusters would fight over one address."""
    names_mine = {name for _o, name, _s in mine}
    for other in _list(store, "IPPool"):
        if meta.namespace(other) == ns and meta.name(other) in names_mine:
            continue  # the stored copy of one of ours
        try:
            theirs = spans_of(other)
        except (Invalid, KeyError, TypeError, ValueError):
            continue  # a stored pool this rule cannot read is not this description's to refuse
        cluster = meta.labels(other).get(names.CLUSTER_NAME_LABEL)
        owner = f", cluster {cluster}" if cluster else ""
        for origin, name, spans in mine:
            for lo, hi, text, field in spans:
                for olo, ohi, otext, _ofield in theirs:
                    if lo <= ohi and olo <= hi:
                        raise Invalid(
                            f"{text} overlaps {otext} of {meta.ref(other)} (stored{owner}): two pools "
                            "would hand out the same addresses",
                            obj=f"IPPool {ns}/{name} ({WHERE}.{origin})",
                            field=field,
                        )
    for kind in (kinds.M3_IPADDRESS, kinds.CAPI_IPADDRESS):
        for address in _list(store, kind):
            spec = address.get("spec") or {}
            ip = ipaddr.parse(spec.get("address"))
            if ip is None:
                continue
            pool = spec.get("pool") or spec.get("poolRef") or {}
            pool_ns = pool.get("namespace") or meta.namespace(address)
            if pool_ns == ns and pool.get("name") in names_mine:
                continue  # handed out by the very pool
            hit = span_holding(mine, (ip.version, ipaddr._int16(ip)))
            if hit:
                origin, name, text, field = hit
                raise Invalid(
                    f"{text} holds {ip}, already allocated ({meta.ref(address)} of pool {pool_ns}/{pool.get('name')})",
                    obj=f"IPPool {ns}/{name} ({WHERE}.{origin})",
                    field=field,
                )


# -- Kubernetes version: KubeadmControlPlane upgrades and the kubelet skew ------------------------------------


def _minor(version) -> tuple[int, int] | None:
    version = str(version or "")
    if not description.VERSION.match(version):
        return None
    return description.minor_of(version)


def kubelet_skew(apiserver_minor: int) -> int:
    """How many minors a kubelet may be older than kube-apiserver: three since Kubernetes 1.28, two before
    (Kubernetes' version skew policy)."""
    return 3 if apiserver_minor >= 28 else 2


def versions(desc: dict, ns: str, version: str, store) -> None:
    """Against the stored KubeadmControlPlane: upstream's webhook refuses skipping a minor
    (controlplane/kubeadm/internal/webhooks/kubeadm_control_plane.go, validateVersion) and kubeadm a minor
    downgrade (cmd/kubeadm/app/phases/upgrade/policy.go, EnforceVersionPolicies).  Against the stored
    MachineDeployments, when the control plane goes up a minor: no worker pool left more minors behind it than
    the kubelet skew allows (without an upgrade the run itself brings the workers to the version)."""
    if store is None:
        return
    try:
        kcp = store.get("KubeadmControlPlane", f"{desc['name']}-control-plane", ns)
    except NotFound:
        return  # a new cluster: nothing to upgrade from
    old_version = (kcp.get("spec") or {}).get("version")
    new, old = _minor(version), _minor(old_version)
    if new is None or old is None or new <= old:
        if new is not None and old is not None and new < old:
            raise Invalid(
                f"cannot downgrade Kubernetes from {old_version} to {version}: kubeadm upgrades, it does not "
                "go back a minor version",
                obj=f"{meta.ref(kcp)} ({WHERE}.kubernetes_version)",
                field="spec.version",
            )
        return  # no control-plane upgrade: the run itself brings the workers to the version
    if new[0] != old[0] or new[1] >= old[1] + 2:
        raise Invalid(
            f"cannot update Kubernetes version from {old_version} to {version} (one minor version at a time: "
            f"v{old[0]}.{old[1] + 1}.x next)",
            obj=f"{meta.ref(kcp)} ({WHERE}.kubernetes_version)",
            field="spec.version",
        )
    selector = f"{names.CLUSTER_NAME_LABEL}={desc['name']}"
    for md in store.list("MachineDeployment", ns, selector):
        md_version = (((md.get("spec") or {}).get("template") or {}).get("spec") or {}).get("version")
        have = _minor(md_version)
        if have is None or have[0] != new[0]:
            continue
        skew = kubelet_skew(new[1])
        if new[1] - have[1] > skew:
            raise Invalid(
                f"the control plane at {version} would be {new[1] - have[1]} minor versions ahead of "
                f"{meta.ref(md)}'s kubelets at {md_version}; a kubelet may be at most {skew} "
                "older than kube-apiserver: bring the workers to the control plane's version first",
                obj=WHERE,
                field="kubernetes_version",
            )
