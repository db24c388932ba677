"""The lab with Ironic, the node simulator and the kube-apiserver (the kubernetes store's management cluster)."""

from tests.integration.metal3_machine.conftest import machine_lab_inventory  # noqa: F401
