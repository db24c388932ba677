from __future__ import annotations

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.errors import InvalidSelector
from ansible_collections.baremetal.capi.plugins.module_utils.model import selectors

LABELS = {"role": "cp", "zone": "z1", "cpus": "8", "example.com/rack": "r-1"}


@pytest.mark.parametrize(
    "text,matches",
    [
        ("role=cp", True),
        ("role = cp", True),
        ("role==cp", True),
        ("role!=cp", False),
        ("role!=worker", True),
        ("missing!=x", True),
        ("role in (cp,worker)", True),
        ("role in ( worker , edge )", False),
        ("role notin (worker)", True),
        ("missing notin (x)", True),
        ("zone", True),
        ("!zone", False),
        ("!missing", True),
        ("cpus gt 4", True),
        ("cpus gt 8", False),
        ("cpus lt 9", True),
        ("role lt 9", False),
        ("missing gt 1", False),
        ("example.com/rack=r-1,role=cp,zone", True),
        ("example.com/rack=r-1,role=worker", False),
        ("role=", False),
        ("empty=", True),
    ],
)
def test_string_form(text, matches):
    labels = dict(LABELS, empty="")
    assert selectors.parse(text).matches(labels) is matches


@pytest.mark.parametrize(
    "bad",
    [
        "role in (cp",
        "role in cp",
        "role=cp,",
        ",role",
        "role gt x",
        "Bad Key=1",
        "role=has space",
        "a/b/c=1",
        "!",
    ],
)
def test_malformed_string_selectors_raise(bad):
    with pytest.raises(InvalidSelector):
        selectors.parse(bad)


@pytest.mark.parametrize(
    "expr",
    [
        {"key": "a", "operator": "In", "values": []},
        {"key": "a", "operator": "Exists", "values": ["x"]},
        {"key": "a", "operator": "=", "values": ["x", "y"]},
        {"key": "a", "operator": "gt", "values": ["1.5"]},
        {"key": "a", "operator": "between", "values": ["1"]},
        {"operator": "In", "values": ["1"]},
    ],
)
def test_invalid_match_expressions_name_the_field(expr):
    with pytest.raises(InvalidSelector, match=r"hostSelector.matchExpressions\[0\]"):
        selectors.parse({"matchExpressions": [expr]}, where="hostSelector")


def test_unknown_selector_field():
    with pytest.raises(InvalidSelector, match="matchLabel"):
        selectors.parse({"matchLabel": {"a": "b"}})


def test_round_trip_string():
    sel = selectors.parse(
        {"matchLabels": {"a": "b"}, "matchExpressions": [{"key": "c", "operator": "NotIn", "values": ["y", "x"]}]}
    )
    assert str(sel) == "a=b,c notin (x,y)"
    assert str(selectors.parse(str(sel))) == str(sel)


def test_a_list_of_selectors_means_all_of_them():
    assert str(selectors.parse(["a=1", {"matchLabels": {"b": "2"}}])) == str(selectors.parse("a=1,b=2"))
    assert selectors.parse([]).matches({"any": "thing"})
    with pytest.raises(InvalidSelector) as err:
        selectors.parse(["a=1", "b in (2"], where="label_selector")
    assert err.value.field == "label_selector[1]"
