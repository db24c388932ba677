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


class Requeue(CapiError):
    """Not an error: the object is not ready yet; try again after ``after`` seconds."""

    def __init__(self, message: str, after: float = 2.0, **kw):
        super().__init__(message, **kw)
        self.after = after


class Timeout(CapiError):
    pass
