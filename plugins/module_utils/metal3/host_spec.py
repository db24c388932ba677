# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Pure functions over a Metal3Machine and its BareMetalHost (cluster-api-provider-metal3
baremetal/metal3machine_manager.go setHostSpec, Delete, SetPauseAnnotation; internal/webhooks/v1beta1/
metal3machine_webhook.go).

The Metal3Machine webhook's image rules, the user data secret choice,
setHostSpec and its undoing on delete, the pause annotations, and the
machine's addresses from the host's hardware details.  Nothing here reads or
writes a store.
"""

from __future__ import annotations

import json
import os
from urllib.parse import urlparse

from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta, names

CHECKSUM_TYPES = ("md5", "sha256", "sha512")
DISK_FORMATS = ("raw", "qcow2", "vdi", "vmdk", names.IMAGE_FORMAT_LIVE_ISO)
CLEANING_MODES = (names.CLEANING_MODE_METADATA, names.CLEANING_MODE_DISABLED)

# Host states during which delete waits for the host (cluster-api-provider-metal3 baremetal/metal3machine_manager.go
# Delete).
DELETE_WAIT_STATES = (
    names.BMH_STATE_PREPARING,
    names.BMH_STATE_PROVISIONING,
    names.BMH_STATE_PROVISIONED,
    names.BMH_STATE_DEPROVISIONING,
    names.BMH_STATE_POWERING_OFF_BEFORE_DELETE,
    names.BMH_STATE_DELETING,
)
DELETE_NO_WAIT_STATES = (
    names.BMH_STATE_REGISTERING,
    names.BMH_STATE_MATCH_PROFILE,
    names.BMH_STATE_INSPECTING,
    names.BMH_STATE_READY,
    names.BMH_STATE_AVAILABLE,
    names.BMH_STATE_NONE,
    names.BMH_STATE_UNMANAGED,
)


def _parse_request_uri(url: str) -> bool:
    """Go's url.ParseRequestURI: an absolute URI (scheme) or an absolute path, no fragment."""
    if not url or "#" in url or any(c in url for c in " \t\n"):
        return False
    return bool(urlparse(url).scheme) or url.startswith("/")


def validate_image(spec: dict, where: str, field: str = "spec") -> None:
    """The Metal3Machine webhook (C:internal/webhooks/v1beta2): Invalid naming the field, or nothing."""
    if ((spec.get("customDeploy") or {}).get("method") or "") != "":
        return
    image = spec.get("image") or {}
    url, checksum = image.get("url") or "", image.get("checksum") or ""
    if not url and not checksum:
        raise Invalid("either image or customDeploy is required", obj=where, field=f"{field}.image")
    if not _parse_request_uri(url):
        raise Invalid(f"image URL {url!r} is not a valid URI", obj=where, field=f"{field}.image.url")
    if url.startswith("oci://"):
        if checksum or image.get("checksumType"):
            raise Invalid(
                "checksum and checksumType must be empty for an oci:// image",
                obj=where,
                field=f"{field}.image.checksum",
            )
    elif image.get("diskFormat") != names.IMAGE_FORMAT_LIVE_ISO:
        if not checksum:
            raise Invalid("image checksum is required", obj=where, field=f"{field}.image.checksum")
        if checksum.startswith(("http://", "https://")) and not _parse_request_uri(checksum):
            raise Invalid(f"image checksum URL {checksum!r} is not valid", obj=where, field=f"{field}.image.checksum")
    if image.get("checksumType") and image["checksumType"] not in CHECKSUM_TYPES:
        raise Invalid(
            f"checksumType {image['checksumType']!r}: one of {', '.join(CHECKSUM_TYPES)}",
            obj=where,
            field=f"{field}.image.checksumType",
        )
    if image.get("diskFormat") and image["diskFormat"] not in DISK_FORMATS:
        raise Invalid(
            f"diskFormat {image['diskFormat']!r}: one of {', '.join(DISK_FORMATS)}",
            obj=where,
            field=f"{field}.image.diskFormat",
        )


# Ironic's image services by URL scheme (ironic/common/image_service.py, protocol_mapping) less glance, which
# baremetal-operator never configures: anything else fails the deploy, minutes after the host was claimed.
IRONIC_IMAGE_SCHEMES = ("http", "https", "file", "oci")
# The checksum's hex length per algorithm; without checksumType Ironic infers the algorithm from the length
# (ironic/common/checksum_utils.py, get_checksum_and_algo / validate_text_checksum).
CHECKSUM_LENGTHS = {"md5": 32, "sha256": 64, "sha512": 128}
_HEX = frozenset("0123456789abcdefABCDEF")


