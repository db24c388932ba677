"""Webhook rules of the kinds whose validation lived nowhere else: Metal3MachineTemplate,
Metal3ClusterTemplate, the Metal3 IPAddress, and CAPMAAS's immutability rules.

* Metal3MachineTemplate (C:internal/webhooks/v1beta1/metal3machinetemplate_webhook.go): without a
  ``customDeploy.method`` the template's image is validated as a Metal3Machine's.
* Metal3ClusterTemplate (metal3clustertemplate_webhook.go): ``spec.template.spec`` must be a
  valid Metal3Cluster spec; on update the *old* object is checked too (upstream refuses an update
  of a template that was stored invalid).
* IPAddress, ipam.metal3.io (I:internal/webhooks/v1alpha1/ipaddress_webhook.go): pool name,
  claim name and a valid address required; address, pool and claim immutable.
* MaasMachine / MaasMachineTemplate / MaasCluster (CAPMAAS api webhooks):
  ``image``, ``minCPU``, ``minMemory`` and ``dnsDomain`` cannot change; upstream's words (a
  BadRequest, no field), with the field named here.
"""

from __future__ import annotations

import json

from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta, names


def _spec(obj: dict, *path: str) -> dict:
    cur = obj.get("spec") or {}
    for key in path:
        cur = (cur or {}).get(key) or {}
    return cur


def _q(value) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


# -- Metal3 ---------------------------------------------------------------------------------


def validate_metal3_machine_template(obj: dict, old: dict | None = None) -> None:
    from ansible_collections.baremetal.capi.plugins.module_utils.metal3 import host_spec

    host_spec.validate_image(_spec(obj, "template", "spec"), meta.ref(obj), "spec.template.spec")


def validate_metal3_cluster_template(obj: dict, old: dict | None = None) -> None:
    from ansible_collections.baremetal.capi.plugins.module_utils.metal3 import cluster

    for which in ([old] if old is not None else []) + [obj]:
        shaped = {"metadata": obj.get("metadata") or {}, "spec": _spec(which, "template", "spec")}
        try:
            cluster.validate(shaped)
        except Invalid as exc:
            state = " (the stored object)" if which is old else ""
            raise Invalid(exc.message + state, obj=meta.ref(obj), field=f"spec.template.{exc.field}") from None


def validate_metal3_ipaddress(obj: dict, old: dict | None = None) -> None:
    from ansible_collections.baremetal.capi.plugins.module_utils.metal3 import ipaddr

    where, spec = meta.ref(obj), obj.get("spec") or {}
    if old is None:
        for field, value in (
            ("spec.pool.name", _spec(obj, "pool").get("name", "")),
            ("spec.claim.name", _spec(obj, "claim").get("name", "")),
            ("spec.address", spec.get("address", "")),
        ):
            if not value:
                raise Invalid(f"Invalid value: {_q(value)}: cannot be empty", obj=where, field=field)
        if ipaddr.parse(spec["address"]) is None:
            raise Invalid(
                f"Invalid value: {_q(spec['address'])}: is not a valid IP address", obj=where, field="spec.address"
            )
        requested = meta.annotations(obj).get(names.IPADDRESS_ANNOTATION)
        if requested and ipaddr.parse(requested) is None:
            raise Invalid(
                f"Invalid value: {_q(requested)}: is not a valid IP address",
                obj=where,
                field=f"metadata.annotations.{names.IPADDRESS_ANNOTATION}",
            )
        return
    ospec = old.get("spec") or {}
    if spec.get("address") != ospec.get("address"):
        raise Invalid(f"Invalid value: {_q(spec.get('address'))}: cannot be modified", obj=where, field="spec.address")
    for key in ("pool", "claim"):
        new_ref, old_ref = spec.get(key) or {}, ospec.get(key) or {}
        if any(new_ref.get(k, "") != old_ref.get(k, "") for k in ("name", "namespace", "kind")):
            raise Invalid(f"Invalid value: {_q(new_ref)}: cannot be modified", obj=where, field=f"spec.{key}")


# -- CAPMAAS ----------------------------------------------------------------------------------


def _maas_machine_immutable(obj: dict, old: dict | None, template: bool) -> None:
    if old is None:
        return
    path = ("template", "spec") if template else ()
    new, prev = _spec(obj, *path), _spec(old, *path)
    what = "maas machine template" if template else "maas machine"
    base = "spec.template.spec" if template else "spec"
    where = meta.ref(obj)
    if new.get("image") != prev.get("image"):
        raise Invalid(
            f"{what} image change is not allowed, old={prev.get('image') or ''}, new={new.get('image') or ''}",
            obj=where,
            field=f"{base}.image",
        )
    if new.get("minCPU") != prev.get("minCPU"):
        raise Invalid(
            f"{what} min cpu count change is not allowed, old={prev.get('minCPU')}, new={new.get('minCPU')}",
            obj=where,
            field=f"{base}.minCPU",
        )
    if new.get("minMemory") != prev.get("minMemory"):
        raise Invalid(
            f"{what} min memory change is not allowed, old={prev.get('minMemory')} MB, new={new.get('minMemory')} MB",
            obj=where,
            field=f"{base}.minMemory",
        )


def validate_maas_machine(obj: dict, old: dict | None = None) -> None:
    _maas_machine_immutable(obj, old, template=False)


def validate_maas_machine_template(obj: dict, old: dict | None = None) -> None:
    _maas_machine_immutable(obj, old, template=True)


def validate_maas_cluster(obj: dict, old: dict | None = None, template: bool = False) -> None:
    if old is None:
        return
    path = ("template", "spec") if template else ()
    if _spec(obj, *path).get("dnsDomain") != _spec(old, *path).get("dnsDomain"):
        field = "spec.template.spec.dnsDomain" if template else "spec.dnsDomain"
        raise Invalid("changing cluster DNS Domain not allowed", obj=meta.ref(obj), field=field)
