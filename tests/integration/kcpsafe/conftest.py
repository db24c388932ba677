"""The e2e fixtures (the lab with Ironic, the MAAS simulator and the node simulator; fast MAAS timings)."""

from tests.integration.e2e.conftest import e2e_lab, ironic_inventory  # noqa: F401
