"""Label sync, host -> Node (CAPM3 baremetal/metal3labelsync_manager.go): the pure rule, and one sync against the
lab's kube-apiserver."""

from __future__ import annotations

import pytest

from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.metal3 import labelsync

P = {"a.example.com", "b.example.com"}


@pytest.mark.parametrize(
    "host, node, patch",
    [
        ({"a.example.com/x": "1"}, {}, {"a.example.com/x": "1"}),
        ({"a.example.com/x": "2"}, {"a.example.com/x": "1"}, {"a.example.com/x": "2"}),
        ({}, {"a.example.com/x": "1", "b.example.com/y": "2"}, {"a.example.com/x": None, "b.example.com/y": None}),
        ({"plain": "1", "c.example.com/z": "3"}, {"other": "x", "c.example.com/z": "4"}, {}),
        ({"a.example.com/x": "1"}, {"a.example.com/x": "1", "kubernetes.io/hostname": "h"}, {}),
    ],
)
def test_desired(host, node, patch):
    assert labelsync.desired(host, node, P) == patch


@pytest.mark.parametrize(
    "value, want",
    [
        ("a.example.com, b.example.com", {"a.example.com", "b.example.com"}),
        (" a.example.com ,, ", {"a.example.com"}),
        ("", set()),
        ("Bad_Prefix", None),
        ("a.example.com,-x", None),
    ],
)
def test_prefixes(value, want):
    m3c = {
        "kind": "Metal3Cluster",
        "metadata": {"name": "c", "namespace": "d", "annotations": {"metal3.io/metal3-label-sync-prefixes": value}},
    }
    if want is None:
        with pytest.raises(Invalid) as exc:
            labelsync.prefixes(m3c)
        assert "metal3-label-sync-prefixes" in exc.value.field
    else:
        assert labelsync.prefixes(m3c) == want