def ironic_image_errors(image: dict) -> tuple[str, str] | None:
    """What Ironic would refuse in a Metal3 image that the webhook lets through: ``(key, message)`` or None."""
    url = image.get("url") or ""
    scheme = urlparse(url).scheme.lower()
    if url and _parse_request_uri(url) and scheme not in IRONIC_IMAGE_SCHEMES:  # not a URI: the webhook says
        return "url", (
            f"image URL scheme {scheme + '://' if scheme else '(none)'} is not one Ironic fetches "
            f"({', '.join(s + '://' for s in IRONIC_IMAGE_SCHEMES)})"
        )
    checksum, algo = image.get("checksum") or "", image.get("checksumType") or ""
    if not checksum or checksum.startswith(("http://", "https://", "file://")) or algo not in ("", *CHECKSUM_LENGTHS):
        return None  # a checksum file Ironic downloads, or no checksum (the webhook's rules)
    if not set(checksum) <= _HEX:
        return "checksum", f"image checksum is not hexadecimal ({len(checksum)} characters)"
    if algo:
        if len(checksum) != CHECKSUM_LENGTHS[algo]:
            want = (
                f"{'an' if algo == 'md5' else 'a'} {algo} checksum is {CHECKSUM_LENGTHS[algo]} hexadecimal characters"
            )
            return "checksum", f"{want}, this one {len(checksum)}"
    elif len(checksum) not in CHECKSUM_LENGTHS.values():
        return "checksum", (
            f"image checksum of {len(checksum)} characters: without checksumType Ironic takes the algorithm from "
            "the length (32 md5, 64 sha256, 128 sha512)"
        )
    return None


def validate(m3m: dict) -> None:
    """The whole Metal3Machine webhook: image rules, same-namespace secrets, enum fields."""
    where, ns, spec = meta.ref(m3m), meta.namespace(m3m), m3m.get("spec") or {}
    validate_image(spec, where)
    for key in ("userData", "metaData", "networkData"):
        ref = spec.get(key)
        if ref and ref.get("namespace") not in (None, "", ns):
            raise Invalid(f"{key} must be in the Metal3Machine's namespace {ns}", obj=where, field=f"spec.{key}")
    mode = spec.get("automatedCleaningMode")
    if mode is not None and mode not in CLEANING_MODES:
        raise Invalid(
            f"automatedCleaningMode {mode!r}: one of {', '.join(CLEANING_MODES)}",
            obj=where,
            field="spec.automatedCleaningMode",
        )


def user_data_secret(m3m: dict, machine: dict) -> dict | None:
    """getUserDataSecretName: spec.userData, overridden by the bootstrap dataSecretName (or configRef name)."""
    ns = meta.namespace(m3m)
    out = None
    user = (m3m.get("spec") or {}).get("userData")
    if user and user.get("name"):
        out = {"name": user["name"], "namespace": user.get("namespace") or ns}
    bootstrap = (machine.get("spec") or {}).get("bootstrap") or {}
    if bootstrap.get("dataSecretName"):
        out = {"name": bootstrap["dataSecretName"], "namespace": ns}
    elif out is None and (bootstrap.get("configRef") or {}).get("name"):
        out = {"name": bootstrap["configRef"]["name"], "namespace": ns}
    return out


def has_image(host: dict) -> bool:
    spec = host.get("spec") or {}
    return bool((spec.get("image") or {}).get("url") or (spec.get("customDeploy") or {}).get("method"))


def set_host_spec(host: dict, m3m: dict, machine: dict) -> bool:
    """setHostSpec in place; True if it changed the host.  Never touches a host that has an image already."""
    spec, status = m3m.get("spec") or {}, m3m.get("status") or {}
    hspec = host.setdefault("spec", {})
    changed = False
    if not has_image(host) and status.get("userData"):
        image, custom = spec.get("image") or {}, (spec.get("customDeploy") or {}).get("method")
        if not image.get("url") and not custom:
            raise Invalid("either image or customDeploy is required", obj=meta.ref(m3m), field="spec.image")
        if image.get("url"):
            new_image = {"url": image["url"], "checksum": image.get("checksum") or ""}
            if image.get("checksumType"):
                new_image["checksumType"] = image["checksumType"]
            if image.get("diskFormat"):
                new_image["format"] = image["diskFormat"]  # BMO's field name
            hspec["image"] = new_image
        if custom:
            hspec["customDeploy"] = {"method": custom}
        ud = status["userData"]
        hspec["userData"] = {"name": ud["name"], "namespace": ud.get("namespace") or meta.namespace(host)}
        for key in ("metaData", "networkData"):
            ref = status.get(key)
            if ref and ref.get("name"):
                ns = ref.get("namespace") or meta.namespace(machine)
                if ns != meta.namespace(host):
                    raise Invalid(f"{key} secret must be in the host's namespace", obj=meta.ref(m3m), field=key)
                hspec[key] = {"name": ref["name"], "namespace": ns}
        changed = True
    mode = spec.get("automatedCleaningMode")
    if mode and hspec.get("automatedCleaningMode") != mode:
        hspec["automatedCleaningMode"] = mode
        changed = True
    if hspec.get("online") is not True and (changed or has_image(host)):
        hspec["online"] = True
        changed = True
    return changed


