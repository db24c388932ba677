"""Request data and API errors, shaped as MAAS (Django + piston3) shapes them.

``Form`` is a small stand-in for Django's QueryDict: a field may repeat, ``get``
returns the last value (as ``QueryDict.get`` does, which is why MAAS reads a
space-separated ``ip_addresses`` string), ``getlist`` returns all of them.
"""

from __future__ import annotations

import json


class Form:
    def __init__(self, pairs=()):
        self._lists: dict[str, list[str]] = {}
        for key, value in pairs:
            self.add(key, value)

    def add(self, key: str, value: str) -> None:
        self._lists.setdefault(key, []).append(value)

    def get(self, key: str, default=None):
        values = self._lists.get(key)
        return values[-1] if values else default

    def getlist(self, key: str) -> list[str]:
        return list(self._lists.get(key, []))

    def keys(self):
        return list(self._lists)

    def lists(self):
        return [(k, list(v)) for k, v in self._lists.items()]

    def __contains__(self, key: str) -> bool:
        return key in self._lists

    def __repr__(self):
        return f"Form({self._lists!r})"


class ApiError(Exception):
    """A MAASAPIException: plain-text body with the exception's status."""

    status = 500

    def __init__(self, message: str = "", status: int | None = None):
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status

    def response(self) -> tuple[int, str, bytes]:
        return self.status, "text/plain; charset=utf-8", self.message.encode()


class BadRequest(ApiError):
    status = 400


class Forbidden(ApiError):
    status = 403


class NotFound(ApiError):
    """Django's Http404 as MAAS renders it (text/plain)."""

    status = 404


class NodeStateViolation(ApiError):
    status = 409


class NodesNotAvailable(NodeStateViolation):
    status = 409


class Unauthorized(ApiError):
    status = 401


class ValidationError(ApiError):
    """MAASAPIValidationError: a form's errors as a JSON object, 400."""

    status = 400

    def __init__(self, errors: dict[str, list[str]] | str):
        super().__init__(json.dumps(errors) if isinstance(errors, dict) else errors)
        self.errors = errors

    def response(self):
        if isinstance(self.errors, dict):
            return 400, "application/json; charset=utf-8", json.dumps(self.errors).encode()
        return super().response()


TRUE_STRINGS = {"true", "yes", "on", "1"}
FALSE_STRINGS = {"false", "no", "off", "0", ""}


def string_bool(form: Form, key: str, default=False):
    """formencode's StringBool, as MAAS's get_optional_param uses it."""
    value = form.get(key)
    if value is None:
        return default
    low = value.strip().lower()
    if low in TRUE_STRINGS:
        return True
    if low in FALSE_STRINGS:
        return False
    raise ValidationError({key: ["Value should be 'true' or 'false'"]})


def int_param(form: Form, key: str, default=None):
    value = form.get(key)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise ValidationError({key: ["Enter a whole number."]}) from None


def float_param(form: Form, key: str, message: str):
    value = form.get(key)
    if value is None or value == "":
        return None
    try:
        return float(value)
    except ValueError:
        raise ValidationError({key: [message]}) from None


_SUFFIXES = {"K": 1000, "M": 1000**2, "G": 1000**3, "T": 1000**4}


def size_param(value: str, key: str) -> int:
    """MAAS's BytesField / parse_human_readable_size: "512M", "2G", "0"."""
    text = value.strip().upper().rstrip("B")
    mult = 1
    if text and text[-1] in _SUFFIXES:
        mult = _SUFFIXES[text[-1]]
        text = text[:-1]
    try:
        return int(float(text) * mult)
    except ValueError:
        raise ValidationError({key: [f"Invalid size for {key}: {value}"]}) from None
