# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The whole description admitted before the first write (the ``cluster_validate`` module's engine).

An API server admits each object of a ``kubectl apply -f`` on its own, so a bad IPPool is refused only
after the Cluster and its templates were written.  Here every object the description produces - the
ones the description filter maps (``objects``), and the IPPools, Metal3DataTemplate, Metal3Cluster and
BareMetalHosts the roles write from it - goes through the same webhooks together, with the stored
object as the old one, plus the rules that span objects (overlapping pools, networkData pools that
exist, gateways inside their subnet, credentials Secrets present).  The add-ons' manifest files are read
and parsed here too (``addons_base_dir``, as the addons role takes them), with their ConfigMaps and
ClusterResourceSets admitted like the rest.  ``validate`` raises Invalid naming
the object (and the description key it comes from) and the field, or returns the plan: each object
with ``create``, ``update`` or ``unchanged``.
"""

from __future__ import annotations

import ipaddress

from ansible_collections.baremetal.capi.plugins.module_utils import webhooks
from ansible_collections.baremetal.capi.plugins.module_utils.capi import (
    addon_sets,
    description,
    validate_data,
    validate_stored,
)
from ansible_collections.baremetal.capi.plugins.module_utils.capi import description_objects as cd
from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.hosts import bmc
from ansible_collections.baremetal.capi.plugins.module_utils.maas import state as maas_state
from ansible_collections.baremetal.capi.plugins.module_utils.metal3 import host as bmh
from ansible_collections.baremetal.capi.plugins.module_utils.metal3 import host_spec, ipaddr, render
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta, names

CLUSTER_NAME_LABEL = names.CLUSTER_NAME_LABEL


def secrets(desc) -> list[str]:
    """The secret values a description may carry (BMC passwords, a store token), to register as no_log."""
    if not isinstance(desc, dict):
        return []
    out = [h.get("bmc_password") for h in desc.get("hosts") or [] if isinstance(h, dict)]
    store = desc.get("store") if isinstance(desc.get("store"), dict) else {}
    out.append(store.get("api_key"))
    return [v for v in out if isinstance(v, str) and v]


_stored = validate_stored.stored  # the stored object, or None


def _named(exc: Invalid, origin: str) -> Invalid:
    """The webhook's error with the description key the object comes from."""
    obj = f"{exc.obj} ({description.WHERE}.{origin})" if exc.obj else f"{description.WHERE}.{origin}"
    return Invalid(exc.message, obj=obj, field=exc.field)


def _admit(obj: dict, origin: str, store, plan: list) -> dict:
    try:
        meta.validate_object(obj, for_create=True)
        old = _stored(store, obj["kind"], meta.name(obj), meta.namespace(obj))
        out = webhooks.admit(obj, old)
        _template_webhook(out)
    except Invalid as exc:
        raise _named(exc, origin) from None
    spec_of = {k: v for k, v in out.items() if k not in ("metadata", "status", "apiVersion")}
    if old is None:
        action = "create"
    else:
        action = "unchanged" if all(old.get(k) == v for k, v in spec_of.items()) else "update"
    plan.append({"kind": out["kind"], "namespace": meta.namespace(out), "name": meta.name(out), "action": action})
    return out


def _template_webhook(obj: dict) -> None:
    """Machine templates: the infrastructure machine's webhook on the template's spec (as CAPM3/CAPMAAS do)."""
    spec = ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}
    machine = {"Metal3MachineTemplate": ("Metal3Machine", host_spec.validate), "MaasMachineTemplate": (
        "MaasMachine", maas_state.validate)}.get(obj["kind"])  # fmt: skip
    if machine is None:
        return
    kind, webhook = machine
    try:
        webhook({"apiVersion": obj["apiVersion"], "kind": kind, "metadata": obj["metadata"], "spec": spec})
    except Invalid as exc:
        raise Invalid(exc.message, obj=meta.ref(obj), field="spec.template." + (exc.field or "spec")) from None


