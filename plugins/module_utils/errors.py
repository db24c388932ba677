"""Typed errors of the engine.  Modules turn every one of them into one fail_json."""

from __future__ import annotations


class CapiError(Exception):
    """Base of every error the engine raises on purpose."""

    def __init__(self, message: str, *, obj: str | None = None, field: str | None = None):
        self.obj = obj
        self.field = field
        parts = [p for p in (obj, field) if p]
        self.message = message
        super().__init__(f"{': '.join(parts)}: {message}" if parts else message)


class Invalid(CapiError):
    """Bad input: caught before anything is written."""


class InvalidSelector(Invalid):
    """A label selector that cannot be parsed or validated."""


class UnknownKind(Invalid):
    """A kind that is not part of the object model."""


class NotFound(CapiError):
    pass


class AlreadyExists(CapiError):
    pass


class Conflict(CapiError):
    """The object changed since it was read (stale resourceVersion)."""


class Forbidden(CapiError):
    """The store refuses the change (e.g. a new finalizer on an object being deleted)."""


class StoreUnavailable(CapiError):
    """The store cannot be reached."""


class Incompatible(StoreUnavailable):
    """The management cluster serves a kind of the collection at other versions only (another project's CRD)."""


class Requeue(CapiError):
    """Not an error: the object is not ready yet; try again after ``after`` seconds."""

    def __init__(self, message: str, after: float = 2.0, **kw):
        super().__init__(message, **kw)
        self.after = after


class Timeout(CapiError):
    pass


class NoHostAvailable(Requeue):
    """No BareMetalHost (or MAAS machine) can be given to a machine now: requeued, and named at the deadline.

    ``selector``, ``failure_domain``, ``seen`` (how many candidates were listed) and ``skipped`` (candidate
    name -> why it was not taken) say why, so the deadline's message is more than a timeout.
    """

    def __init__(self, message: str, *, selector: str = "", failure_domain: str | None = None, seen: int = 0,
                 skipped: dict | None = None, after: float = 30.0, **kw):  # fmt: skip
        super().__init__(message, after=after, **kw)
        self.selector, self.failure_domain, self.seen = selector, failure_domain, seen
        self.skipped = dict(skipped or {})
