"""Older API versions converted on input: objects are stored in the newest version.

CAPM3 v1beta1 -> v1beta2 (the renames of cluster-api-provider-metal3 api/v1beta1/conversion.go,
from the json tags of api/v1beta1 and api/v1beta2):

* Metal3DataTemplate ``metaData.{ipAddresses,prefixes,gateways,dnsServers}FromIPPool``
  -> ``...FromPool``;
* bond ``parameters`` map -> list of ``{name, value}``;
* ``templateReference`` dropped (Metal3DataTemplate, Metal3Data);
* Metal3Machine / Metal3MachineTemplate ``image.format`` -> ``image.diskFormat``;
* Metal3Cluster(Template) ``noCloudProvider`` -> ``cloudProviderEnabled`` (negated);
* Metal3Machine / Metal3Cluster ``status.ready`` -> ``status.initialization.provisioned``;
* Metal3Remediation(Template) ``strategy.timeout`` (a duration) -> ``strategy.timeoutSeconds``.

The old names are also accepted in a v1beta2 object (people copy old
examples); when both old and new are given the new one wins.
"""

from __future__ import annotations

import copy
import re

from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.model import kinds, meta

_FROM_POOL = {
    "ipAddressesFromIPPool": "ipAddressesFromPool",
    "prefixesFromIPPool": "prefixesFromPool",
    "gatewaysFromIPPool": "gatewaysFromPool",
    "dnsServersFromIPPool": "dnsServersFromPool",
}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(h|ms|m|s|us|µs|ns)")
_UNIT = {"h": 3600, "m": 60, "s": 1, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


def _rename(d: dict, old: str, new: str) -> None:
    if isinstance(d, dict) and old in d:
        value = d.pop(old)
        d.setdefault(new, value)


def duration_seconds(value, where: str, field: str) -> int:
    """A Go duration string ("10m", "1h30m", "600s") or a number of seconds, as whole seconds."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(value)
    text = str(value).strip()
    pos, total = 0, 0.0
    for m in _DURATION.finditer(text):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNIT[m.group(2)]
        pos = m.end()
    if not text or pos != len(text):
        raise Invalid(f"invalid duration {value!r}", obj=where, field=field)
    return int(total)


def _data_template_spec(spec: dict, where: str) -> None:
    spec.pop("templateReference", None)
    md = spec.get("metaData")
    if isinstance(md, dict):
        for old, new in _FROM_POOL.items():
            _rename(md, old, new)
    links = (spec.get("networkData") or {}).get("links") or {}
    for i, bond in enumerate(links.get("bonds") or []):
        params = bond.get("parameters") if isinstance(bond, dict) else None
        if isinstance(params, dict):
            # Go maps have no order; sorted keeps the conversion deterministic.
            bond["parameters"] = [{"name": k, "value": v} for k, v in sorted(params.items())]
        elif params is not None and not isinstance(params, list):
            raise Invalid(
                "parameters must be a list of {name, value} (or a v1beta1 map)",
                obj=where,
                field=f"spec.networkData.links.bonds[{i}].parameters",
            )


def _image(spec: dict) -> None:
    if isinstance(spec, dict):
        _rename(spec.get("image") or {}, "format", "diskFormat")


def _cluster_spec(spec: dict) -> None:
    if isinstance(spec, dict) and "noCloudProvider" in spec:
        no_cp = spec.pop("noCloudProvider")
        spec.setdefault("cloudProviderEnabled", not bool(no_cp))


def _strategy(spec: dict, where: str, field: str) -> None:
    strategy = (spec or {}).get("strategy")
    if isinstance(strategy, dict) and "timeout" in strategy:
        timeout = strategy.pop("timeout")
        strategy.setdefault("timeoutSeconds", duration_seconds(timeout, where, f"{field}.strategy.timeout"))


def _ready(obj: dict) -> None:
    status = obj.get("status")
    if isinstance(status, dict) and "ready" in status:
        ready = status.pop("ready")
        status.setdefault("initialization", {}).setdefault("provisioned", bool(ready))


def to_current(obj: dict) -> dict:
    """A copy of ``obj`` in the stored (newest) version of its kind."""
    if not isinstance(obj, dict):
        return obj
    out = copy.deepcopy(obj)
    try:
        k = kinds.of(out)
    except Invalid:
        return out
    where = meta.ref(out)
    spec = out.get("spec") if isinstance(out.get("spec"), dict) else {}
    if k.kind == "Metal3DataTemplate":
        _data_template_spec(spec, where)
    elif k.kind == "Metal3Data":
        spec.pop("templateReference", None)
    elif k.kind == "Metal3Machine":
        _image(spec)
        _ready(out)
    elif k.kind == "Metal3MachineTemplate":
        _image(((spec.get("template") or {}).get("spec")) or {})
    elif k.kind == "Metal3Cluster":
        _cluster_spec(spec)
        _ready(out)
    elif k.kind == "Metal3ClusterTemplate":
        _cluster_spec(((spec.get("template") or {}).get("spec")) or {})
    elif k.kind == "Metal3Remediation":
        _strategy(spec, where, "spec")
    elif k.kind == "Metal3RemediationTemplate":
        _strategy(((spec.get("template") or {}).get("spec")) or {}, where, "spec.template.spec")
    if k.group == kinds.INFRA_GROUP and k.kind.startswith("Metal3"):
        out["apiVersion"] = k.api_version
    return out
