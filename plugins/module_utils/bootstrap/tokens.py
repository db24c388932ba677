"""Bootstrap-token Secrets in a workload cluster, through a kubernetes ``CoreV1Api``."""

from __future__ import annotations

import base64

try:
    from kubernetes.client.exceptions import ApiException
except ImportError:  # reported by the modules with missing_required_lib
    ApiException = Exception


class WorkloadTokens:
    """The TokenWriter of bootstrap/kubeadm.py over a workload cluster's kube-system."""

    namespace = "kube-system"

    def __init__(self, core_v1):
        self.core = core_v1

    def create(self, secret: dict) -> None:
        try:
            self.core.create_namespaced_secret(self.namespace, secret)
        except ApiException as exc:
            if getattr(exc, "status", None) != 409:
                raise

    def expiration(self, token_id: str) -> str | None:
        try:
            secret = self.core.read_namespaced_secret(f"bootstrap-token-{token_id}", self.namespace)
        except ApiException as exc:
            if getattr(exc, "status", None) == 404:
                return None
            raise
        value = (secret.data or {}).get("expiration")
        return base64.b64decode(value).decode() if value else None

    def set_expiration(self, token_id: str, expiration: str) -> None:
        self.core.patch_namespaced_secret(
            f"bootstrap-token-{token_id}", self.namespace, {"stringData": {"expiration": expiration}}
        )