def validate(desc: dict, objects: list[dict], store=None, addons_base_dir: str | None = None) -> list[dict]:
    """Admit everything ``desc`` produces; Invalid on the first error, else the plan (nothing is written)."""
    description.check(desc)
    ns = desc.get("namespace") or "default"
    if desc["provider"] == "metal3":
        _ironic_images(desc)
    validate_stored.versions(desc, ns, str(desc.get("kubernetes_version") or cd.DEFAULT_VERSION), store)
    plan: list = []
    admitted = [_admit(obj, _origin(desc, obj), store, plan) for obj in objects]
    for obj in addon_sets.desired(desc["name"], ns, desc.get("addons") or [], addons_base_dir):
        _admit(obj, "addons", store, plan)
    by_kind: dict = {}
    for obj in admitted:
        by_kind.setdefault(obj["kind"], []).append(obj)
    if desc["provider"] == "metal3":
        labels = {CLUSTER_NAME_LABEL: desc["name"]}
        m3c = meta.new("Metal3Cluster", desc["name"], ns, spec={"controlPlaneEndpoint": _endpoint(desc)}, labels=labels)
        fds = _failure_domains(desc)
        if fds:
            m3c["spec"]["failureDomains"] = fds
        _admit(m3c, "control_plane_endpoint", store, plan)
        pools = _ip_pools(desc, ns, labels, store, plan)
        _data_templates(desc, ns, labels, pools, by_kind.get("Metal3MachineTemplate", []), store, plan)
        _hosts(desc, ns, store, plan)
    return plan


def _ironic_images(desc: dict) -> None:
    """What Ironic would refuse minutes after a host was claimed (a checksum of the wrong length for its type, a
    URL it cannot fetch): here, before the first write.  Not in description.check: the description filter and
    the objects a test stores may carry placeholder checksums that never reach Ironic."""
    pools = [("control_plane", desc["control_plane"])]
    pools += [(f"workers[{i}]", p) for i, p in enumerate(desc.get("workers") or [])]
    for field, pool in pools:
        wrong = host_spec.ironic_image_errors(pool.get("image") or {})
        if wrong:
            description.fail(wrong[1], f"{field}.image.{wrong[0]}")


def _origin(desc: dict, obj: dict) -> str:
    """The description key an object of the filter comes from, for the message."""
    kind, name = obj.get("kind"), meta.name(obj) or ""
    if kind in ("Namespace", "Cluster", "Metal3Cluster", "MaasCluster"):
        return {"Namespace": "namespace", "MaasCluster": "control_plane"}.get(kind, "name")
    if kind == "KubeadmControlPlane" or name.startswith(f"{desc['name']}-control-plane-"):
        return "control_plane"
    for i, pool in enumerate(desc.get("workers") or []):
        if name.startswith(f"{desc['name']}-{pool.get('name')}"):
            return f"workers[{i}]"
    return kind or "objects"


def _endpoint(desc: dict) -> dict:
    ep = dict(desc.get("control_plane_endpoint") or {})
    ep.setdefault("port", 6443)
    return ep


def _failure_domains(desc: dict) -> list[dict]:
    cp = list((desc.get("control_plane") or {}).get("failure_domains") or [])
    workers = [fd for p in desc.get("workers") or [] for fd in p.get("failure_domains") or [] if fd not in cp]
    return [{"name": fd, "controlPlane": True} for fd in cp] + [
        {"name": fd, "controlPlane": False} for fd in dict.fromkeys(workers)
    ]


# -- IP pools ------------------------------------------------------------------------------------------


