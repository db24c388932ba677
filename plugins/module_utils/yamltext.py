"""YAML text that every reader reads as written.

PyYAML's dumper quotes a string only when PyYAML's own YAML 1.1 resolver would read
it as something else.  The readers of what the collection writes for a host are
wider than that: cloud-init reads with PyYAML (1.1), the Kubernetes side with
sigs.k8s.io/yaml (go-yaml: 1.1 booleans ``y``/``n``/``on``/``off``, Go integer
literals ``0o17``/``0X1F``/``1_000``, 1.2 floats ``1e5``, dates), other tools with
a YAML 1.2 core schema reader (``1e5``, ``0o17``).  A string any of them would
resolve to a bool, null, number, timestamp, merge key or value is written quoted.
The patterns are the YAML 1.1 type repository's (yaml.org/type) and the YAML 1.2
core schema's (spec 1.2.2, 10.3.2), plus the Go literal forms go-yaml accepts.
"""

from __future__ import annotations

import re

try:
    import yaml
except ImportError:  # PyYAML comes with ansible-core; the modules report it missing otherwise
    yaml = None

_PATTERNS = (
    # YAML 1.1 bool, null, merge, value
    r"y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF",
    r"~|null|Null|NULL|",
    r"<<|=",
    # YAML 1.1 int (binary, octal with a leading 0, decimal, hex, sexagesimal)
    r"[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+",
    # YAML 1.1 float as its readers implement it (PyYAML, ruamel.yaml): the type repository's own
    # regex ("[0-9.]*") would make every dotted quad a float, which no reader does
    r"[-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+]?[0-9]+)?|[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+|[-+]?\.[0-9_]+(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*",
    r"[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)",
    # YAML 1.1 timestamp, and go-yaml's "2006-1-2" forms
    r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}"
    r"(?:(?:[Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]*)?(?:[ \t]*Z|[ \t]*[-+][0-9]{1,2}(?::[0-9]{2})?)?)?",
    # YAML 1.2 core int and float
    r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+",
    r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?",
    # Go integer literals (strconv.ParseInt base 0, which go-yaml tries): any case prefix, underscores
    r"[-+]?0[bBoOxX]_?[0-9a-fA-F][0-9a-fA-F_]*|[-+]?[0-9][0-9_]*",
    # ruamel.yaml's int and float resolvers take underscores anywhere among the digits, after a 0b/0o/0x
    # prefix too ("0o__0" is 0; "-_" and "0x__" crash it)
    r"[-+]?[0-9_]+|[-+]?[0-9_]*\.[0-9_]*(?:[eE][-+]?[0-9_]+)?|[-+]?0[bBoOxX][0-9a-fA-F_]*",
)
_AMBIGUOUS = re.compile("(?:" + "|".join(f"(?:{p})" for p in _PATTERNS) + r")\Z")


def ambiguous(value: str) -> bool:
    """True when some YAML 1.1, 1.2-core or go-yaml reader reads the plain scalar ``value`` as a non-string."""
    return _AMBIGUOUS.match(value) is not None


_DUMPERS: dict = {}


def dumper(literal_blocks: bool = False, fast: bool = False):
    """A SafeDumper class quoting every ambiguous string (keys included).

    ``literal_blocks``: multi-line strings as ``|`` blocks (cloud-config files).
    ``fast``: libyaml's emitter when present (the same text, several times faster).
    """
    key = (literal_blocks, fast)
    if key not in _DUMPERS:
        base = getattr(yaml, "CSafeDumper", yaml.SafeDumper) if fast else yaml.SafeDumper

        class Dumper(base):
            pass

        def represent_str(dumper, value: str):
            if literal_blocks and "\n" in value:
                return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
            if ambiguous(value):
                return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="'")
            return dumper.represent_scalar("tag:yaml.org,2002:str", value)

        Dumper.add_representer(str, represent_str)
        _DUMPERS[key] = Dumper
    return _DUMPERS[key]


def dump(data, *, sort_keys: bool = False, literal_blocks: bool = False, fast: bool = False) -> str:
    """Block-style YAML of ``data`` with every ambiguous string quoted."""
    return yaml.dump(
        data,
        Dumper=dumper(literal_blocks, fast),
        sort_keys=sort_keys,
        default_flow_style=False,
        allow_unicode=True,
        width=1 << 30,
    )
