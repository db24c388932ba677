"""Bootstrap-token Secrets in a workload cluster, through a kubernetes ``CoreV1Api``."""

from __future__ import annotations

import base64

from ansible_collections.baremetal.capi.plugins.module_utils import imports


class _NoApiException(Exception):
    """Never raised: keeps the except clauses valid without the kubernetes client."""


def _api_exception() -> type[Exception]:
    """kubernetes' ApiException, imported only once a call failed: importing ``kubernetes`` loads its whole client
    (every API and model class), which a module that never reaches a workload cluster should not pay for."""
    try:
        ApiException = imports.load("kubernetes.client.exceptions").ApiException
    except ImportError:  # reported by the modules with missing_required_lib
        return _NoApiException
    return ApiException


class WorkloadTokens:
    """The TokenWriter of bootstrap/kubeadm.py over a workload cluster's kube-system.

    A workload API that does not answer (not up yet, or its name does not resolve here) is a Requeue
    for the machine, not an error of the whole round.
    """

    namespace = "kube-system"

    def __init__(self, core_v1=None, *, make_core_v1=None):
        """``core_v1``: a CoreV1Api; or ``make_core_v1``, a function that makes one at the first token call."""
        self._core, self._make_core = core_v1, make_core_v1
        for name in ("create", "expiration", "set_expiration"):
            setattr(self, name, self._requeue_unreachable(getattr(self, name)))

    @staticmethod
    def _requeue_unreachable(fn):
        from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid, Requeue

        def call(*args):
            try:
                return fn(*args)
            except Invalid:  # an unusable kubeconfig (the client is made at the first call): not a network blip
                raise
            except _api_exception() as exc:
                # a workload API whose etcd or apiserver is not (yet) serving answers 5xx
                if getattr(exc, "status", None) in (0, 500, 502, 503, 504):
                    raise Requeue(f"workload API unreachable: HTTP {exc.status}", after=5) from None
                raise
            except Exception as exc:  # urllib3 connection / name resolution errors
                raise Requeue(f"workload API unreachable: {type(exc).__name__}", after=5) from None

        return call

    @property
    def core(self):
        if self._core is None:
            self._core = self._make_core()
        return self._core

    def create(self, secret: dict) -> None:
        try:
            self.core.create_namespaced_secret(self.namespace, secret)
        except _api_exception() as exc:
            if getattr(exc, "status", None) != 409:
                raise

    def expiration(self, token_id: str) -> str | None:
        try:
            secret = self.core.read_namespaced_secret(f"bootstrap-token-{token_id}", self.namespace)
        except _api_exception() as exc:
            if getattr(exc, "status", None) == 404:
                return None
            raise
        value = (secret.data or {}).get("expiration")
        return base64.b64decode(value).decode() if value else None

    def set_expiration(self, token_id: str, expiration: str) -> None:
        self.core.patch_namespaced_secret(
            f"bootstrap-token-{token_id}", self.namespace, {"stringData": {"expiration": expiration}}
        )
