# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The MAAS connection, through python-libmaas.

python-libmaas 0.6.8's high-level objects lack what CAPMAAS sends (allocate
with ``pool`` / ``system_id``, deploy with ``osystem`` / ``ephemeral_deploy``,
DNS resources), so the calls go through its low-level ``bones`` session, which
answers with MAAS's own JSON: plain dicts, the shape the rest of the engine
works with (python-libmaas maas/client/bones/__init__.py SessionAPI).

python-libmaas runs every call through ``asyncio.get_event_loop()``: a worker
thread has none, so each thread gets its own loop here.  The session itself
holds only the API description and the credentials (every call opens its own
aiohttp session), so one session serves every thread.

Reads and idempotent writes are retried on 500/502/503/504 and connection
errors with an exponential backoff.  Calls that must not happen twice
(allocate, deploy, power on, creating a DNS record) are retried on 503 only -
the region did not take the request - since after a 500 or a dropped
connection MAAS may have done the work: the flow reads the state again on its
next step instead (an allocation is found again by its ``agent_name``).  A 401
becomes one clear error that never carries the key.
TLS is verified unless ``validate_certs=False`` (CAPMAAS never verifies), against the system's CAs or
``ca_bundle`` (``tls.py``); an untrusted certificate is one clear error, never retried.
"""

from __future__ import annotations

import asyncio
import functools
import os
import ssl
import threading
import time

from ansible_collections.baremetal.capi.plugins.module_utils import imports
from ansible_collections.baremetal.capi.plugins.module_utils.errors import CapiError, Invalid, Requeue
from ansible_collections.baremetal.capi.plugins.module_utils.maas import tls

RETRY_STATUSES = (500, 502, 503, 504)


class MaasError(CapiError):
    """MAAS answered with an error that retrying will not fix."""

    def __init__(self, message: str, status: int | None = None, content: str = "", **kw):
        super().__init__(message, **kw)
        self.status = status
        self.content = content


class MaasAuthError(MaasError):
    """The API key was refused (401)."""


class MaasNotFound(MaasError):
    """404: no such machine / DNS resource."""


class MaasConflict(MaasError):
    """409: no machine matches the constraints, or a state MAAS does not allow."""


class MaasTLSError(MaasError):
    """The region's certificate could not be verified (or the CA bundle could not be read)."""


class MaasUnavailable(Requeue):
    """MAAS could not be reached or kept answering 5xx after the retries: try again later."""


def split_api_key(api_key: str) -> tuple[str, str, str]:
    parts = (api_key or "").strip().split(":")
    if len(parts) != 3 or not all(parts):
        # never echo the value: it is a secret even when malformed
        raise Invalid("the MAAS API key must be consumer_key:token_key:token_secret", field="maas_api_key")
    return parts[0], parts[1], parts[2]


def _ensure_loop() -> asyncio.AbstractEventLoop:
    """The calling thread's event loop, made when it has none (python-libmaas needs one per thread)."""
    try:
        loop = asyncio.get_event_loop_policy().get_event_loop()
        if not loop.is_closed():
            return loop
    except RuntimeError:
        pass
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    return loop


