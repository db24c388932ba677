"""The kubernetes store: the store protocol over a real Kubernetes API server.

Objects are the custom resources of the collection's CRDs (model/crds.py) and
the core Secret, ConfigMap, Namespace and Node.  The API server does what the
protocol asks natively: optimistic concurrency by resourceVersion (409 ->
Conflict), the status subresource, finalizers and deletionTimestamp; the
garbage collector of kube-controller-manager removes dependents in the
background (callers poll, as the protocol says).  Requests go through the
``kubernetes`` package's DynamicClient with paths built from model/kinds.py,
so no discovery round trips are paid per process.

Connection options fall back to the variables AWX's Kubernetes credential
injects, as kubernetes.core does (store/options.py: K8S_AUTH_KUBECONFIG, ...).
"""

from __future__ import annotations

import copy
import json

from ansible_collections.baremetal.capi.plugins.module_utils.errors import (
    AlreadyExists,
    CapiError,
    Conflict,
    Forbidden,
    Incompatible,
    Invalid,
    NotFound,
    StoreUnavailable,
)
from ansible_collections.baremetal.capi.plugins.module_utils.model import crds as model_crds
from ansible_collections.baremetal.capi.plugins.module_utils.model import kinds, meta, names, ownership, selectors
from ansible_collections.baremetal.capi.plugins.module_utils.store import common, options, retry

try:
    import urllib3
    from kubernetes import client as k8s_client
    from kubernetes import config as k8s_config
    from kubernetes.client.exceptions import ApiException
    from kubernetes.config.config_exception import ConfigException
    from kubernetes.dynamic import DynamicClient

    HAS_KUBERNETES = True
except ImportError:  # reported when the store is opened
    HAS_KUBERNETES = False

# (connect, read) seconds: a hung API server fails the call instead of the playbook hanging.
TIMEOUT = (10, 120)
# Objects per page of a list (kubectl's default chunk size).
LIST_PAGE = 500
# Selector operators the API server's string form takes; gt/lt are applied here.
_SERVER_OPERATORS = {selectors.IN, selectors.NOT_IN, selectors.EXISTS, selectors.NOT_EXISTS, selectors.EQUALS}
_SERVER_OPERATORS.add(selectors.NOT_EQUALS)


class _NoDiscovery:
    """Paths come from model/kinds.py; the DynamicClient's discovery is not needed."""

    def __init__(self, client, cache_file=None):
        pass


def api_client(kubeconfig=None, context=None, host=None, api_key=None, ca_cert=None, validate_certs=None):
    """A ``kubernetes`` ApiClient from the options, each falling back to its K8S_AUTH_* variable."""
    if not HAS_KUBERNETES:
        raise StoreUnavailable("the kubernetes store needs the Python package 'kubernetes' (pip install kubernetes)")
    given = dict(kubeconfig=kubeconfig, context=context, host=host, api_key=api_key, ca_cert=ca_cert)
    opts = options.kubernetes_connection({**given, "validate_certs": validate_certs})
    conf = k8s_client.Configuration()
    # As kubernetes.core: a kubeconfig (or context) when one is named; else host/api_key
    # alone when given; else the default kubeconfig, else the in-cluster service account.
    try:
        if opts["kubeconfig"] or opts["context"]:
            if isinstance(opts["kubeconfig"], dict):
                k8s_config.load_kube_config_from_dict(
                    opts["kubeconfig"], context=opts["context"], client_configuration=conf
                )
            else:
                k8s_config.load_kube_config(
                    config_file=opts["kubeconfig"], context=opts["context"], client_configuration=conf
                )
        elif not opts["host"]:
            try:
                k8s_config.load_kube_config(client_configuration=conf)
            except (ConfigException, OSError):
                # No kubeconfig anywhere: running in a pod (an AWX container group).
                k8s_config.load_incluster_config(client_configuration=conf)
    except (ConfigException, OSError, ValueError) as exc:
        raise StoreUnavailable(f"cannot load the Kubernetes client configuration: {exc}") from exc
    if opts["host"]:
        conf.host = opts["host"]
    if opts["api_key"]:
        conf.api_key = {"authorization": f"Bearer {opts['api_key']}"}
    if opts["ca_cert"]:
        conf.ssl_ca_cert = opts["ca_cert"]
    if opts["validate_certs"] is not None:
        conf.verify_ssl = options.truthy(opts["validate_certs"])
    # The store retries transient failures itself (retry.py), knowing which writes a retry may have repeated;
    # urllib3's own retries would resend a PUT or DELETE whose answer was lost and turn its success into a
    # Conflict or a NotFound nobody could tell from a real one.
    conf.retries = urllib3.util.Retry(total=0, redirect=0, raise_on_redirect=False, raise_on_status=False)
    return k8s_client.ApiClient(conf)


