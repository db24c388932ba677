# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The host drivers by name: what a module's ``host_driver`` / ``host_driver_options`` build."""

from __future__ import annotations

from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.hosts import base
from ansible_collections.baremetal.capi.plugins.module_utils.hosts.external import ExternalDriver
from ansible_collections.baremetal.capi.plugins.module_utils.hosts.ironic.driver import IronicDriver

DRIVERS = ("ironic", "external")


def get_driver(name: str | None = "ironic", options: dict | None = None) -> base.HostDriver:
    """The host driver called ``name`` (``ironic`` or ``external``) built from ``options``.

    ironic options: ``cloud`` (clouds.yaml entry; falls back to OS_CLOUD),
    ``ironic_url`` (an Ironic endpoint with auth_type none instead of a cloud),
    ``poll`` (seconds between steps, default 2), and the lab-oriented
    ``deploy_interface`` / ``boot_iso`` (see hosts/ironic/driver.py).
    external options: ``poll``.
    """
    options = dict(options or {})
    name = name or "ironic"
    if name == "ironic":
        return IronicDriver(**options)
    if name == "external":
        return ExternalDriver(**options)
    raise Invalid(f"unknown host driver {name!r}: one of {', '.join(DRIVERS)}", field="host_driver")
