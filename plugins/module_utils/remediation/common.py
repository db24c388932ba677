# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Remediation strings, the webhook rules and the template defaults (cluster-api-provider-metal3
api/v1beta1/metal3remediation_types.go,
internal/webhooks/v1beta1/metal3remediation_webhook.go and metal3remediationtemplate_webhook.go).

The upstream strings model/names.py does not hold yet live here, once; the
shared ones (finalizers, backup annotations, the unhealthy annotation) are
imported from there.
"""

from __future__ import annotations

import copy
import datetime

from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta, names

# status.phase (api/v1beta2/metal3remediation_types.go)
PHASE_RUNNING = "Running"
PHASE_WAITING = "Waiting"
PHASE_DELETING = "Deleting machine"
PHASE_FAILED = "Failed"
TERMINAL = (PHASE_DELETING, PHASE_FAILED)

REBOOT = "Reboot"
DEFAULT_RETRY_LIMIT = 1
DEFAULT_TIMEOUT_SECONDS = 600
MIN_TIMEOUT_SECONDS = 100

# The power-off request CAPM3 puts on the host: reboot.metal3.io/metal3-remediation-<uid>
POWER_OFF_VALUE = '{"mode":"hard","force":false}'
# The out-of-service taint (Kubernetes non-graceful node shutdown, GA in 1.28)
OUT_OF_SERVICE_TAINT = {"key": "node.kubernetes.io/out-of-service", "value": "nodeshutdown", "effect": "NoExecute"}
OUT_OF_SERVICE_MIN_VERSION = (1, 28)
UNHEALTHY_ANNOTATION_VALUE = "capm3/UnhealthyNode"
WAITING_FOR_REMEDIATION_REASON = "WaitingForRemediation"  # CAPI v1beta1 OwnerRemediated reason
SKIP_REMEDIATION_ANNOTATION = "cluster.x-k8s.io/skip-remediation"

# MAAS (this collection's own, CAPMAAS has no remediation): the request on the MaasMachine, in the same
# shape as Metal3's, and the tag a machine gets at the retry limit, which allocation then excludes.
MAAS_POWER_OFF_PREFIX = names.MAAS_POWER_OFF_PREFIX
MAAS_UNHEALTHY_TAG = names.MAAS_UNHEALTHY_TAG

FENCING = ("auto", "taint", "delete")


def parse_time(value: str | None) -> datetime.datetime | None:
    if not value:
        return None
    return datetime.datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.UTC)


def now(clock=None) -> datetime.datetime:
    t = clock() if clock else datetime.datetime.now(datetime.UTC)
    return t.astimezone(datetime.UTC).replace(microsecond=0)


def fmt(t: datetime.datetime) -> str:
    return t.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def strategy(rem: dict) -> dict:
    return (rem.get("spec") or {}).get("strategy") or {}


def timeout_seconds(rem: dict) -> int:
    # 0 passes the webhook; the CRD default (600) is what the controller then works with
    return int(strategy(rem).get("timeoutSeconds") or DEFAULT_TIMEOUT_SECONDS)


def retry_limit(rem: dict) -> int:
    value = strategy(rem).get("retryLimit")
    return DEFAULT_RETRY_LIMIT if value is None else int(value)


def _check_strategy(st: dict, where: str, field: str) -> None:
    """The three webhook rules (internal/webhooks/v1beta2/metal3remediation_webhook.go)."""
    if st.get("type") != REBOOT:
        raise Invalid(
            f"only supported remediation strategy is {REBOOT}, got {st.get('type')!r}", obj=where, field=f"{field}.type"
        )
    timeout = st.get("timeoutSeconds")
    if timeout is not None and (not isinstance(timeout, int) or (timeout != 0 and timeout < MIN_TIMEOUT_SECONDS)):
        raise Invalid(
            f"min duration is {MIN_TIMEOUT_SECONDS}s, got {timeout!r}", obj=where, field=f"{field}.timeoutSeconds"
        )
    limit = st.get("retryLimit")
    if limit is not None and (not isinstance(limit, int) or limit < 1):
        raise Invalid(f"minimum retry limit is 1, got {limit!r}", obj=where, field=f"{field}.retryLimit")


def default_remediation(rem: dict) -> dict:
    """The CRD defaults (retryLimit 1, timeoutSeconds 600) on a copy."""
    out = copy.deepcopy(rem)
    st = out.setdefault("spec", {}).get("strategy")
    if st is not None:
        st.setdefault("retryLimit", DEFAULT_RETRY_LIMIT)
        st.setdefault("timeoutSeconds", DEFAULT_TIMEOUT_SECONDS)
    return out


def validate_remediation(rem: dict) -> None:
    st = (rem.get("spec") or {}).get("strategy")
    if st is not None:
        _check_strategy(st, meta.ref(rem), "spec.strategy")


def default_template(tmpl: dict) -> dict:
    """The template webhook's defaults: type "" -> Reboot, timeoutSeconds 0 -> 600, retryLimit < 1 -> 1."""
    out = copy.deepcopy(tmpl)
    st = out.setdefault("spec", {}).setdefault("template", {}).setdefault("spec", {}).setdefault("strategy", {})
    if not st.get("type"):
        st["type"] = REBOOT
    if not st.get("timeoutSeconds"):
        st["timeoutSeconds"] = DEFAULT_TIMEOUT_SECONDS
    if st.get("retryLimit") is None or st["retryLimit"] < 1:
        st["retryLimit"] = DEFAULT_RETRY_LIMIT
    return out


def validate_template(tmpl: dict) -> None:
    st = ((((tmpl.get("spec") or {}).get("template") or {}).get("spec") or {}).get("strategy")) or {}
    _check_strategy(st, meta.ref(tmpl), "spec.template.spec.strategy")


def power_off_key(rem: dict) -> str:
    """The request annotation for this remediation: the prefix plus its uid (cluster-api-provider-metal3
    baremetal/metal3remediation_manager.go getPowerOffAnnotationKey)."""
    uid = rem["metadata"]["uid"]
    if rem.get("kind") == "MaasRemediation":
        return MAAS_POWER_OFF_PREFIX + uid
    return names.REBOOT_REMEDIATION_PREFIX + uid
