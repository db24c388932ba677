"""The kube fixtures (kube, kube_client, kube_namespace, kube_store) live in tests/conftest.py."""
