"""The lifecycle lab tests use the end-to-end fixtures (the lab with Ironic, MAAS and the node simulator)."""

from tests.integration.e2e.conftest import e2e_lab, ironic_inventory  # noqa: F401
