"""lab/kube_build/build.py's one build routine (_go_build) for the lab binaries and kubeadm, without Go, and its
progress reporting with the real Go on a module of two packages made in the test.

In the first tests `go` is replaced by a recorder that writes the binaries where `-o` says, so what is checked is
the routine's own work: the package and output asked for, the stamp, the swap into the cache folder, no second
build once cached, each step announced, and a failed build leaving nothing behind.
"""

from __future__ import annotations

import json
import os
import subprocess
import types

import pytest

from lab.kube_build import build as kb


@pytest.fixture
def go(monkeypatch):
    calls = []

    def fake_go(*args, capture=False, cwd=None):
        calls.append(args)
        if args[:2] == ("env", "GOVERSION"):
            return "go1.24.0\n"
        if args[0] == "build":
            if fake_go.fail:
                raise kb.BuildError("step 'compile' failed: compile error")
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
    monkeypatch.setattr(kb, "to_build", lambda package: ["a", "b", "c"])
    monkeypatch.setattr(kb, "_modcache_mib", lambda: 0.0)
    monkeypatch.setattr(kb, "compile_with_progress", lambda args, total, what, expected, log: fake_go("build", *args))
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
    assert lines[0].startswith("kube build: building kube-apiserver") and lines[-1].startswith("built in ")
    assert "expected: about 6 minutes" in lines[0]  # no earlier build on this machine: the documented figure
    assert any("step 1 of 2, downloading" in line for line in lines)
    assert any("step 2 of 2, compiling 3 packages" in line for line in lines)
    assert not [p for p in out.parent.iterdir() if ".tmp-" in p.name]
    kb.build(cfg, log=lines.append)
    assert len(builds(go)) == 1  # cached: not built again
    lines.clear()
    kb.build(cfg, force=True, log=lines.append)
    assert len(builds(go)) == 2
    assert "as the last build on this machine took" in lines[0]  # the recorded time, once there is one


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


def _module(tmp_path, broken: bool = False):
    """A Go module of two packages (main imports lib) in tmp_path/mod."""
    mod = tmp_path / "mod"
    (mod / "lib").mkdir(parents=True)
    (mod / "go.mod").write_text("module example.test/mod\n\ngo 1.22\n")
    (mod / "lib" / "lib.go").write_text("package lib\n\nfunc Answer() int { return 42 }\n")
    body = "lib.Answer( +" if broken else "lib.Answer()"
    (mod / "main.go").write_text(
        f'package main\n\nimport (\n\t"os"\n\n\t"example.test/mod/lib"\n)\n\nfunc main() {{ os.Exit({body} - 42) }}\n'
    )
    return mod


@pytest.fixture(scope="module")
def go_cache(tmp_path_factory):
    """A Go build cache of these tests' own, shared by them (the standard library is compiled into it once)."""
    return tmp_path_factory.mktemp("gocache")


@pytest.fixture
def go_env(monkeypatch, go_cache):
    # no package of the test's module is in that cache (its path is new to it), so each is compiled and counted;
    # no toolchain download
    monkeypatch.setenv("GOCACHE", str(go_cache))
    monkeypatch.setenv("GOTOOLCHAIN", "local")
    monkeypatch.setenv("GOFLAGS", "-mod=mod")


def test_the_compile_reports_packages_done_of_the_total_and_the_time(go_env, tmp_path):
    mod = _module(tmp_path)
    packages = kb.to_build(".", cwd=mod)
    assert "example.test/mod/lib" in packages and "example.test/mod" in packages
    lines = []
    out = tmp_path / "bin" / "hello"
    kb.compile_with_progress(["-o", str(out), "."], len(packages), "hello", "soon", lines.append, every=0, cwd=mod)
    progress = [line for line in lines if " of " in line]
    assert progress and progress[-1].startswith(f"kube build: hello: compiled {len(packages)} of {len(packages)}")
    assert "so far (expected: soon)" in progress[-1]
    assert lines[-1].startswith(f"kube build: hello: compiled {len(packages)} packages and linked in ")
    assert subprocess.run([str(out)], check=False).returncode == 0


def test_a_compile_error_names_the_step_and_the_error(go_env, tmp_path):
    mod = _module(tmp_path, broken=True)
    with pytest.raises(kb.BuildError) as failed:
        kb.compile_with_progress(["-o", str(tmp_path / "x"), "."], 2, "hello", "soon", lambda line: None, cwd=mod)
    message = str(failed.value)
    assert message.startswith("step 'compile hello' (go build) failed with exit code 1")
    assert "main.go" in message  # the compiler's own words, not only the exit code
