"""Fixtures for the Cluster API core tests: a sqlite store, and the lab's kube-apiserver as a workload API."""

from capi_fixtures import workload, workload_kubeconfig  # noqa: F401
