"""Every string the collection serialises for a host reads back as the same string in every YAML reader.

Readers: PyYAML's SafeLoader (cloud-init's reader, YAML 1.1 as PyYAML implements it), a loader
resolving the YAML 1.1 type repository in full (``y``/``n`` booleans, as go-yaml and therefore
sigs.k8s.io/yaml do), a loader resolving the YAML 1.2 core schema, and ruamel.yaml (an independent
YAML 1.2 implementation).
"""

from __future__ import annotations

import re

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.baremetal.capi.plugins.module_utils import yamltext
from ansible_collections.baremetal.capi.plugins.module_utils.bootstrap import cloudinit, pki
from ansible_collections.baremetal.capi.plugins.module_utils.metal3 import render


class Resolved:
    """What a non-string plain scalar loads as in the test loaders: never equal to a str."""

    def __init__(self, tag, value):
        self.tag, self.value = tag, value

    def __repr__(self):
        return f"Resolved({self.tag}, {self.value!r})"


def _loader(name: str, resolvers: dict):
    """A SafeLoader whose implicit resolvers are exactly ``resolvers`` {tag: regex}."""
    cls = type(name, (yaml.SafeLoader,), {})
    cls.yaml_implicit_resolvers = {}
    for tag, pattern in resolvers.items():
        regex = re.compile(f"^(?:{pattern})$")
        # no first-character dispatch (key None): every scalar is tried against every pattern
        cls.yaml_implicit_resolvers.setdefault(None, []).append((tag, regex))

    def construct(loader, node):
        return Resolved(node.tag, node.value)

    for tag in resolvers:
        cls.add_constructor(tag, construct)
    return cls


# yaml.org/type (YAML 1.1), written from the type repository's regexes
SPEC_11 = _loader(
    "Spec11Loader",
    {
        "tag:yaml.org,2002:bool": r"y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF",
        "tag:yaml.org,2002:null": r"~|null|Null|NULL|",
        "tag:yaml.org,2002:int": r"[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+"
        r"|[-+]?[1-9][0-9_]*(:[0-5]?[0-9])+",
        # the float as 1.1 readers implement it (the repository's "[0-9.]*" would make 10.0.0.1 a float)
        "tag:yaml.org,2002:float": r"[-+]?[0-9][0-9_]*\.[0-9_]*([eE][-+]?[0-9]+)?|[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+"
        r"|[-+]?\.[0-9_]+([eE][-+]?[0-9]+)?|[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+\.[0-9_]*"
        r"|[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN)",
        "tag:yaml.org,2002:timestamp": r"[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]"
        r"|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?([Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](\.[0-9]*)?"
        r"(([ \t]*)Z|[-+][0-9][0-9]?(:[0-9][0-9])?)?",
        "tag:yaml.org,2002:merge": r"<<",
        "tag:yaml.org,2002:value": r"=",
    },
)
# YAML 1.2.2 core schema (10.3.2)
CORE_12 = _loader(
    "Core12Loader",
    {
        "tag:yaml.org,2002:null": r"null|Null|NULL|~|",
        "tag:yaml.org,2002:bool": r"true|True|TRUE|false|False|FALSE",
        "tag:yaml.org,2002:int": r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+",
        "tag:yaml.org,2002:float": r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?"
        r"|[-+]?(\.inf|\.Inf|\.INF)|\.nan|\.NaN|\.NAN",
    },
)


def _ruamel_load(text):
    ruamel = pytest.importorskip("ruamel.yaml")
    return ruamel.YAML(typ="safe", pure=True).load(text)


READERS = {
    "pyyaml-1.1": lambda text: yaml.load(text, Loader=yaml.SafeLoader),
    "spec-1.1": lambda text: yaml.load(text, Loader=SPEC_11),
    "core-1.2": lambda text: yaml.load(text, Loader=CORE_12),
    "ruamel-1.2": _ruamel_load,
}


def _case_variants(words):
    return st.sampled_from(words).flatmap(
        lambda w: st.lists(st.booleans(), min_size=len(w), max_size=len(w)).map(
            lambda ups: "".join(c.upper() if u else c.lower() for c, u in zip(w, ups, strict=True))
        )
    )