def path(kind: kinds.Kind, name: str | None = None, namespace: str | None = None, sub: str | None = None) -> str:
    base = f"/api/{kind.version}" if kind.core else f"/apis/{kind.group}/{kind.version}"
    if kind.namespaced and namespace:
        base += f"/namespaces/{namespace}"
    base += f"/{kind.plural}"
    if name:
        base += f"/{name}"
    if sub:
        base += f"/{sub}"
    return base


def _status_body(exc) -> dict:
    try:
        body = json.loads(exc.body or "{}")
        return body if isinstance(body, dict) else {}
    except (TypeError, ValueError):
        return {}


def translate(exc, kind: kinds.Kind, where: str) -> CapiError:
    """The typed error for an API error (a Kubernetes Status)."""
    status = _status_body(exc)
    message = status.get("message") or f"{exc.status} {exc.reason}"
    reason = status.get("reason")
    details = status.get("details") or {}
    causes = details.get("causes") or []
    if exc.status == 404:
        # A missing object comes as a Status naming it; a resource the server does not
        # serve comes as "404 page not found" or a Status without a name.
        if not details.get("name"):
            return StoreUnavailable(
                f"the API server does not serve {kind.crd_name if not kind.core else kind.plural} "
                f"({kind.api_version}): apply the collection's CRDs (role baremetal.capi.crds)",
                obj=where,
            )
        return NotFound(message, obj=where)
    if exc.status == 409:
        return AlreadyExists(message, obj=where) if reason == "AlreadyExists" else Conflict(message, obj=where)
    if exc.status == 422:
        field = causes[0].get("field") if causes else None
        if any(c.get("reason") == "FieldValueForbidden" for c in causes):
            return Forbidden(message, obj=where, field=field)
        return Invalid(message, obj=where, field=field)
    if exc.status == 403:
        return Forbidden(message, obj=where)
    if exc.status == 400:
        return Invalid(message, obj=where)
    return StoreUnavailable(f"{exc.status} {exc.reason}: {message}", obj=where)


_GUARD_ANNOTATIONS = (ownership.MANAGED_BY_ANNOTATION, names.PAUSED_ANNOTATION, names.BMH_PAUSED_ANNOTATION)


def _summary(obj: dict) -> dict:
    """What common.guard reads of a stored object."""
    md = obj.get("metadata") or {}
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    # only the annotations the guard reads: a host's status and hardware-details annotations are large
    annotations = {key: value for key, value in (md.get("annotations") or {}).items() if key in _GUARD_ANNOTATIONS}
    labels = md.get("labels") or {}
    return {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "metadata": {
            **{key: md[key] for key in ("name", "namespace", "uid", "resourceVersion") if key in md},
            "annotations": annotations,
            "labels": {key: labels[key] for key in (names.CLUSTER_NAME_LABEL,) if key in labels},
            "finalizers": list(md.get("finalizers") or []),
        },
        "spec": {key: spec[key] for key in ("paused", "clusterName") if key in spec},
    }


