# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""When a control-plane Machine is out of date, as KubeadmControlPlane decides it (pure functions).

A Machine needs a rollout when (KCP internal/filters.go, control_plane.go UpToDate):

- its ``spec.version`` is not the KCP's;
- its infrastructure machine was cloned from another template than ``machineTemplate.spec.infrastructureRef``
  (the ``cloned-from-name`` / ``cloned-from-groupkind`` annotations; a missing object or missing annotations
  never count as a difference);
- its KubeadmConfig differs from ``kubeadmConfigSpec`` in what upstream compares: the KCP spec is adjusted as it
  was for the Machine (no ``joinConfiguration`` for the init machine, no ``initConfiguration`` for a join), and
  what CABPK fills in or KCP adds by itself is ignored (``joinConfiguration.discovery``,
  ``joinConfiguration.controlPlane`` and ``nodeRegistration`` when the KCP spec has none); a missing
  KubeadmConfig never counts as a difference;
- ``rollout.after`` has passed and the Machine was created before it;
- its certificates expire within ``rollout.before.certificatesExpiryDays`` (the
  ``machine.cluster.x-k8s.io/certificates-expiry`` annotation, on the Machine or else on its bootstrap config).

Machine template labels and annotations are in-place fields upstream (propagated, never a rollout) and are not
compared.
"""

from __future__ import annotations

import copy
import datetime

from ansible_collections.baremetal.capi.plugins.module_utils.model import meta, names


def parse_time(text: str) -> datetime.datetime | None:
    try:
        t = datetime.datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=datetime.timezone.utc)


def normalize_version(version: str | None) -> str:
    version = str(version or "")
    return version if not version or version.startswith("v") else "v" + version


def version_tuple(version: str | None) -> tuple:
    """``v1.34.4`` -> (1, 34, 4); pre-release and build parts are ignored."""
    core = normalize_version(version)[1:].split("-", maxsplit=1)[0].split("+", maxsplit=1)[0]
    out = []
    for part in core.split("."):
        try:
            out.append(int(part))
        except ValueError:
            out.append(0)
    return tuple(out)


def _group_kind(ref: dict) -> str:
    group = ref.get("apiGroup") or (ref.get("apiVersion") or "").rpartition("/")[0]
    return f"{ref.get('kind')}.{group}"


def infra_matches(kcp: dict, infra: dict | None) -> bool:
    if infra is None:
        return True
    ann = meta.annotations(infra)
    name = ann.get(names.CLONED_FROM_NAME_ANNOTATION)
    group_kind = ann.get(names.CLONED_FROM_GROUPKIND_ANNOTATION)
    if name is None or group_kind is None:
        return True  # older or adopted machines: not a mismatch (upstream)
    ref = ((kcp["spec"].get("machineTemplate") or {}).get("spec") or {}).get("infrastructureRef") or {}
    return name == ref.get("name") and group_kind == _group_kind(ref)


def _defaulted(spec: dict) -> dict:
    spec = copy.deepcopy(spec or {})
    spec.setdefault("format", "cloud-config")
    for key in list(spec):
        if spec[key] in (None, {}, []) and key not in ("initConfiguration", "joinConfiguration"):
            del spec[key]
    return spec


def comparable_config_specs(kcp_spec: dict, machine_spec: dict) -> tuple[dict, dict]:
    """(KCP's spec, the Machine's KubeadmConfig spec), both cleaned as upstream's matcher cleans them."""
    want = _defaulted(kcp_spec)
    have = _defaulted(machine_spec)
    if "joinConfiguration" not in have:
        want.pop("joinConfiguration", None)
    if "initConfiguration" not in have:
        want.pop("initConfiguration", None)
    if "joinConfiguration" not in want:
        have.pop("joinConfiguration", None)
    for spec in (want, have):
        join = spec.get("joinConfiguration")
        if join is not None:
            join.pop("discovery", None)
    wjoin, hjoin = want.get("joinConfiguration"), have.get("joinConfiguration")
    if wjoin is not None and hjoin is not None:
        if "controlPlane" not in wjoin:
            hjoin.pop("controlPlane", None)
        if not wjoin.get("nodeRegistration"):
            hjoin.pop("nodeRegistration", None)
            wjoin.pop("nodeRegistration", None)
    return want, have


def config_matches(kcp: dict, config: dict | None) -> bool:
    if config is None:
        return True
    want, have = comparable_config_specs(kcp["spec"].get("kubeadmConfigSpec") or {}, config.get("spec") or {})
    return want == have


def certificates_expiry(machine: dict, config: dict | None) -> datetime.datetime | None:
    for obj in (machine, config or {}):
        value = meta.annotations(obj).get(names.CERTIFICATES_EXPIRY_ANNOTATION) if obj else None
        if value:
            return parse_time(value)
    return None


def not_up_to_date_reasons(
    kcp: dict, machine: dict, infra: dict | None, config: dict | None, now: datetime.datetime
) -> list[str]:
    """Why ``machine`` needs a rollout (empty when it is up to date), in upstream's condition message words."""
    spec = kcp["spec"]
    reasons = []
    have, want = normalize_version((machine.get("spec") or {}).get("version")), normalize_version(spec.get("version"))
    if have != want:
        reasons.append(f"Version {have or 'unset'}, {want} required")
    if not infra_matches(kcp, infra):
        ref = ((spec.get("machineTemplate") or {}).get("spec") or {}).get("infrastructureRef") or {}
        cloned = meta.annotations(infra).get(names.CLONED_FROM_NAME_ANNOTATION)
        reasons.append(f"{ref.get('kind')} is not up-to-date (cloned from {cloned}, {ref.get('name')} required)")
    if not config_matches(kcp, config):
        reasons.append("KubeadmConfig is not up-to-date")
    rollout = spec.get("rollout") or {}
    after = parse_time(rollout["after"]) if rollout.get("after") else None
    created = parse_time(machine["metadata"].get("creationTimestamp") or "")
    if after is not None and now >= after and (created is None or created < after):
        reasons.append(f"rollout.after {rollout['after']} has passed")
    days = (rollout.get("before") or {}).get("certificatesExpiryDays")
    expiry = certificates_expiry(machine, config)
    if days and expiry is not None and expiry - now <= datetime.timedelta(days=int(days)):
        reasons.append(f"certificates expire at {expiry.strftime('%Y-%m-%dT%H:%M:%SZ')}, within {days} days")
    return reasons


def max_surge(kcp: dict) -> int:
    strategy = ((kcp["spec"].get("rollout") or {}).get("strategy")) or {}
    return int((strategy.get("rollingUpdate") or {}).get("maxSurge", 1))


def oldest_version(machines: list[dict]) -> str | None:
    """The lowest ``spec.version`` among ``machines`` (KCP's ``status.version``), or None."""
    versions = [
        normalize_version((m.get("spec") or {}).get("version"))
        for m in machines
        if (m.get("spec") or {}).get("version")
    ]
    return min(versions, key=version_tuple) if versions else None
