"""What cloud-init does with a host's user data, as far as a Cluster API bootstrap needs it.

CABPK renders a ``#cloud-config`` with a ``## template: jinja`` first line, so
cloud-init first renders the document with jinja2 over the instance data
(``ds.meta_data.*`` is the datasource's meta_data, ``v1.*`` the standard keys),
then applies ``write_files`` and runs ``runcmd`` in order.  Pure functions.
"""

from __future__ import annotations

import base64
import gzip
import re
import shlex

import jinja2
import yaml

JINJA_HEADER = "## template: jinja"
# cloud-init renders a variable it cannot find as this marker (cloudinit/handlers/jinja_template.py)
MISSING = "CI_MISSING_JINJA_VAR/"


class CloudInitError(ValueError):
    pass


class _Missing(jinja2.Undefined):
    # cloud-init's UndefinedJinjaVariable: render a marker instead of failing the whole document
    def __str__(self) -> str:
        return f"{MISSING}{self._undefined_name}"

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Missing(name=f"{self._undefined_name}.{name}")


def _aliases(value):
    """Instance data keys with '-' and '.' also reachable with '_' (cloud-init's convert_jinja_instance_data)."""
    if not isinstance(value, dict):
        return value
    out = {}
    for key, item in value.items():
        item = _aliases(item)
        out[key] = item
        alias = re.sub(r"[-.]", "_", str(key))
        out.setdefault(alias, item)
    return out


def instance_data(meta_data: dict, network_data: dict | None = None) -> dict:
    """The variables cloud-init hands to jinja for a config-drive (or MAAS) datasource."""
    meta = _aliases(meta_data or {})
    v1 = {
        "instance_id": meta_data.get("instance-id") or meta_data.get("uuid"),
        "local_hostname": meta_data.get("local-hostname") or meta_data.get("hostname") or meta_data.get("name"),
        "cloud_name": "openstack",
        "platform": "openstack",
        "availability_zone": meta_data.get("availability_zone"),
        "region": None,
    }
    data = {"ds": {"meta_data": meta, "network_json": network_data or {}}, "v1": v1}
    # v1 keys are also top-level variables ({{ local_hostname }})
    data.update(v1)
    return data


def render(user_data: bytes | str, meta_data: dict, network_data: dict | None = None) -> str:
    """The user data as cloud-init sees it after the jinja step (header line removed)."""
    text = user_data.decode() if isinstance(user_data, bytes) else user_data
    first, _, rest = text.partition("\n")
    if first.strip() != JINJA_HEADER:
        return text
    env = jinja2.Environment(undefined=_Missing, keep_trailing_newline=True)
    try:
        return env.from_string(rest).render(instance_data(meta_data, network_data))
    except jinja2.TemplateError as exc:
        raise CloudInitError(f"user data: jinja: {exc}") from exc


def parse(rendered: str) -> dict:
    """A rendered ``#cloud-config`` document as a dict."""
    if not rendered.lstrip().startswith("#cloud-config"):
        kind = rendered.lstrip().splitlines()[0][:40] if rendered.strip() else "empty"
        raise CloudInitError(f"user data is not #cloud-config (starts with {kind!r})")
    try:
        doc = yaml.safe_load(rendered)
    except yaml.YAMLError as exc:
        raise CloudInitError(f"user data: YAML: {exc}") from exc
    if not isinstance(doc, dict):
        raise CloudInitError("user data: #cloud-config is not a mapping")
    return doc


def _decode(entry: dict) -> bytes:
    content = entry.get("content", "")
    data = content.encode() if isinstance(content, str) else bytes(content)
    encoding = (entry.get("encoding") or "text/plain").lower()
    # cloud-init's write_files encodings (cc_write_files.canonicalize_extraction)
    if encoding in ("gz+base64", "gzip+base64", "gz+b64", "gzip+b64"):
        return gzip.decompress(base64.b64decode(data))
    if encoding in ("b64", "base64"):
        return base64.b64decode(data)
    if encoding in ("gz", "gzip"):
        return gzip.decompress(data)
    return data


def write_files(doc: dict) -> dict[str, bytes]:
    """path -> content of every write_files entry (a later entry for a path replaces, or appends)."""
    files: dict[str, bytes] = {}
    for entry in doc.get("write_files") or []:
        path = entry.get("path")
        if not path:
            raise CloudInitError("user data: write_files entry without path")
        data = _decode(entry)
        files[path] = files.get(path, b"") + data if entry.get("append") else data
    return files


def commands(doc: dict) -> list[list[str]]:
    """runcmd as argument lists; a string command is split as the shell would split its words."""
    out = []
    for cmd in doc.get("runcmd") or []:
        if isinstance(cmd, list):
            out.append([str(c) for c in cmd])
        else:
            try:
                out.append(shlex.split(str(cmd)))
            except ValueError:
                out.append(str(cmd).split())
    return out


def kubeadm_command(doc: dict) -> tuple[str, str | None, list[str]] | None:
    """The first ``kubeadm init|join`` in runcmd: (phase, --config path, all its words) or None."""
    for words in commands(doc):
        for i, word in enumerate(words):
            if word.rsplit("/", 1)[-1] == "kubeadm" and i + 1 < len(words) and words[i + 1] in ("init", "join"):
                args = words[i:]
                # the command ends at a shell operator (`&& echo success > ...`)
                for j, arg in enumerate(args):
                    if arg in ("&&", "||", ";", "|"):
                        args = args[:j]
                        break
                config = None
                for j, arg in enumerate(args):
                    if arg == "--config" and j + 1 < len(args):
                        config = args[j + 1]
                    elif arg.startswith("--config="):
                        config = arg.split("=", 1)[1]
                return args[1], config, args
    return None
