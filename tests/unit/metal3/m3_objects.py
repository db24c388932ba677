"""The objects the data flow reads (Machine, Metal3Machine, BareMetalHost), made through the store."""

from __future__ import annotations

import copy
from pathlib import Path

import yaml

from ansible_collections.baremetal.capi.plugins.module_utils.model import meta

# Objects as CAPM3 renders them (baremetal/metal3data_manager.go renderNetworkData, renderMetaData).
EXAMPLES = Path(__file__).resolve().parent / "examples"

NICS = [{"name": "enp1s0", "mac": "52:54:00:aa:bb:01"}, {"name": "enp2s0", "mac": "52:54:00:aa:bb:02"}]


def machine_set(
    store,
    ns="metal3",
    m3m="test1-workers-7xk2p",
    machine="test1-workers-6d8f9c7b5-abcde",
    bmh="node-1",
    template="nodepool-1",
    cluster="test1",
    nics=None,
    bmh_labels=None,
    bmh_annotations=None,
    machine_annotations=None,
    m3m_annotations=None,
    boot_mac="52:54:00:aa:bb:01",
    m3m_labels=None,
    machine_labels=None,
):
    """Create Machine -> Metal3Machine (owned, annotated with its host) and the BareMetalHost with NICs."""
    mach = store.create(
        meta.new(
            "Machine",
            machine,
            ns,
            spec={"clusterName": cluster},
            annotations=machine_annotations,
            labels=machine_labels,
        )
    )
    host = meta.new(
        "BareMetalHost",
        bmh,
        ns,
        spec={"bootMACAddress": boot_mac} if boot_mac else {},
        labels=bmh_labels,
        annotations=bmh_annotations,
    )
    host = store.create(host)
    host["status"] = {"hardware": {"nics": copy.deepcopy(NICS if nics is None else nics)}}
    store.update_status(host)
    annotations = {"metal3.io/BareMetalHost": f"{ns}/{bmh}"}
    annotations.update(m3m_annotations or {})
    obj = meta.new(
        "Metal3Machine", m3m, ns, spec={"dataTemplate": {"name": template}}, annotations=annotations, labels=m3m_labels
    )
    obj["metadata"]["ownerReferences"] = [meta.owner_reference(mach, controller=True)]
    return store.create(obj)


def example_docs():
    return list(yaml.safe_load_all((EXAMPLES / "metal3datatemplate.example.yaml").read_text()))


def example_json(name):
    import json

    return json.loads((EXAMPLES / name).read_text())
