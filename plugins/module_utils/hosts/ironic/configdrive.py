# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What a deploy sends to Ironic: image validation, instance_info, root device hints, config drive.

baremetal-operator pkg/provisioner/ironic/ironic.go (``getImageUpdateOptsForNode``, ``getConfigDrive``) and
internal/controller/metal3.io/host_config_data.go.
Pure functions over dicts, apart from ``config_drive`` which reads the
user/meta/network data Secrets from the store.
"""

from __future__ import annotations

import base64
import binascii
import urllib.parse

try:
    import yaml
except ImportError:  # PyYAML comes with ansible-core; the modules report it missing otherwise
    yaml = None

from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid, NotFound
from ansible_collections.baremetal.capi.plugins.module_utils.model import names

HASH_TYPES = ("md5", "sha256", "sha512")
DEFAULT_ROOT_DEVICE = {"deviceName": "/dev/sda"}  # BMO's default hardware profile

# BMH rootDeviceHints field -> (Ironic root_device key, operator); baremetal-operator
# pkg/provisioner/ironic/devicehints/devicehints.go MakeHintMap
_HINTS = {
    "hctl": ("hctl", "s=="),
    "model": ("model", "<in>"),
    "vendor": ("vendor", "<in>"),
    "serialNumber": ("serial", "s=="),
    "wwn": ("wwn", "s=="),
    "wwnWithExtension": ("wwn_with_extension", "s=="),
    "wwnVendorExtension": ("wwn_vendor_extension", "s=="),
}


def _is_oci(url: str) -> bool:
    return url.startswith("oci://")


def validate_image(image: dict | None, custom_deploy: dict | None = None, field: str = "spec.image") -> None:
    """The image rules of the BMO and CAPM3 webhooks; Invalid names the field."""
    if (custom_deploy or {}).get("method"):
        if image and image.get("checksumType") and image["checksumType"] not in HASH_TYPES + ("auto",):
            raise Invalid(f"unknown checksumType {image['checksumType']!r}", field=f"{field}.checksumType")
        return
    image = image or {}
    url, checksum = image.get("url") or "", image.get("checksum") or ""
    if not url and not checksum:
        raise Invalid("either image or customDeploy is required", field=field)
    parsed = urllib.parse.urlsplit(url)
    # Go's url.ParseRequestURI: an absolute URI, or an absolute path
    if not url or not ((parsed.scheme and (parsed.netloc or parsed.path)) or url.startswith("/")):
        raise Invalid(f"image URL {url!r} is invalid", field=f"{field}.url")
    ctype, fmt = image.get("checksumType") or "", image.get("format") or image.get("diskFormat") or ""
    if ctype and ctype not in names.CHECKSUM_TYPES:
        raise Invalid(
            f"unknown checksumType {ctype!r}: one of {', '.join(names.CHECKSUM_TYPES)}", field=f"{field}.checksumType"
        )
    if fmt and fmt not in names.IMAGE_FORMATS:
        raise Invalid(f"unknown image format {fmt!r}: one of {', '.join(names.IMAGE_FORMATS)}", field=f"{field}.format")
    if _is_oci(url):
        if checksum or ctype:
            raise Invalid("checksum and checksumType must be empty for an oci:// image", field=f"{field}.checksum")
        return
    if fmt == names.IMAGE_FORMAT_LIVE_ISO:
        return
    if not checksum:
        raise Invalid("checksum is required for the image (unless it is live-iso or oci://)", field=f"{field}.checksum")
    if checksum.startswith(("http://", "https://")) and not urllib.parse.urlsplit(checksum).netloc:
        raise Invalid(f"checksum URL {checksum!r} is invalid", field=f"{field}.checksum")


def image_format(image: dict) -> str:
    # BMO calls it format; CAPM3's Metal3Machine calls it diskFormat
    return (image or {}).get("format") or (image or {}).get("diskFormat") or ""


def root_device(hints: dict | None) -> dict | None:
    """Ironic instance_info.root_device from BMH rootDeviceHints."""
    if not hints:
        return None
    out = {}
    name = hints.get("deviceName")
    if name:
        out["by_path" if name.startswith("/dev/disk/by-path/") else "name"] = f"s== {name}"
    for bmh_key, (ironic_key, op) in _HINTS.items():
        if hints.get(bmh_key):
            out[ironic_key] = f"{op} {hints[bmh_key]}"
    if hints.get("minSizeGigabytes"):
        out["size"] = f">= {int(hints['minSizeGigabytes'])}"
    if hints.get("rotational") is not None:
        out["rotational"] = "true" if hints["rotational"] else "false"
    return out or None


def instance_info(bmh: dict, *, hints: dict | None = None, boot_iso: str | None = None) -> tuple[dict, str | None]:
    """(instance_info, deploy_interface) for the host's spec image, as BMO builds them.

    ``deploy_interface`` is ``ramdisk`` for live-iso, ``custom-agent`` for
    customDeploy, else None (Ironic's default; BMO resets ramdisk/custom-agent).
    ``boot_iso`` (a driver option for Ironics without an agent ramdisk, like
    the lab's) deploys an ordinary image with the ``ramdisk`` interface from
    that ISO, keeping the config drive: not a BMO behaviour.
    """
    spec = bmh.get("spec") or {}
    image = spec.get("image") or {}
    custom = (spec.get("customDeploy") or {}).get("method")
    boot_mode = spec.get("bootMode") or "UEFI"
    info: dict = {
        "capabilities": {"secure_boot": "true"} if boot_mode == "UEFISecureBoot" else {},
    }
    rd = root_device(hints)
    if rd:
        info["root_device"] = rd
    url, checksum, ctype, fmt = image.get("url"), image.get("checksum"), image.get("checksumType"), image_format(image)
    if custom:
        if url:
            info["image_source"] = url
        info["image_os_hash_algo"] = ctype or ""
        info["image_os_hash_value"] = checksum or ""
        if fmt:
            info["image_disk_format"] = fmt
        return info, "custom-agent"
    if fmt == names.IMAGE_FORMAT_LIVE_ISO:
        info["boot_iso"] = url
        return info, "ramdisk"
    if boot_iso:
        # Ironic refuses image_source next to boot_iso; the image stays in the host's spec and status
        info["boot_iso"] = boot_iso
        return info, "ramdisk"
    info["image_source"] = url
    if checksum and (not ctype or ctype == "auto"):
        info["image_checksum"] = checksum
    if ctype in HASH_TYPES:
        info["image_os_hash_algo"] = ctype
        info["image_os_hash_value"] = checksum
    if fmt:
        info["image_disk_format"] = fmt
    return info, None


def wants_config_drive(bmh: dict) -> bool:
    """live-iso gets no config drive (BMO)."""
    spec = bmh.get("spec") or {}
    return (spec.get("customDeploy") or {}).get("method") or image_format(
        spec.get("image")
    ) != names.IMAGE_FORMAT_LIVE_ISO


def secret_value(store, ref: dict | None, namespace: str, keys: tuple, field: str) -> str | None:
    """The decoded value of the first of ``keys`` in the Secret ``ref`` (None when no key is there)."""
    if not ref or not ref.get("name"):
        return None
    ns = ref.get("namespace") or namespace
    if ns != namespace:
        raise Invalid(f"secret {ns}/{ref['name']} must be in the host's namespace {namespace}", field=field)
    try:
        secret = store.get("Secret", ref["name"], ns)
    except NotFound as exc:
        raise Invalid(f"secret {ns}/{ref['name']} not found", field=field) from exc
    data = secret.get("data") or {}
    for key in keys:
        if key in data:
            try:
                return base64.b64decode(data[key]).decode()
            except (binascii.Error, UnicodeDecodeError) as exc:
                raise Invalid(f"secret {ns}/{ref['name']} key {key} is not valid base64 text", field=field) from exc
        if key in (secret.get("stringData") or {}):
            return secret["stringData"][key]
    return None


def default_meta_data(bmh: dict) -> dict:
    md = bmh.get("metadata") or {}
    name = md.get("name")
    return {
        "uuid": md.get("uid"),
        "metal3-namespace": md.get("namespace") or "default",
        "metal3-name": name,
        "local-hostname": name,
        "local_hostname": name,
        "name": name,
    }


def merge_meta_data(bmh: dict, text: str | None) -> dict:
    """BMO's defaults with the metaData secret unmarshalled over them: secret keys win, the rest stay."""
    out = default_meta_data(bmh)
    if text:
        parsed = yaml.safe_load(text)
        if parsed is not None and not isinstance(parsed, dict):
            raise Invalid("metaData must be a mapping", field="spec.metaData")
        out.update(parsed or {})
    return out


def config_drive(store, bmh: dict) -> dict | None:
    """``{user_data, meta_data, network_data}`` for Ironic's configdrive, or None for live-iso."""
    if not wants_config_drive(bmh):
        return None
    spec, ns = bmh.get("spec") or {}, (bmh.get("metadata") or {}).get("namespace") or "default"
    drive: dict = {}
    if spec.get("userData"):
        user = secret_value(store, spec["userData"], ns, ("userData", "value"), "spec.userData")
        if user is None:
            raise Invalid(f"secret {spec['userData'].get('name')} has no userData or value key", field="spec.userData")
        drive["user_data"] = user
    meta_text = secret_value(store, spec.get("metaData"), ns, ("metaData", "value"), "spec.metaData")
    drive["meta_data"] = merge_meta_data(bmh, meta_text)
    net_text = secret_value(store, spec.get("networkData"), ns, ("networkData", "value"), "spec.networkData")
    if net_text is None and spec.get("preprovisioningNetworkDataName"):
        ref = {"name": spec["preprovisioningNetworkDataName"]}
        net_text = secret_value(store, ref, ns, ("networkData", "value"), "spec.preprovisioningNetworkDataName")
    if net_text:
        parsed = yaml.safe_load(net_text)
        if parsed is not None and not isinstance(parsed, dict):
            raise Invalid("networkData must be a mapping", field="spec.networkData")
        if parsed:
            drive["network_data"] = parsed
    return drive
