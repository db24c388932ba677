"""Cloud-config documents in the shape CABPK writes them (bootstrap/kubeadm/pkg/cloudinit)."""

from __future__ import annotations

try:
    import yaml
except ImportError:  # PyYAML comes with ansible-core; the modules report it missing otherwise
    yaml = None

from ansible_collections.baremetal.capi.plugins.module_utils import yamltext

HEADER = "## template: jinja\n#cloud-config\n\n"
PLACEHOLDER = (
    "This placeholder file is used to create the /run/cluster-api sub directory in a way that is "
    "compatible with both Linux and Windows (mkdir -p /run/cluster-api does not work with Windows)"
)
SENTINEL = "echo success > /run/cluster-api/bootstrap-success.complete"


def _dumper():
    """A SafeDumper writing multi-line strings as literal blocks, as cloud-config files are usually read,
    and quoting every string a YAML 1.1 or 1.2 reader would read as something else."""
    return yamltext.dumper(literal_blocks=True)


def write_file(path: str, content: str, permissions: str = "0640", owner: str = "root:root", encoding=None) -> dict:
    entry = {"path": path, "owner": owner, "permissions": permissions, "content": content}
    if encoding:
        entry["encoding"] = encoding
    return entry


def _user(u: dict) -> dict:
    """A CAPI bootstrap user to cloud-init's user shape."""
    names = {
        "homeDir": "homedir",
        "primaryGroup": "primary_group",
        "lockPassword": "lock_passwd",
        "sshAuthorizedKeys": "ssh_authorized_keys",
        "passwdFrom": None,
    }
    out = {}
    for key, value in u.items():
        target = names.get(key, key)
        if target:
            out[target] = value
    return out


def document(
    files: list[dict],
    runcmd: list[str],
    *,
    bootcmd: list[str] | None = None,
    users: list[dict] | None = None,
    ntp: dict | None = None,
    disk_setup: dict | None = None,
    fs_setup: list | None = None,
    mounts: list | None = None,
) -> str:
    doc: dict = {"write_files": files + [write_file("/run/cluster-api/placeholder", PLACEHOLDER)]}
    if bootcmd:
        doc["bootcmd"] = list(bootcmd)
    doc["runcmd"] = list(runcmd)
    if ntp:
        doc["ntp"] = {k: v for k, v in ntp.items() if v is not None}
    if users:
        doc["users"] = [_user(u) for u in users]
    if disk_setup:
        doc["disk_setup"] = disk_setup
    if fs_setup:
        doc["fs_setup"] = fs_setup
    if mounts:
        doc["mounts"] = mounts
    return HEADER + yaml.dump(doc, Dumper=_dumper(), sort_keys=False, default_flow_style=False, width=10000)


def kubeadm_yaml(*documents: dict, leading_separator: bool = True) -> str:
    """Kubeadm config documents, keys sorted as the Kubernetes serializer writes them."""
    parts = [yaml.dump(d, Dumper=_dumper(), sort_keys=True, default_flow_style=False, width=10000) for d in documents]
    text = "---\n".join(parts)
    return ("---\n" + text) if leading_separator else text