def _ip_pools(desc: dict, ns: str, labels: dict, store, plan: list) -> dict:
    """{name: IPPool} of the description, each admitted, then checked against the others."""
    pools: dict = {}
    spans: list = []
    for i, entry in enumerate(desc.get("ip_pools") or []):
        origin = f"ip_pools[{i}]"
        obj = meta.new("IPPool", entry["name"], ns, spec=meta.deepcopy(entry["spec"]), labels=dict(labels))
        obj["spec"].setdefault("allocationStrategy", "sequential")  # the CRD default
        where = meta.ref(obj)
        try:
            old = _stored(store, "IPPool", entry["name"], ns)
            ipaddr.validate_pool(obj, old)
            for span in _pool_rules(obj):
                for other_origin, other_name, other in spans:
                    if other_name != entry["name"] and span[0] <= other[1] and other[0] <= span[1]:
                        raise Invalid(
                            f"{span[2]} overlaps {other[2]} of IPPool {ns}/{other_name} ({description.WHERE}."
                            f"{other_origin}): two pools would hand out the same addresses",
                            obj=where,
                            field=span[3],
                        )
                spans.append((origin, entry["name"], span))
        except Invalid as exc:
            raise _named(exc, origin) from None
        plan.append({"kind": "IPPool", "namespace": ns, "name": entry["name"], "action": _action(old, obj)})
        pools[entry["name"]] = obj
    mine = [(o, name, [s for _o, n, s in spans if n == name]) for o, name in _origins(desc)]
    _endpoint_outside_pools(desc, ns, mine)
    validate_stored.pools(ns, mine, store, _pool_rules)
    return pools


def _origins(desc: dict) -> list[tuple[str, str]]:
    return [(f"ip_pools[{i}]", entry["name"]) for i, entry in enumerate(desc.get("ip_pools") or [])]


def _endpoint_outside_pools(desc: dict, ns: str, mine: list) -> None:
    """The API endpoint is the cluster's own (a VIP or a load balancer): a pool that holds it would give it to a
    host's NIC too."""
    host = (desc.get("control_plane_endpoint") or {}).get("host")
    ip = ipaddr.parse(host)
    if ip is None:
        return
    hit = validate_stored.span_holding(mine, (ip.version, ipaddr._int16(ip)))
    if hit:
        origin, name, text, _field = hit
        raise Invalid(
            f"{ip} is inside {text} of IPPool {ns}/{name} ({description.WHERE}.{origin}): the pool would "
            "hand the API endpoint's address to a host",
            obj=description.WHERE,
            field="control_plane_endpoint.host",
        )


def _action(old, new) -> str:
    if old is None:
        return "create"
    return "unchanged" if old.get("spec") == new.get("spec") else "update"


def _pool_rules(pool: dict) -> list[tuple]:
    """What the IPPool webhook leaves to the first allocation: prefix range per IP version, start, end and
    gateway inside the subnet.  Returns each entry's (lo, hi, text, field) for the overlap check."""
    where, spec = meta.ref(pool), pool["spec"]
    spans = []
    for i, entry in enumerate(spec.get("pools") or []):
        field = f"spec.pools[{i}]"
        start, end = ipaddr.parse(entry.get("start")), ipaddr.parse(entry.get("end"))
        net = ipaddress.ip_network(entry["subnet"], strict=False) if entry.get("subnet") else None
        version = (start or end or net).version
        prefix = entry.get("prefix", spec.get("prefix"))
        top = 32 if version == 4 else 128
        pfield = f"{field}.prefix" if "prefix" in entry else "spec.prefix"
        if prefix is not None and not 0 < prefix <= top:
            raise Invalid(f"prefix {prefix} is out of range for IPv{version} (1..{top})", obj=where, field=pfield)
        if net is None and prefix and (start or end):
            net = ipaddress.ip_network(f"{start or end}/{prefix}", strict=False)
        if net is not None:
            if net.version != version:
                raise Invalid("subnet and start/end are of different IP versions", obj=where, field=f"{field}.subnet")
            for key, ip in (("start", start), ("end", end)):
                if ip is not None and ip not in net:
                    raise Invalid(f"{key} {ip} is outside the subnet {net}", obj=where, field=f"{field}.{key}")
        gateway = entry.get("gateway", spec.get("gateway"))
        gfield = f"{field}.gateway" if "gateway" in entry else "spec.gateway"
        if gateway is not None and net is not None:
            gw = ipaddr.parse(gateway)
            if gw is None or gw.version != version or gw not in net:
                raise Invalid(f"gateway {gateway} is outside the subnet {net}", obj=where, field=gfield)
        r = ipaddr.Range(entry)
        lo, hi = r.lo, r.hi
        if net is not None:  # Range counts in Go's 16-byte form
            hi = min(hi, ipaddr._int16(net.broadcast_address))
        if hi >= lo:
            spans.append(((version, lo), (version, hi), f"{field} ({ipaddr._from16(lo)}-{ipaddr._from16(hi)})", field))
    return spans