WORDS = ["y", "n", "yes", "no", "on", "off", "true", "false", "null", "nan", "inf", ".inf", ".nan", "-.inf", "~"]
NUMBERS = st.from_regex(
    r"\A[-+]?(0[bBoOxX][0-9a-fA-F_]{1,4}|[0-9_]{1,4}(\.[0-9_]{0,3})?([eE][-+]?[0-9]{1,3})?|\.[0-9]{1,3}"
    r"|[0-9]{1,3}(:[0-5][0-9]){1,2}(\.[0-9]*)?)\Z"
)
DATES = st.from_regex(
    r"\A[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}([Tt ][0-9]{1,2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[-+][0-9]{2})?)?\Z"
)
STRINGS = st.one_of(
    _case_variants(WORDS),
    NUMBERS,
    DATES,
    st.sampled_from(["<<", "=", "", " ", "-", "? x", "a: b", "#c", "'q'", '"q"', "1.2.3", "0o17", "1e5", "N", "012"]),
    st.text(min_size=0, max_size=12),
    st.text(alphabet="yYnN0123456789.eE+-_:xXoObB", max_size=8),
)


def _same(text, expected):
    for reader, load in READERS.items():
        got = load(text)
        assert got == expected, f"{reader} read {text!r} as {got!r}"


@settings(max_examples=400, deadline=None)
@given(STRINGS)
def test_metal3_data_round_trip(value):
    # metaData and networkData: keys and values, block style, as the Metal3Data secrets hold them
    data = {value: value, "list": [value], "nested": {value: [value, {"k": value}]}}
    _same(render.to_yaml(data), data)


@settings(max_examples=300, deadline=None)
@given(STRINGS)
def test_cloud_config_round_trip(value):
    text = cloudinit.document([cloudinit.write_file(value or "/x", value)], [value], users=[{"name": value}])
    assert text.startswith(cloudinit.HEADER)
    doc = yaml.load(text, Loader=yaml.SafeLoader)
    _same(text, doc)
    assert doc["runcmd"] == [value] and doc["users"] == [{"name": value}]
    assert doc["write_files"][0]["content"] == value


@settings(max_examples=200, deadline=None)
@given(STRINGS)
def test_kubeadm_documents_round_trip(value):
    docs = [{"kind": "JoinConfiguration", "nodeRegistration": {"name": value, "kubeletExtraArgs": {value: value}}}]
    text = cloudinit.kubeadm_yaml(*docs)
    for loader in (yaml.SafeLoader, SPEC_11, CORE_12):
        assert list(yaml.load_all(text, Loader=loader)) == docs, loader.__name__


@pytest.mark.parametrize(
    "value",
    [
        "N",
        "n",
        "Y",
        "yes",
        "Off",
        "ON",
        "1e5",
        "1E+5",
        "012",
        "0o17",
        "0x1F",
        "0X1F",
        "1_000",
        ".inf",
        "-.Inf",
        ".NaN",
        "~",
        "null",
        "NULL",
        "",
        "2001-12-14",
        "2001-1-2",
        "2001-12-14t21:59:43.10-05:00",
        "1:20",
        "<<",
        "=",
        "+12",
        "-0",
        "1.",
        ".5",
        "0b101",
    ],
)
def test_ambiguous_strings_are_quoted(value):
    assert yamltext.ambiguous(value)
    text = render.to_yaml({"k": value})
    assert text in (f"k: '{value}'\n", f'k: "{value}"\n'), text
    _same(text, {"k": value})


@pytest.mark.parametrize(
    "value", ["host-a", "eth0", "ab:cd", "node1", "v1.34.4", "1.2.3", "192.168.1.10", "fe80::1", "1h", "0.0.0.0/0"]
)
def test_plain_strings_stay_plain(value):
    # names, versions, dotted quads and IPv6 text read as strings everywhere: upstream's bytes are kept
    assert not yamltext.ambiguous(value)
    text = render.to_yaml({"k": value})
    assert text == f"k: {value}\n"
    _same(text, {"k": value})


def test_kubeconfig_round_trip():
    ca_cert, ca_key = pki.new_ca("1e5")
    text = pki.admin_kubeconfig("N", "https://10.0.0.1:6443", ca_cert, ca_key)
    doc = yaml.safe_load(text)
    assert doc["clusters"][0]["name"] == "N" and doc["users"][0]["name"] == "N-admin"
    _same(text, doc)
