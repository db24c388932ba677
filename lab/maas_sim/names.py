"""Name, TTL and config checks as MAAS's models and forms make them.

- zone and resource pool names: ``MODEL_NAME_VALIDATOR`` (src/maasserver/fields.py), ``^\\w[ \\w-]*$``;
- tag names: ``Tag._tag_name_regex`` (models/tag.py), ``^[a-zA-Z0-9_-]+$``;
- both are Django ``RegexValidator``s with the default message ``Enter a valid value.``;
- domain names: ``validate_domain_name`` (models/domain.py), labels of ``NAMESPEC``, 255 characters at most;
- DNS resource names: ``validate_dnsresource_name`` (models/dnsresource.py), one label or ``@``;
- TTLs: ``PositiveIntegerField`` (0 .. 2147483647 on PostgreSQL);
- config names and values: ``get_default_config()`` (models/config.py) and the settings forms.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from lab.maas_sim.forms import Form, ValidationError, string_bool

MODEL_NAME_RE = re.compile(r"^\w[ \w-]*$")
TAG_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]+$")
LABEL = r"[a-zA-Z0-9]([-a-zA-Z0-9]{0,62}[a-zA-Z0-9]){0,1}"
LABEL_RE = re.compile(f"^{LABEL}$")
DNS_NAME_RE = re.compile(f"^({LABEL}|@)$")
PG_INT_MAX = 2147483647
INVALID = "Enter a valid value."


def model_name(value: str, field: str = "name") -> None:
    if not value:
        raise ValidationError({field: ["This field is required."]})
    if len(value) > 256:
        raise ValidationError({field: [f"Ensure this value has at most 256 characters (it has {len(value)})."]})
    if not MODEL_NAME_RE.match(value):
        raise ValidationError({field: [INVALID]})


def tag_name(value: str) -> None:
    if not value:
        raise ValidationError({"name": ["This field is required."]})
    if len(value) > 256:
        raise ValidationError({"name": [f"Ensure this value has at most 256 characters (it has {len(value)})."]})
    if not TAG_NAME_RE.match(value):
        raise ValidationError({"name": [INVALID]})


def domain_name(value: str) -> None:
    if not value:
        raise ValidationError({"name": ["This field is required."]})
    if len(value) > 255:
        raise ValidationError({"name": ["Domain name length cannot exceed 255 characters."]})
    if not all(LABEL_RE.match(label) for label in value.split(".")):
        if re.sub(r"[a-zA-Z0-9-.]*", "", value):
            raise ValidationError({"name": ["Domain name contains invalid characters."]})
        raise ValidationError({"name": [f"Invalid domain name: {value}."]})


def dnsresource_name(value: str) -> None:
    if not DNS_NAME_RE.match(value) or len(value) > 255:
        raise ValidationError({"name": [f"Invalid dnsresource name: {value}."]})


def ttl(data: Form, key: str) -> int | None:
    """A PositiveIntegerField from a form: empty is None."""
    value = data.get(key)
    if value is None or value.strip() == "":
        return None
    try:
        number = int(value.strip())
    except ValueError:
        raise ValidationError({key: ["Enter a whole number."]}) from None
    if number < 0:
        raise ValidationError({key: ["Ensure this value is greater than or equal to 0."]})
    if number > PG_INT_MAX:
        raise ValidationError({key: [f"Ensure this value is less than or equal to {PG_INT_MAX}."]})
    return number


# -- config (models/config.py get_default_config, the names the settings API accepts) --------------

STORAGE_LAYOUTS = ("bcache", "blank", "custom", "flat", "lvm", "vmfs6", "vmfs7")
ACTIVE_DISCOVERY_INTERVALS = (0, 604800, 86400, 43200, 21600, 10800, 3600, 1800, 600)


def default_config(maas_name: str) -> dict:
    return {
        "commissioning_osystem": "ubuntu", "commissioning_distro_series": "jammy", "default_dns_ttl": 30,
        "default_min_hwe_kernel": "", "default_storage_layout": "flat", "kernel_opts": None,
        "maas_url": "http://localhost:5240/MAAS", "maas_name": maas_name, "theme": "",
        "default_osystem": "ubuntu", "default_distro_series": "jammy",
        "enable_http_proxy": True, "maas_proxy_port": 8000, "use_peer_proxy": False, "http_proxy": None,
        "prefer_v4_proxy": False, "upstream_dns": None, "dnssec_validation": "auto", "dns_trusted_acl": None,
        "maas_internal_domain": "maas-internal", "ntp_servers": "ntp.ubuntu.com", "ntp_external_only": False,
        "remote_syslog": None, "maas_syslog_port": 5247, "network_discovery": "enabled",
        "active_discovery_interval": 10800, "boot_images_auto_import": True, "boot_images_no_proxy": False,
        "enable_third_party_drivers": True, "enable_disk_erasing_on_release": False,
        "disk_erase_with_secure_erase": True, "disk_erase_with_quick_erase": False, "curtin_verbose": True,
        "force_v1_network_yaml": False, "enable_analytics": True, "completed_intro": False,
        "max_node_commissioning_results": 10, "max_node_testing_results": 10, "max_node_installation_results": 3,
        "subnet_ip_exhaustion_threshold_count": 16, "release_notifications": True, "use_rack_proxy": True,
        "node_timeout": 30, "prometheus_enabled": False, "prometheus_push_gateway": None,
        "prometheus_push_interval": 60, "promtail_enabled": False, "promtail_port": 5238,
        "enlist_commissioning": True, "maas_auto_ipmi_user": "maas", "maas_auto_ipmi_user_privilege_level": "ADMIN",
        "maas_auto_ipmi_k_g_bmc_key": "", "maas_auto_ipmi_cipher_suite_id": "3",
        "maas_auto_ipmi_workaround_flags": None, "vcenter_server": "", "vcenter_username": "",
        "vcenter_password": "", "vcenter_datacenter": "", "hardware_sync_interval": "15m",
        "tls_cert_expiration_notification_enabled": False, "tls_cert_expiration_notification_interval": 30,
        "windows_kms_host": None, "session_length": 1209600, "enable_kernel_crash_dump": False,
    }  # fmt: skip


_CHOICES = {"dnssec_validation": ("auto", "yes", "no"), "network_discovery": ("enabled", "disabled"),
            "default_storage_layout": STORAGE_LAYOUTS,
            "maas_auto_ipmi_user_privilege_level": ("ADMIN", "OPERATOR", "USER"),
            "maas_auto_ipmi_cipher_suite_id": ("17", "3", "8", "12", "")}  # fmt: skip
_URLS = ("http_proxy", "prometheus_push_gateway", "maas_url")


def config_value(name: str, current, data: Form):
    """The value ``set_config`` stores for ``name``, or the form's error."""
    raw = data.get("value")
    if raw is None:
        raise ValidationError({"value": ["This field is required."]})
    if isinstance(current, bool):
        return string_bool(data, "value")
    if name == "active_discovery_interval":
        if raw not in {str(v) for v in ACTIVE_DISCOVERY_INTERVALS}:
            raise ValidationError({name: [f"Select a valid choice. {raw} is not one of the available choices."]})
        return int(raw)
    if isinstance(current, int):
        try:
            return int(raw)
        except ValueError:
            raise ValidationError({name: ["Enter a whole number."]}) from None
    if name in _CHOICES and raw not in _CHOICES[name]:
        raise ValidationError({name: [f"Select a valid choice. {raw} is not one of the available choices."]})
    if name in _URLS and raw:
        parts = urlsplit(raw)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValidationError({name: ["Enter a valid URL."]})
    return raw if raw != "" or current is not None else None