# -- data templates ------------------------------------------------------------------------------------


def _data_templates(desc, ns, labels, pools: dict, m3mts: list, store, plan: list) -> None:
    dt = desc.get("data_template") or {}
    own = dt.get("name") or f"{desc['name']}-nodes"
    obj = meta.new("Metal3DataTemplate", own, ns, spec=meta.deepcopy(dt.get("spec") or {}), labels=dict(labels))
    template = _admit(obj, "data_template", store, plan)
    validate_data.provider_id_rendered(desc, template)
    validate_data.host_interfaces(desc, template, ns, store)
    try:
        refs = render.referenced_pools(template, None)
    except Invalid as exc:
        raise _named(exc, "data_template") from None
    for pool, ref in refs.items():
        if not render.is_metal3_pool(ref) or pool in pools or _stored(store, "IPPool", pool, ns) is not None:
            continue
        known = ", ".join(sorted(pools)) or "none"
        raise _named(
            Invalid(
                f'pool "{pool}" not found (the description\'s ip_pools: {known}; none stored in {ns} either)',
                obj=meta.ref(template),
                field=ref["field"],
            ),
            "data_template",
        )
    for m3mt in m3mts:
        name = ((m3mt["spec"].get("template") or {}).get("spec") or {}).get("dataTemplate", {}).get("name")
        if name and name != own and _stored(store, "Metal3DataTemplate", name, ns) is None:
            raise Invalid(
                f"Metal3DataTemplate {ns}/{name} not found (the description makes only {own})",
                obj=meta.ref(m3mt),
                field="spec.template.spec.dataTemplate.name",
            )


# -- hosts ---------------------------------------------------------------------------------------------


def _hosts(desc: dict, ns: str, store, plan: list) -> None:
    built = []
    for i, entry in enumerate(desc.get("hosts") or []):
        origin = f"hosts[{i}]"
        try:
            objs = bmh.build(entry, ns)
            host = objs[0]
            before = _stored(store, "BareMetalHost", meta.name(host), meta.namespace(host))
            meta.validate_object(host, for_create=True)
            bmh.validate(host, before)
            _credentials(host, objs, store)
        except Invalid as exc:
            raise _named(exc, origin) from None
        plan.append({"kind": "BareMetalHost", "namespace": meta.namespace(host), "name": meta.name(host)})
        plan[-1]["action"] = "create" if before is None else "update"
        built.append((i, host))
    validate_stored.hosts(desc, ns, built, store)


def _credentials(host: dict, objs: list, store) -> None:
    """A BMC that needs credentials names a Secret that is given inline or stored (BMO waits forever otherwise)."""
    spec = host.get("spec") or {}
    address = (spec.get("bmc") or {}).get("address")
    if not address:
        raise Invalid("a BMC address is required to register the host", obj=meta.ref(host), field="spec.bmc.address")
    if bmc.parse(address).fake:
        return
    secret = spec["bmc"]["credentialsName"]
    if any(o["kind"] == "Secret" for o in objs):
        return
    stored = _stored(store, "Secret", secret, meta.namespace(host))
    if stored is None:
        raise Invalid(
            f"credentials Secret {meta.namespace(host)}/{secret} not found: give bmc_username and bmc_password or "
            "create the Secret first",
            obj=meta.ref(host),
            field="spec.bmc.credentialsName",
        )
    data = {**(stored.get("data") or {}), **(stored.get("stringData") or {})}
    missing = [k for k in ("username", "password") if not data.get(k)]
    if missing:
        raise Invalid(
            f"credentials Secret {meta.namespace(host)}/{secret} has no {' or '.join(missing)}",
            obj=meta.ref(host),
            field="spec.bmc.credentialsName",
        )
