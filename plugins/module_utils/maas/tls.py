# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A CA bundle for python-libmaas's HTTPS calls.

python-libmaas 0.6.8 takes only ``insecure`` (``aiohttp.TCPConnector(verify_ssl=not insecure)`` in
``bones.CallAPI.dispatch`` and ``bones.helpers``), so verification always uses aiohttp's shared default
context: the system's CAs, fixed when aiohttp is imported.  To verify a region whose certificate comes from
a private CA, the ``aiohttp`` those two modules see is a thin stand-in whose ``TCPConnector`` uses the
SSL context of the call in progress (a context variable set by the client around each call); everything
else is aiohttp itself.  Without a CA bundle, or with ``insecure``, the connector is aiohttp's own.
"""

from __future__ import annotations

import contextlib
import contextvars
import ssl
import types

from ansible_collections.baremetal.capi.plugins.module_utils import imports

_CURRENT: contextvars.ContextVar[ssl.SSLContext | None] = contextvars.ContextVar("maas_ssl_context", default=None)
_INSTALLED = False


def context_for(ca_bundle: str) -> ssl.SSLContext:
    """A verifying client context that trusts ``ca_bundle`` (a PEM file of CA certificates) only."""
    ctx = ssl.create_default_context(cafile=ca_bundle)
    return ctx


@contextlib.contextmanager
def using(ctx: ssl.SSLContext | None):
    """Calls made inside verify with ``ctx`` (None: aiohttp's default)."""
    token = _CURRENT.set(ctx)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def install() -> None:
    """Point python-libmaas's modules at the stand-in (once per process)."""
    global _INSTALLED
    if _INSTALLED:
        return
    aiohttp = imports.load("aiohttp")
    bones = imports.load("maas.client.bones")
    helpers = imports.load("maas.client.bones.helpers")

    def connector(*args, verify_ssl=True, **kwargs):
        ctx = _CURRENT.get()
        if ctx is not None and verify_ssl and "ssl" not in kwargs:
            return aiohttp.TCPConnector(*args, ssl=ctx, **kwargs)
        return aiohttp.TCPConnector(*args, verify_ssl=verify_ssl, **kwargs)

    stand_in = types.ModuleType("aiohttp")
    stand_in.__dict__.update(aiohttp.__dict__)
    stand_in.TCPConnector = connector
    bones.aiohttp = stand_in
    helpers.aiohttp = stand_in
    _INSTALLED = True
