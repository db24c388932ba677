"""lab/kube_build/build.py's one build routine (_go_build) for the lab binaries and kubeadm, without Go.

`go` is replaced by a recorder that writes the binaries where `-o` says, so what is checked is the routine's own
work: the package and output asked for, the stamp, the swap into the cache folder, no second build once cached,
and a failed build leaving nothing behind.
"""

from __future__ import annotations

import json
import os
import types

import pytest

from lab.kube_build import build as kb


@pytest.fixture
def go(monkeypatch):
    calls = []

    def fake_go(*args, capture=False):
        calls.append(args)
        if args[:2] == ("env", "GOVERSION"):
            return "go1.24.0\n"
        if args[0] == "build":
            if fake_go.fail:
                raise kb.BuildError("compile error")
            target, package = args[-2], args[-1]
            names = kb.BINARIES if package == "./cmd/..." else (os.path.basename(target),)
            folder = target if target.endswith("/") else os.path.dirname(target)
            for name in names:
                path = os.path.join(folder, name)
                with open(path, "w") as fh:
                    fh.write("#!/bin/sh\n")
                os.chmod(path, 0o755)
        return ""

    fake_go.fail = False
    fake_go.calls = calls
    monkeypatch.setattr(kb, "_go", fake_go)
    monkeypatch.setattr(kb, "sync_module", lambda: False)
    monkeypatch.setattr(kb, "_download", lambda log: None)
    monkeypatch.setattr(kb, "_ldflags", lambda: "-s")
    return fake_go


def builds(go):
    return [c for c in go.calls if c[0] == "build"]


def test_the_lab_binaries_are_built_once_stamped_and_swapped_in(go, tmp_path):
    cfg = types.SimpleNamespace(cache=str(tmp_path))
    lines = []
    out = kb.build(cfg, log=lines.append)
    assert out == kb.cache_dir(cfg) and kb.cached(cfg) == out
    (call,) = builds(go)
    assert call[-1] == "./cmd/..." and call[-2].endswith("/")
    stamp = json.loads((out / kb.STAMP).read_text())
    assert stamp["kubernetes"] == kb.K8S_VERSION and stamp["etcd"] == kb.ETCD_VERSION and stamp["go"] == "go1.24.0"
    assert lines[0].startswith("building kube-apiserver") and lines[-1].startswith("built in ")
    assert not [p for p in out.parent.iterdir() if ".tmp-" in p.name]
    kb.build(cfg, log=lines.append)
    assert len(builds(go)) == 1  # cached: not built again
    kb.build(cfg, force=True, log=lines.append)
    assert len(builds(go)) == 2


def test_kubeadm_goes_through_the_same_routine(go, tmp_path):
    cfg = types.SimpleNamespace(cache=str(tmp_path))
    lines = []
    path = kb.build_kubeadm(cfg, log=lines.append)
    assert path == kb.kubeadm_dir(cfg) / kb.KUBEADM and kb.kubeadm_cached(cfg) == path
    (call,) = builds(go)
    assert call[-1] == "./tools/kubeadm" and call[-2].endswith("/" + kb.KUBEADM)
    assert json.loads((path.parent / kb.STAMP).read_text())["kubernetes"] == kb.K8S_VERSION
    assert lines[-1].startswith("built kubeadm in ")
    kb.build_kubeadm(cfg, log=lines.append)
    assert len(builds(go)) == 1


def test_a_failed_build_leaves_no_cache_and_no_temporary_folder(go, tmp_path):
    cfg = types.SimpleNamespace(cache=str(tmp_path))
    go.fail = True
    with pytest.raises(kb.BuildError):
        kb.build(cfg, log=lambda line: None)
    assert kb.cached(cfg) is None
    assert not [p for p in kb.cache_dir(cfg).parent.iterdir() if ".tmp-" in p.name]