def clear_host_spec(host: dict, m3m: dict) -> bool:
    """Delete step 3.3-3.4: image, customDeploy, our secrets, and power as CAPM3 decides.  True if changed."""
    hspec = host.setdefault("spec", {})
    status = m3m.get("status") or {}
    before = json.dumps(hspec, sort_keys=True)
    hspec.pop("image", None)
    hspec.pop("customDeploy", None)
    for key in ("userData", "metaData", "networkData"):
        ours = status.get(key)
        if ours and hspec.get(key) and hspec[key].get("name") == ours.get("name"):
            hspec.pop(key, None)
    if hspec.get("disablePowerOff"):
        online = True
    elif os.environ.get(names.FAST_TRACK_ENV) == "true" and hspec.get("automatedCleaningMode") != "disabled":
        online = True
    else:
        online = False
    hspec["online"] = online
    return json.dumps(hspec, sort_keys=True) != before


def delete_must_wait(host: dict) -> bool:
    """Whether delete waits for the host before releasing it (step 3.6)."""
    st = ((host.get("status") or {}).get("provisioning") or {}).get("state") or ""
    if st == names.BMH_STATE_EXTERNALLY_PROVISIONED:
        return bool((host.get("status") or {}).get("poweredOn"))
    return st not in DELETE_NO_WAIT_STATES


def power_settling(host: dict) -> bool:
    """A deprovisioned host (``available`` / ``ready``) whose power does not match ``spec.online`` yet.

    Upstream, baremetal-operator powers such a host off (or on) within seconds of CAPM3 clearing it, whatever
    CAPM3 does next.  Here no operator runs between playbook runs, so the delete step lets the host driver do
    that one step before it releases the host; otherwise the next run's registration would be the one to do it.
    """
    status = host.get("status") or {}
    st = (status.get("provisioning") or {}).get("state") or ""
    powered = status.get("poweredOn")
    online = (host.get("spec") or {}).get("online")
    return st in (names.BMH_STATE_AVAILABLE, names.BMH_STATE_READY) and powered is not None and bool(online) != powered


def set_pause(host: dict) -> bool:
    """SetPauseAnnotation: paused=metal3.io/capm3 and the status snapshot (minus hardware); block-move gone.

    CAPM3 writes block-move first and removes it after, in three patches, so a
    clusterctl move never sees a half-paused host; one write does the same here.
    """
    ann = host["metadata"].setdefault("annotations", {})
    if names.BMH_PAUSED_ANNOTATION in ann:
        return ann.pop(names.BLOCK_MOVE_ANNOTATION, None) is not None
    snapshot = {k: v for k, v in (host.get("status") or {}).items() if k != "hardware"}
    ann[names.BMH_PAUSED_ANNOTATION] = names.PAUSED_ANNOTATION_VALUE_CAPM3
    ann[names.BMH_STATUS_ANNOTATION] = json.dumps(snapshot, sort_keys=True)
    ann.pop(names.BLOCK_MOVE_ANNOTATION, None)
    return True


def remove_pause(host: dict, cluster_name: str) -> bool:
    """RemovePauseAnnotation: only our pause, only on a host of this cluster; a user's pause stays."""
    ann = (host.get("metadata") or {}).get("annotations") or {}
    if meta.labels(host).get(names.CLUSTER_NAME_LABEL) != cluster_name:
        return False
    if ann.get(names.BMH_PAUSED_ANNOTATION) != names.PAUSED_ANNOTATION_VALUE_CAPM3:
        return False
    del ann[names.BMH_PAUSED_ANNOTATION]
    return True


def ensure_block_move(host: dict) -> bool:
    """EnsureBlockMoveAnnotation: an associated, unpaused host always carries block-move."""
    ann = host["metadata"].setdefault("annotations", {})
    if names.BMH_PAUSED_ANNOTATION in ann or names.BLOCK_MOVE_ANNOTATION in ann:
        return False
    ann[names.BLOCK_MOVE_ANNOTATION] = ""
    return True


def addresses(hardware: dict | None) -> list[dict]:
    """status.addresses: one InternalIP per NIC address, Hostname and InternalDNS from the hostname."""
    out = []
    for nic in (hardware or {}).get("nics") or []:
        if nic.get("ip"):
            out.append({"type": "InternalIP", "address": nic["ip"]})
    hostname = (hardware or {}).get("hostname")
    if hostname:
        out.append({"type": "Hostname", "address": hostname})
        out.append({"type": "InternalDNS", "address": hostname})
    return out