class KubernetesStore:
    kind_name = "kubernetes"

    def __init__(
        self, kubeconfig=None, context=None, host=None, api_key=None, ca_cert=None, validate_certs=None, adopt=False
    ):
        self.client = api_client(kubeconfig, context, host, api_key, ca_cert, validate_certs)
        self.dyn = DynamicClient(self.client, discoverer=_NoDiscovery)
        self.list_page = LIST_PAGE
        self.retry = retry.Policy()
        # adopt: act on objects an upstream controller manages too (common.guard).
        self.adopt = options.truthy(adopt)
        # (kind key, namespace, name) -> (field managers, _summary) of the objects read: the guard of a write to
        # an object read before costs no request (managedFields stay out of the objects handed out).
        self._seen: dict[tuple, tuple] = {}

    def close(self) -> None:
        self.client.close()

    # -- requests -------------------------------------------------------------

    def _send(self, method: str, url: str, body=None, *, ambiguous_ok: bool = True, **params):
        """One request, sent again on a transient failure (retry.py); (response, how many were retried).

        ``ambiguous_ok=False`` (a POST with generateName): only failures that certainly wrote nothing (429, a
        connection that never opened) are retried, since a second such POST would make a second object.
        """
        policy = self.retry
        for attempt in range(policy.attempts):
            last = attempt + 1 >= policy.attempts
            try:
                resp = self.dyn.request(method, url, body=body, serialize=False, _request_timeout=TIMEOUT, **params)
                return resp, attempt
            except ApiException as exc:
                transient = exc.status in retry.TRANSIENT_STATUS or retry.tls_dropped(exc)
                if last or not transient or (not ambiguous_ok and exc.status != 429):
                    exc.retried = attempt
                    raise
                policy.sleep(policy.delay(attempt, retry.retry_after(exc.headers)))
            except (urllib3.exceptions.HTTPError, OSError) as exc:
                never_sent = isinstance(exc, urllib3.exceptions.NewConnectionError) or isinstance(
                    getattr(exc, "reason", None), urllib3.exceptions.NewConnectionError
                )
                if last or (not ambiguous_ok and not never_sent):
                    raise StoreUnavailable(
                        f"cannot reach the Kubernetes API at {self.client.configuration.host}"
                        f"{f' ({attempt + 1} attempts)' if attempt else ''}: {exc}"
                    ) from exc
                policy.sleep(policy.delay(attempt))
        raise AssertionError("unreachable")  # pragma: no cover

    def _request(self, method: str, kind: kinds.Kind, where: str, url: str, body=None, **params) -> dict:
        if method in ("POST", "PUT"):
            params.setdefault("field_manager", ownership.FIELD_MANAGER)
        ambiguous_ok = not (method == "POST" and body and not (body.get("metadata") or {}).get("name"))
        try:
            resp, _retried = self._send(method, url, body, ambiguous_ok=ambiguous_ok, **params)
        except ApiException as exc:
            err = self._unserved(translate(exc, kind, where), exc, kind)
            if getattr(exc, "retried", 0):
                settled = self._settle(method, kind, url, body, err)
                if settled is not None:
                    return settled
                if isinstance(err, StoreUnavailable):
                    err = StoreUnavailable(f"{err.message} ({exc.retried + 1} attempts)", obj=err.obj)
            raise err from None
        return self._clean(json.loads(resp.data), kind)

    def _unserved(self, err: CapiError, exc, kind: kinds.Kind) -> CapiError:
        """A kind the server does not serve at our version because another project's CRD serves it at others:
        the error says which versions and what to do (one read of the CRD, on this error path only)."""
        if exc.status != 404 or not isinstance(err, StoreUnavailable) or kind.core:
            return err
        url = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{kind.crd_name}"
        try:
            found = json.loads(self.dyn.request("GET", url, serialize=False, _request_timeout=TIMEOUT).data)
        except (ApiException, urllib3.exceptions.HTTPError, OSError):
            return err  # no such CRD, or no right to read CRDs: the error stands
        why = model_crds.version_problem(kind, found)
        return Incompatible(why, obj=err.obj) if why else err

    def _settle(self, method: str, kind: kinds.Kind, url: str, body, err: CapiError) -> dict | None:
        """A retried write's second answer when its first attempt may have been applied: the object, if the
        store now holds what the write asked for (else None: the error stands)."""
        if method == "DELETE" and isinstance(err, NotFound):
            return {}
        if method not in ("POST", "PUT") or not body:
            return None
        if method == "PUT" and isinstance(err, NotFound) and not (body.get("metadata") or {}).get("finalizers"):
            return copy.deepcopy(body)  # the write took the last finalizer of a deleting object: it is gone
        if method == "POST" and isinstance(err, AlreadyExists):
            url = f"{url}/{body['metadata']['name']}"
        elif not (method == "PUT" and isinstance(err, Conflict)):
            return None
        try:
            resp, _headers = self._send("GET", url)
        except (ApiException, StoreUnavailable):
            return None
        stored = self._clean(json.loads(resp.data), kind)
        sent = copy.deepcopy(body)
        common.merge_string_data(sent)
        return stored if retry.same_write(stored, sent, status=url.endswith("/status")) else None

    def _clean(self, obj: dict, kind: kinds.Kind) -> dict:
        # List items of core kinds come without apiVersion/kind; managedFields is server bookkeeping, kept
        # apart for the guard of the writes that follow (common.guard).
        if obj.get("kind", "").endswith("List") and "items" in obj:
            obj["items"] = [self._clean(item, kind) for item in obj["items"]]
            return obj
        obj.setdefault("apiVersion", kind.api_version)
        obj.setdefault("kind", kind.kind)
        md = obj.get("metadata") or {}
        if md.get("name"):
            self._seen[(kind.key, md.get("namespace"), md["name"])] = (ownership.managers(obj), _summary(obj))
        md.pop("managedFields", None)
        return obj

    def _guard(self, k: kinds.Kind, name: str, ns: str | None, action: str, rv: str | None = None) -> bool:
        """common.guard on the stored object: as it was last read (no request) when that is the version ``rv``
        the write is conditional on (or any version, for a delete conditional on the one read), else read now."""
        seen = self._seen.get((k.key, ns, name))
        if seen is None or (rv and seen[1]["metadata"].get("resourceVersion") != rv):
            self.get(k, name, ns)
            seen = self._seen[(k.key, ns, name)]
        managers, stored = seen
        return common.guard(stored, action, adopt=self.adopt, get=self.get, seen_managers=managers)

    @staticmethod
    def _where(kind: kinds.Kind, name, namespace) -> str:
        return f"{kind.kind} {namespace + '/' if kind.namespaced and namespace else ''}{name or '?'}"

    @staticmethod
    def _ns(kind: kinds.Kind, namespace: str | None) -> str | None:
        return (namespace or "default") if kind.namespaced else None

    # -- reads ----------------------------------------------------------------

    def get(self, kind, name: str, namespace: str | None = None) -> dict:
        k = kinds.resolve(kind)
        if not name:
            raise Invalid("name is required", obj=k.kind, field="metadata.name")
        ns = self._ns(k, namespace)
        return self._request("GET", k, self._where(k, name, ns), path(k, name, ns))

    def list(self, kind, namespace: str | None = None, label_selector=None, fields=None) -> list[dict]:
        k = kinds.resolve(kind)
        sel = selectors.parse(label_selector, where="label_selector")
        fields = common.check_fields(fields)
        # The server filters by what its string form takes; gt/lt (CAPM3's host
        # selector operators) are applied here, and the whole selector again for safety.
        server_side = ",".join(str(r) for r in sel.requirements if r.operator in _SERVER_OPERATORS)
        ns = namespace if k.namespaced else None
        params = {"label_selector": server_side} if server_side else {}
        out = []
        # Pages, as kubectl and client-go's pager read lists: the API server answers each from one snapshot.
        for items in self._pages(k, ns, params):
            out += [o for o in items if sel.matches(o["metadata"].get("labels")) and common.fields_match(o, fields)]
        return sorted(out, key=lambda o: (o["metadata"].get("namespace") or "", o["metadata"]["name"]))

    def list_keys(self, kind, namespace: str | None = None, label_selector=None, fields=None) -> list[tuple]:
        """(namespace, name) of what ``list`` returns: the same read (server-side label selector, pages),
        since the API server filters custom resources by labels only; the field filters apply here."""
        return [
            (o["metadata"].get("namespace") or "", o["metadata"]["name"])
            for o in self.list(kind, namespace, label_selector, fields)
        ]

    def _pages(self, k: kinds.Kind, ns: str | None, params: dict) -> list[list[dict]]:
        where, url = self._where(k, "*", ns), path(k, None, ns)
        for _restart in range(3):
            pages, token = [], None
            try:
                while True:
                    more = {"_continue": token} if token else {}
                    resp, _headers = self._send("GET", url, limit=self.list_page, **more, **params)
                    page = self._clean(json.loads(resp.data), k)
                    pages.append(page["items"])
                    token = (page.get("metadata") or {}).get("continue")
                    if not token:
                        return pages
            except ApiException as exc:
                if exc.status == 410:  # the continue token expired: read the list again from the start
                    continue
                raise self._unserved(translate(exc, k, where), exc, k) from None
        raise StoreUnavailable(f"cannot list {k.plural}: the list kept changing faster than it could be paged")

    # -- writes ---------------------------------------------------------------

    def create(self, obj: dict) -> dict:
        obj, k = common.creatable(obj)
        md = obj["metadata"]
        for key in ("uid", "deletionTimestamp", "creationTimestamp", "generation", "managedFields"):
            md.pop(key, None)
        obj["apiVersion"] = k.api_version
        ns = self._ns(k, md.get("namespace"))
        where = meta.ref(obj)
        try:
            return self._request("POST", k, where, path(k, None, ns), body=obj)
        except NotFound:
            # A missing namespace is created, as the protocol says (the sqlite store does the same).
            if not ns:
                raise
            try:
                self.create(meta.new("Namespace", ns, namespace=None))
            except AlreadyExists:
                pass
            return self._request("POST", k, where, path(k, None, ns), body=obj)

    def update(self, obj: dict) -> dict:
        return self._update(obj, status=False)

    def update_status(self, obj: dict) -> dict:
        return self._update(obj, status=True)

    def _update(self, obj: dict, status: bool) -> dict:
        k = common.updatable(obj, status)
        body = copy.deepcopy(obj)
        body["apiVersion"] = k.api_version
        md = body["metadata"]
        ns = self._ns(k, md.get("namespace"))
        where = meta.ref(obj)
        url = path(k, md["name"], ns, "status" if status else None)
        if md.get("resourceVersion"):
            if self._guard(k, md["name"], ns, "update", md["resourceVersion"]) and not status:
                ownership.mark(body)
            return self._request("PUT", k, where, url, body=body)
        # No resourceVersion: an unconditional update (custom resources insist on
        # one, so take the current one and retry if someone slips in between).
        for _attempt in range(5):
            md["resourceVersion"] = self.get(k, md["name"], ns)["metadata"]["resourceVersion"]
            if self._guard(k, md["name"], ns, "update", md["resourceVersion"]) and not status:
                ownership.mark(body)
            try:
                return self._request("PUT", k, where, url, body=body)
            except Conflict:
                continue
        raise Conflict("the object kept changing during an unconditional update", obj=where)

    def delete(self, kind, name: str, namespace: str | None = None) -> dict | None:
        k = kinds.resolve(kind)
        ns = self._ns(k, namespace)
        where = self._where(k, name, ns)
        # Background: the garbage collector removes dependents after the owner is gone. The delete is conditional
        # on the version the guard judged; one that moved since is read and judged again.
        for _attempt in range(5):
            self._guard(k, name, ns, "delete")
            rv = self._seen[(k.key, ns, name)][1]["metadata"].get("resourceVersion")
            precondition = {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"resourceVersion": rv}}
            try:
                self._request("DELETE", k, where, path(k, name, ns), body=precondition, propagation_policy="Background")
                break
            except Conflict:
                self._seen.pop((k.key, ns, name), None)
        else:
            raise Conflict("the object kept changing while being deleted", obj=where)
        try:
            return self.get(k, name, ns)
        except NotFound:
            return None
