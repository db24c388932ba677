"""Kubernetes label selectors, complete.

Accepted forms (all parse to a list of ``Requirement``):

* a ``LabelSelector`` mapping: ``matchLabels`` and ``matchExpressions`` with
  the operators ``In``, ``NotIn``, ``Exists``, ``DoesNotExist``;
* the lower-case ``selection`` operators CAPM3 passes through from a host
  selector: ``in``, ``notin``, ``=``, ``==``, ``!=``, ``exists``, ``!``,
  ``gt``, ``lt``;
* the string form ``a=b,c!=d,e in (x,y),f notin (z),g,!h``.

``Requirement.matches`` follows k8s.io/apimachinery/pkg/labels.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ansible_collections.baremetal.capi.plugins.module_utils.errors import InvalidSelector

IN, NOT_IN, EXISTS, NOT_EXISTS, EQUALS, NOT_EQUALS, GT, LT = "in", "notin", "exists", "!", "=", "!=", "gt", "lt"

# Every spelling the API accepts, to the canonical one.
_OPERATORS = {
    "in": IN,
    "notin": NOT_IN,
    "exists": EXISTS,
    "doesnotexist": NOT_EXISTS,
    "!": NOT_EXISTS,
    "=": EQUALS,
    "==": EQUALS,
    "!=": NOT_EQUALS,
    "gt": GT,
    "lt": LT,
}

_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def label_key_error(key) -> str | None:
    """Why ``key`` is not a valid label key (qualified name), or None."""
    if not isinstance(key, str) or not key:
        return "a label key must be a non-empty string"
    prefix, _sep, name = key.rpartition("/")
    if "/" in prefix:
        return f"label key {key!r} has more than one '/'"
    if prefix and (len(prefix) > 253 or not _DNS1123_SUBDOMAIN.match(prefix)):
        return f"label key {key!r}: prefix must be a DNS-1123 subdomain"
    if not name or len(name) > 63 or not _NAME.match(name):
        return (
            f"label key {key!r}: name part must be 63 characters or less, begin and end with an "
            "alphanumeric character, with dashes, underscores, dots and alphanumerics between"
        )
    return None


def label_value_error(value) -> str | None:
    if not isinstance(value, str):
        return f"label value {value!r} must be a string"
    if value and (len(value) > 63 or not _NAME.match(value)):
        return (
            f"label value {value!r} must be 63 characters or less, empty or begin and end with an "
            "alphanumeric character, with dashes, underscores, dots and alphanumerics between"
        )
    return None


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: str
    values: tuple = ()

    def matches(self, labels: dict) -> bool:
        has = self.key in labels
        value = labels.get(self.key)
        if self.operator in (IN, EQUALS):
            return has and value in self.values
        if self.operator in (NOT_IN, NOT_EQUALS):
            return not has or value not in self.values
        if self.operator == EXISTS:
            return has
        if self.operator == NOT_EXISTS:
            return not has
        if not has:  # gt / lt
            return False
        try:
            have = int(value)
        except (TypeError, ValueError):
            return False
        want = int(self.values[0])
        return have > want if self.operator == GT else have < want

    def __str__(self) -> str:
        if self.operator == EXISTS:
            return self.key
        if self.operator == NOT_EXISTS:
            return f"!{self.key}"
        if self.operator in (IN, NOT_IN):
            return f"{self.key} {self.operator} ({','.join(self.values)})"
        return f"{self.key}{self.operator}{self.values[0]}"


def requirement(key, operator, values=(), where: str = "selector") -> Requirement:
    """A validated Requirement; ``where`` names the field in errors."""
    err = label_key_error(key)
    if err:
        raise InvalidSelector(err, field=where)
    op_key = operator.lower() if isinstance(operator, str) else operator
    if op_key not in _OPERATORS:
        raise InvalidSelector(f"{operator!r} is not a valid label selector operator", field=where)
    op = _OPERATORS[op_key]
    if values is None:
        values = ()
    if isinstance(values, str) or not isinstance(values, (list, tuple)):
        raise InvalidSelector(f"values must be a list, got {values!r}", field=where)
    values = tuple(values)
    if op in (IN, NOT_IN) and not values:
        raise InvalidSelector(f"for 'in', 'notin' operators, values set can't be empty (key {key!r})", field=where)
    if op in (EQUALS, NOT_EQUALS) and len(values) != 1:
        raise InvalidSelector(f"exact-match compatibility requires one single value (key {key!r})", field=where)
    if op in (EXISTS, NOT_EXISTS) and values:
        raise InvalidSelector(f"values set must be empty for exists and does not exist (key {key!r})", field=where)
    if op in (GT, LT):
        if len(values) != 1:
            raise InvalidSelector(f"for 'Gt', 'Lt' operators, exactly one value is required (key {key!r})", field=where)
        try:
            int(values[0])
        except (TypeError, ValueError):
            raise InvalidSelector(
                f"for 'Gt', 'Lt' operators, the value must be an integer (key {key!r}, value {values[0]!r})",
                field=where,
            ) from None
    else:
        for v in values:
            err = label_value_error(v)
            if err:
                raise InvalidSelector(err, field=where)
    return Requirement(key, op, tuple(sorted(values)) if op in (IN, NOT_IN) else values)


class Selector:
    """A conjunction of requirements.  An empty selector matches everything."""

    def __init__(self, requirements=()):
        self.requirements = tuple(requirements)

    def matches(self, labels: dict | None) -> bool:
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    def equalities(self) -> dict:
        """key -> value for the requirements a store can look up in an index."""
        return {
            r.key: r.values[0]
            for r in self.requirements
            if r.operator == EQUALS or (r.operator == IN and len(r.values) == 1)
        }

    def __bool__(self) -> bool:
        return bool(self.requirements)

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)

    def __repr__(self) -> str:
        return f"Selector({str(self)!r})"


def parse(selector, where: str = "selector") -> Selector:
    """A Selector from None, a string, a LabelSelector mapping, a Selector, or a list of those (all must match)."""
    if selector is None or isinstance(selector, Selector):
        return selector or Selector()
    if isinstance(selector, list):
        return Selector([r for i, s in enumerate(selector) for r in parse(s, f"{where}[{i}]").requirements])
    if isinstance(selector, str):
        return Selector(_parse_string(selector, where))
    if isinstance(selector, dict):
        unknown = set(selector) - {"matchLabels", "matchExpressions"}
        if unknown:
            raise InvalidSelector(f"unknown field(s) {', '.join(sorted(unknown))}", field=where)
        reqs = []
        match_labels = selector.get("matchLabels") or {}
        if not isinstance(match_labels, dict):
            raise InvalidSelector("matchLabels must be a mapping", field=f"{where}.matchLabels")
        for key, value in match_labels.items():
            reqs.append(requirement(key, "=", [value], where=f"{where}.matchLabels[{key}]"))
        exprs = selector.get("matchExpressions") or []
        if not isinstance(exprs, list):
            raise InvalidSelector("matchExpressions must be a list", field=f"{where}.matchExpressions")
        for i, expr in enumerate(exprs):
            field = f"{where}.matchExpressions[{i}]"
            if not isinstance(expr, dict) or "key" not in expr or "operator" not in expr:
                raise InvalidSelector("each expression needs key and operator", field=field)
            reqs.append(requirement(expr["key"], expr["operator"], expr.get("values") or (), where=field))
        return Selector(reqs)
    raise InvalidSelector(f"a selector must be a string or a mapping, got {type(selector).__name__}", field=where)


_TOKEN = re.compile(r"\s*(\(|\)|,|!=|==|=|!|[^\s(),!=]+)")


def _parse_string(text: str, where: str) -> list[Requirement]:
    tokens = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise InvalidSelector(f"unable to parse selector {text!r} at position {pos}", field=where)
        tokens.append(m.group(1))
        pos = m.end()
        while pos < len(text) and text[pos].isspace():
            pos += 1
    reqs: list[Requirement] = []
    i = 0

    def err(msg):
        return InvalidSelector(f"{msg} in selector {text!r}", field=where)

    while i < len(tokens):
        tok = tokens[i]
        if tok == "!":
            if i + 1 >= len(tokens) or tokens[i + 1] in "(),!=":
                raise err("expected a key after '!'")
            reqs.append(requirement(tokens[i + 1], "!", where=where))
            i += 2
        elif tok in "(),=" or tok in ("!=", "=="):
            raise err(f"unexpected {tok!r}")
        else:
            key = tok
            nxt = tokens[i + 1] if i + 1 < len(tokens) else ","
            if nxt == ",":
                reqs.append(requirement(key, "exists", where=where))
                i += 1
            elif nxt in ("=", "==", "!="):
                value = tokens[i + 2] if i + 2 < len(tokens) and tokens[i + 2] not in "(),!=" else ""
                reqs.append(requirement(key, nxt, [value], where=where))
                i += 3 if value else 2
            elif nxt.lower() in ("in", "notin"):
                if i + 2 >= len(tokens) or tokens[i + 2] != "(":
                    raise err(f"expected '(' after {nxt!r}")
                j = i + 3
                values = []
                while j < len(tokens) and tokens[j] != ")":
                    if tokens[j] != ",":
                        values.append(tokens[j])
                    j += 1
                if j >= len(tokens):
                    raise err("missing ')'")
                reqs.append(requirement(key, nxt, values, where=where))
                i = j + 1
            elif nxt.lower() in ("gt", "lt"):
                if i + 2 >= len(tokens):
                    raise err(f"expected a value after {nxt!r}")
                reqs.append(requirement(key, nxt, [tokens[i + 2]], where=where))
                i += 3
            else:
                raise err(f"unexpected {nxt!r} after key {key!r}")
        if i < len(tokens):
            if tokens[i] != ",":
                raise err(f"expected ',' but found {tokens[i]!r}")
            i += 1
            if i == len(tokens):
                raise err("trailing ','")
    return reqs