class Client:
    """One MAAS region: ``url`` (…/MAAS/), ``api_key`` (consumer:token:secret)."""

    def __init__(self, url: str, api_key: str, *, validate_certs: bool = True, ca_bundle: str | None = None,
                 retries: int = 5, backoff=0.5):  # fmt: skip
        if not url:
            raise Invalid("the MAAS URL is required", field="maas_url")
        split_api_key(api_key)
        self.url = url if url.endswith("/") else url + "/"
        self._api_key = api_key.strip()
        self.validate_certs = validate_certs
        self.ca_bundle = ca_bundle or None
        self._ssl = None
        if self.ca_bundle and validate_certs:
            if not os.path.isfile(self.ca_bundle):
                raise Invalid(f"the MAAS CA bundle {self.ca_bundle} is not a file", field="maas_ca_bundle")
            try:
                self._ssl = tls.context_for(self.ca_bundle)
            except (ssl.SSLError, OSError) as exc:
                raise Invalid(f"the MAAS CA bundle {self.ca_bundle} holds no usable CA: {exc}",
                              field="maas_ca_bundle") from None  # fmt: skip
            tls.install()
        self.retries = retries
        self.backoff = backoff
        self._session = None
        self._lock = threading.Lock()
        self.calls = 0  # how many HTTP calls were made (the benchmark reports it)

    # -- the connection ------------------------------------------------------------

    @property
    def session(self):
        _ensure_loop()
        with self._lock:
            if self._session is None:
                self._session = self._retry("connect", self._connect)
            return self._session

    def _connect(self):
        SessionAPI = imports.load("maas.client.bones").SessionAPI
        api_url = imports.load("maas.client.bones.helpers").api_url
        Credentials = imports.load("maas.client.utils.creds").Credentials

        return SessionAPI.fromURL(
            api_url(self.url), credentials=Credentials(*split_api_key(self._api_key)), insecure=not self.validate_certs
        )

    def _retry(self, what: str, fn, idempotent: bool = True):
        bones = imports.load("maas.client.bones")
        CallError, SessionError = bones.CallError, bones.SessionError

        delay = self.backoff
        retry_statuses = RETRY_STATUSES if idempotent else (503,)
        for attempt in range(self.retries + 1):
            last = attempt == self.retries
            try:
                self.calls += 1
                with tls.using(self._ssl):
                    return fn()
            except CallError as exc:
                content = exc.content.decode("utf-8", "replace") if exc.content else ""
                if exc.status in retry_statuses and not last:
                    time.sleep(delay)
                    delay *= 2
                    continue
                raise self._error(what, exc.status, content) from None
            except SessionError as exc:  # the description could not be fetched
                if not last:
                    time.sleep(delay)
                    delay *= 2
                    continue
                raise MaasUnavailable(f"MAAS at {self.url}: {what}: {exc}", after=10) from None
            except (TimeoutError, OSError) as exc:  # aiohttp's connection errors are OSErrors
                if _is_certificate_error(exc):
                    raise self._tls_error(what, exc) from None
                if idempotent and not last:
                    time.sleep(delay)
                    delay *= 2
                    continue
                raise MaasUnavailable(
                    f"MAAS at {self.url} unreachable: {what}: {type(exc).__name__}: {exc}", after=10
                ) from None
        raise AssertionError("unreachable")

    def _tls_error(self, what: str, exc: BaseException) -> MaasTLSError:
        trusted = f"the CA bundle {self.ca_bundle}" if self.ca_bundle else "the system's CA certificates"
        reason = getattr(exc, "certificate_error", None) or exc
        return MaasTLSError(
            f"MAAS at {self.url}: {what}: the region's TLS certificate is not trusted by {trusted} ({reason}); "
            "set maas_ca_bundle (or MAAS_CA_BUNDLE) to the CA that signed it, or maas_validate_certs=false"
        )

    def _error(self, what: str, status: int, content: str):
        if status == 401:
            return MaasAuthError(
                f"MAAS at {self.url} refused the API key (401 Unauthorized) on {what}: "
                "check maas_api_key (or MAAS_API_KEY)",
                status=status,
            )
        if status in RETRY_STATUSES:
            return MaasUnavailable(
                f"MAAS at {self.url}: {what}: HTTP {status} after {self.retries} retries: {content[:200]}", after=10
            )
        cls = {404: MaasNotFound, 409: MaasConflict}.get(status, MaasError)
        return cls(f"MAAS: {what}: HTTP {status}: {content[:500]}", status=status, content=content)

    def call(self, what: str, handler: str, action: str, *, idempotent: bool = True, **params):
        """``session.<handler>.<action>(**params)`` with retries and error mapping."""
        session = self.session
        fn = getattr(getattr(session, handler), action)
        return self._retry(what, functools.partial(fn, **params), idempotent)

    # -- machines ------------------------------------------------------------------

    def read_machine(self, system_id: str) -> dict | None:
        try:
            return self.call(f"read machine {system_id}", "Machine", "read", system_id=system_id)
        except MaasNotFound:
            return None

    def list_machines(self, **filters) -> list[dict]:
        return self.call("list machines", "Machines", "read", **filters)

    def allocate(self, constraints: dict, *, dry_run: bool = False, agent_name: str = "", comment: str = "") -> dict:
        """``op=allocate``; MaasConflict when no machine matches."""
        params = {k: v for k, v in constraints.items() if v not in (None, "", [])}
        if dry_run:
            params["dry_run"] = "true"
        if agent_name:
            params["agent_name"] = agent_name
        if comment:
            params["comment"] = comment
        return self.call("allocate", "Machines", "allocate", idempotent=dry_run, **params)

    def update_machine(self, system_id: str, **fields) -> dict:
        return self.call(f"update machine {system_id}", "Machine", "update", system_id=system_id, **fields)

    def deploy(self, system_id: str, *, user_data_b64: str, osystem: str, distro_series: str, ephemeral=False) -> dict:
        params = dict(user_data=user_data_b64, osystem=osystem, distro_series=distro_series)
        if ephemeral:
            params["ephemeral_deploy"] = "true"
        return self.call(
            f"deploy machine {system_id}", "Machine", "deploy", idempotent=False, system_id=system_id, **params
        )

    def release(self, system_id: str, *, force: bool = False, comment: str = "") -> dict:
        params = {"comment": comment} if comment else {}
        if force:
            params["force"] = "true"
        return self.call(f"release machine {system_id}", "Machine", "release", system_id=system_id, **params)

    def power_on(self, system_id: str, comment: str = "") -> dict:
        params = {"comment": comment} if comment else {}
        return self.call(
            f"power on machine {system_id}", "Machine", "power_on", idempotent=False, system_id=system_id, **params
        )

    def _delete(self, what: str, obj: str, **ids) -> bool:
        """One DELETE; False when the object is already gone (404)."""
        try:
            self.call(f"delete {what}", obj, "delete", **ids)
        except MaasNotFound:
            return False
        return True

    def delete_machine(self, system_id: str) -> bool:
        """``DELETE machines/{id}/`` (a composed VM: MAAS decomposes it); False when it is already gone."""
        return self._delete(f"machine {system_id}", "Machine", system_id=system_id)

    # -- interfaces --------------------------------------------------------------------

    def list_interfaces(self, system_id: str) -> list[dict]:
        """``GET nodes/{system_id}/interfaces/``: MAAS's interface JSON (name, links[].ip_address, ...)."""
        return self.call(f"list interfaces of machine {system_id}", "Interfaces", "read", system_id=system_id)

    def unlink_subnet(self, system_id: str, iface_id: int, link_id: int) -> dict:
        # python-libmaas: a leading underscore sends a body field whose name is also a URI parameter
        return self.call(f"unlink subnet on {system_id}", "Interface", "unlink_subnet", idempotent=False,
                         system_id=system_id, id=iface_id, _id=str(link_id))  # fmt: skip

    def link_subnet(self, system_id: str, iface_id: int, **params) -> dict:
        return self.call(f"link subnet on {system_id}", "Interface", "link_subnet", idempotent=False,
                         system_id=system_id, id=iface_id, **params)  # fmt: skip

    # -- LXD VM hosts ----------------------------------------------------------------

    def list_vm_hosts(self) -> list[dict]:
        return self.call("list VM hosts", "VmHosts", "read")

    def compose(self, host_id: int, **params) -> dict:
        return self.call(f"compose on VM host {host_id}", "VmHost", "compose", idempotent=False, id=host_id, **params)

    # -- DNS resources -------------------------------------------------------------

    def find_dns(self, fqdn: str) -> dict | None:
        found = self.call(f"find DNS resource {fqdn}", "DNSResources", "read", fqdn=fqdn)
        if len(found) > 1:
            raise MaasError(f"MAAS has {len(found)} DNS resources named {fqdn}; expected one")
        return found[0] if found else None

    def create_dns(self, fqdn: str, ttl: int, ips: list[str]) -> dict:
        return self.call(
            f"create DNS resource {fqdn}",
            "DNSResources",
            "create",
            idempotent=False,
            fqdn=fqdn,
            address_ttl=str(ttl),
            ip_addresses=" ".join(ips),
        )

    def set_dns_ips(self, resource_id: int, ips: list[str]) -> dict:
        # one space-separated string: MAAS reads ip_addresses with QueryDict.get
        # (maas src/maasserver/forms/dnsresource.py)
        return self.call(
            f"update DNS resource {resource_id}", "DNSResource", "update", id=resource_id, ip_addresses=" ".join(ips)
        )

    def delete_dns(self, resource_id: int) -> bool:
        return self._delete(f"DNS resource {resource_id}", "DNSResource", id=resource_id)


def _is_certificate_error(exc: BaseException) -> bool:
    """aiohttp's ClientConnectorCertificateError, or an ssl verification error underneath another one."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, ssl.SSLCertVerificationError) or type(exc).__name__ == "ClientConnectorCertificateError":
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def dns_ips(resource: dict | None) -> list[str]:
    """The addresses of a DNS resource as MAAS returns it (``ip_addresses: [{ip, ...}]``)."""
    out = []
    for item in (resource or {}).get("ip_addresses") or []:
        ip = item.get("ip") if isinstance(item, dict) else item
        if ip:
            out.append(ip)
    return out


def connect(options: dict) -> Client:
    """A Client from a module's ``maas_options()`` (url, api_key, validate_certs, ca_bundle)."""
    return Client(options["url"], options["api_key"], validate_certs=options.get("validate_certs", True),
                  ca_bundle=options.get("ca_bundle"))  # fmt: skip
