# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The description's Metal3DataTemplate against what it will render for (capi/validate.py runs these).

Rules the template webhook cannot make because they need the rest of the description: the KubeadmConfigs it
makes take the kubelet's provider-id from the rendered metaData, and the interfaces networkData names must be
ones the hosts have, when their inventory is known.
"""

from __future__ import annotations

from ansible_collections.baremetal.capi.plugins.module_utils.capi import description, validate_stored
from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta

_stored = validate_stored.stored  # the stored object, or None


def _where(template: dict) -> str:
    return f"{meta.ref(template)} ({description.WHERE}.data_template)"


def provider_id_rendered(desc: dict, template: dict) -> None:
    """The KubeadmConfigs the description makes give the kubelet ``provider-id: metal3://{{
    ds.meta_data.providerid }}``; CAPM3 renders ``providerid`` only for a template with metaData
    (baremetal/metal3data_manager.go, renderMetaData returns nothing when spec.metaData is nil), so without it
    every Node would come up with an unrendered providerID and the run wait for nothing."""
    if (template.get("spec") or {}).get("metaData") is not None:
        return
    given = [(desc.get("kubeadm") or {}).get("kubelet_extra_args") or {}]
    given += [
        (p or {}).get("kubelet_extra_args") or {} for p in [desc.get("control_plane"), *(desc.get("workers") or [])]
    ]
    if all("provider-id" in args for args in given):
        return  # the user sets the kubelet's provider-id everywhere: the template's metaData is not needed
    raise Invalid(
        "metaData is required: the kubelet's provider-id is metal3://{{ ds.meta_data.providerid }}, which CAPM3 "
        "renders only for a template with metaData (give metaData: {} for providerid alone)",
        obj=_where(template),
        field="spec.metaData",
    )


def _interface_refs(node, path: str):
    """(field, interface name) of every ``fromHostInterface`` under a networkData node."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "fromHostInterface" and isinstance(value, str):
                yield f"{path}.{key}", value
            else:
                yield from _interface_refs(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _interface_refs(value, f"{path}[{i}]")


def _known_nics(host: dict, ns: str, store):
    """A host's NICs as far as they are known before inspection: given (``hardware``), else what the store has
    (the BareMetalHost's status.hardware, its HardwareData); None when unknown."""
    nics = (host.get("hardware") or {}).get("nics")
    if isinstance(nics, list) and nics:
        return nics
    name = host.get("name")
    stored = _stored(store, "BareMetalHost", name, ns)
    nics = (((stored or {}).get("status") or {}).get("hardware") or {}).get("nics")
    if not nics:
        nics = (((_stored(store, "HardwareData", name, ns) or {}).get("spec") or {}).get("hardware") or {}).get("nics")
    return nics if isinstance(nics, list) and nics else None


def host_interfaces(desc: dict, template: dict, ns: str, store) -> None:
    """An interface the template takes a MAC from must be one a host has: checked only when every host of the
    description has a known inventory (given, or stored from an inspection); a host known only to Ironic may
    have any interface name."""
    hosts = desc.get("hosts") or []
    nics = [_known_nics(h, ns, store) for h in hosts]
    if not hosts or any(n is None for n in nics):
        return
    known = {nic.get("name") for host_nics in nics for nic in host_nics if isinstance(nic, dict)}
    spec = template.get("spec") or {}
    refs = list(_interface_refs(spec.get("networkData"), "spec.networkData"))
    for i, entry in enumerate((spec.get("metaData") or {}).get("fromHostInterfaces") or []):
        if isinstance(entry, dict) and entry.get("interface") and not entry.get("fromBootMAC"):
            refs.append((f"spec.metaData.fromHostInterfaces[{i}].interface", entry["interface"]))
    for field, name in refs:
        if name not in known:
            raise Invalid(
                f"no host of the description has an interface {name!r} (their hardware.nics: "
                f"{', '.join(sorted(str(k) for k in known))})",
                obj=_where(template),
                field=field,
            )
