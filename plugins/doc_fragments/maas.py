# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations


class ModuleDocFragment:
    # The MAAS connection options of the modules that talk to a MAAS region.
    DOCUMENTATION = r"""
options:
  maas_url:
    description:
      - URL of the MAAS region API, for example V(http://maas.example.com:5240/MAAS).
      - When not set, the E(MAAS_URL) environment variable.
    type: str
  maas_api_key:
    description:
      - MAAS API key (C(consumer:token:secret)).
      - When not set, the E(MAAS_API_KEY) environment variable.
    type: str
  maas_validate_certs:
    description:
      - Whether to verify the MAAS region's TLS certificate (CAPMAAS never does; this collection does unless told).
      - V(false) is reported as a warning for an C(https) URL.
    type: bool
    default: true
  maas_ca_bundle:
    description:
      - PEM file of the CA certificates to verify the MAAS region's TLS certificate with, instead of the
        system's CAs (a region with C(maas config-tls enable) and a private CA).
      - When not set, the E(MAAS_CA_BUNDLE) environment variable.
      - Ignored when O(maas_validate_certs=false).
    type: path
requirements:
  - python-libmaas >= 0.6.8
"""
