"""Build etcd, kube-apiserver and kube-controller-manager from Go modules, once.

No kube-apiserver binary can be installed from PyPI or Debian, but the Go
module proxy serves k8s.io/kubernetes and go.etcd.io/etcd/server/v3.  This
folder is a small Go module of ours with three two-line mains; this script
keeps its go.mod in step with the pinned versions and builds the binaries into
``<cache>/kube/<k8s version>-<etcd version>/``.  When they are there it does
nothing (it does not even need ``go``).

Changing the Kubernetes release is one edit: ``K8S_VERSION`` (and
``ETCD_VERSION`` to the etcd that release pins).  k8s.io/kubernetes requires
each of its staging modules at ``v0.0.0`` and maps them to local folders with
``replace``, which Go ignores in a dependency; so the tools module replaces
every one of them with the published ``v0.<minor>.<patch>``, read from that
release's own go.mod.

    python -m lab.kube_build.build [--force]
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

K8S_VERSION = "v1.34.4"
# The etcd k8s.io/kubernetes v1.34.4 requires (go.etcd.io/etcd/server/v3 in its go.mod).
ETCD_VERSION = "v3.6.4"

HERE = Path(__file__).resolve().parent
MODULE = "baremetal.capi/labtools/kube"
BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager")
STAMP = "build.json"


class BuildError(RuntimeError):
    pass


def staging_version(k8s_version: str = K8S_VERSION) -> str:
    """k8s.io/kubernetes v1.N.P publishes its staging modules as v0.N.P."""
    m = re.fullmatch(r"v1\.(\d+)\.(\d+)", k8s_version)
    if not m:
        raise BuildError(f"K8S_VERSION must look like v1.N.P, got {k8s_version!r}")
    return f"v0.{m.group(1)}.{m.group(2)}"


def cache_dir(cfg) -> Path:
    return Path(cfg.cache) / "kube" / f"{K8S_VERSION}-{ETCD_VERSION}"


def cached(cfg) -> Path | None:
    """The folder holding all three binaries, or None."""
    out = cache_dir(cfg)
    if (out / STAMP).is_file() and all(os.access(out / b, os.X_OK) for b in BINARIES):
        return out
    return None


def stats(cfg) -> dict:
    """What the build that filled the cache recorded (time, peak memory, Go version)."""
    try:
        return json.loads((cache_dir(cfg) / STAMP).read_text())
    except (OSError, ValueError):
        return {}


@contextmanager
def _lock(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _go_env() -> dict:
    env = dict(os.environ)
    # Static binaries, no C toolchain needed; -buildvcs=false because the
    # module sits inside the collection's git tree.
    env["CGO_ENABLED"] = "0"
    env["GOFLAGS"] = (env.get("GOFLAGS", "") + " -buildvcs=false").strip()
    return env


def _go_binary() -> str:
    # The machine's Go lives in /usr/local/go/bin, which a non-login shell (CI) may not have on PATH.
    go = shutil.which("go") or shutil.which("go", path="/usr/local/go/bin:/usr/lib/go/bin")
    if go is None:
        raise BuildError(
            "the Go toolchain ('go') is not on PATH; it is needed once, to build the lab's Kubernetes binaries"
        )
    return go


def _go(*args: str, capture: bool = False, cwd: Path = HERE) -> str:
    proc = subprocess.run(
        [_go_binary(), *args],
        check=False,
        cwd=cwd,
        env=_go_env(),
        text=True,
        stdout=subprocess.PIPE if capture else None,
        stderr=None,
    )
    if proc.returncode != 0:
        raise BuildError(f"go {' '.join(args)} failed with exit code {proc.returncode}")
    return proc.stdout or ""


# A first build on a quiet 2-core machine (docs/lab.md "Building the binaries"): what the user is told to expect
# when no earlier build on this machine recorded its own time.
EXPECTED_FIRST_BUILD = "about 6 minutes on a quiet 2-core machine, several times that under load"


def _clock(seconds: float) -> str:
    return f"{int(seconds) // 60}m{int(seconds) % 60:02d}s"


def to_build(package: str, cwd: Path = HERE) -> list[str]:
    """The import paths ``go build package`` compiles: every dependency not up to date in Go's build cache."""
    out = _go("list", "-deps", "-f", "{{if .Stale}}{{.ImportPath}}{{end}}", package, capture=True, cwd=cwd)
    return [line for line in out.splitlines() if line.strip()]


def compile_with_progress(
    args: list[str], total: int, what: str, expected: str, log, every: float = 20.0, cwd: Path = HERE
) -> None:
    """``go build -v args``, one progress line every ``every`` seconds: packages compiled of ``total``, time so
    far and what to expect. ``go build -v`` names each package on stderr as it compiles it; anything else it says
    (compile errors) is kept and named in the BuildError."""
    cmd = [_go_binary(), "build", "-v", *args]
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=cwd, env=_go_env(), text=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    done, other, last = 0, [], t0
    for line in proc.stderr:
        line = line.rstrip("\n")
        if re.fullmatch(r"[\w.\-~/]+", line):
            done += 1
        else:
            other.append(line)
        now = time.monotonic()
        if now - last >= every:
            last = now
            log(f"kube build: {what}: compiled {min(done, total)} of {total} packages, {_clock(now - t0)} so far "
                f"(expected: {expected})")  # fmt: skip
    rc = proc.wait()
    if rc != 0:
        tail = "\n".join(other[-15:])
        raise BuildError(
            f"step 'compile {what}' (go build) failed with exit code {rc} after "
            f"{_clock(time.monotonic() - t0)}:\n{tail}"
        )
    log(f"kube build: {what}: compiled {done} packages and linked in {_clock(time.monotonic() - t0)}")


def upstream_gomod(k8s_version: str = K8S_VERSION) -> str:
    """The text of k8s.io/kubernetes's own go.mod at ``k8s_version``."""
    info = json.loads(_go("mod", "download", "-json", f"k8s.io/kubernetes@{k8s_version}", capture=True))
    if info.get("Error"):
        raise BuildError(f"k8s.io/kubernetes@{k8s_version}: {info['Error']}")
    return Path(info["GoMod"]).read_text()


def staging_modules(gomod: str) -> list[str]:
    """Every k8s.io module k8s.io/kubernetes requires at v0.0.0 (its staging folders)."""
    return sorted(set(re.findall(r"^\s*(k8s\.io/[\w.-]+) v0\.0\.0(?:\s|$)", gomod, flags=re.MULTILINE)))


def go_directive(gomod: str) -> str:
    m = re.search(r"^go (\S+)", gomod, flags=re.MULTILINE)
    if not m:
        raise BuildError("k8s.io/kubernetes go.mod has no go directive")
    return m.group(1)


def render_gomod(gomod: str) -> str:
    """Our go.mod before ``go mod tidy``: the pins and one replace line per staging module."""
    staging = staging_version()
    replaces = "".join(f"\t{mod} => {mod} {staging}\n" for mod in staging_modules(gomod))
    return (
        "// Generated by build.py from k8s.io/kubernetes's go.mod; change K8S_VERSION / ETCD_VERSION there.\n"
        f"module {MODULE}\n\n"
        f"go {go_directive(gomod)}\n\n"
        "require (\n"
        f"\tgo.etcd.io/etcd/server/v3 {ETCD_VERSION}\n"
        f"\tk8s.io/component-base {staging}\n"
        f"\tk8s.io/kubernetes {K8S_VERSION}\n"
        ")\n\n"
        f"replace (\n{replaces})\n"
    )


def _replace_block(text: str) -> list[str]:
    m = re.search(r"^replace \(\n(.*?)^\)", text, flags=re.MULTILINE | re.DOTALL)
    return sorted(line.strip() for line in m.group(1).splitlines() if line.strip()) if m else []


def _in_step(current: str, wanted: str) -> bool:
    """True when the committed go.mod already pins what ``wanted`` pins."""
    for pin in (
        f"go.etcd.io/etcd/server/v3 {ETCD_VERSION}",
        f"k8s.io/kubernetes {K8S_VERSION}",
    ):
        if not re.search(rf"^\s*{re.escape(pin)}\s*$", current, flags=re.MULTILINE):
            return False
    return _replace_block(current) == _replace_block(wanted)


def sync_module() -> bool:
    """Rewrite and tidy go.mod when the pinned versions changed.  True if it did."""
    gomod_path = HERE / "go.mod"
    current = gomod_path.read_text() if gomod_path.exists() else ""
    wanted = render_gomod(upstream_gomod())
    if _in_step(current, wanted):
        return False
    gomod_path.write_text(wanted)
    _go("mod", "tidy")
    return True


def _ldflags() -> str:
    # What hack/lib/version.sh stamps, so /version reports the release and not v0.0.0-master.
    major, minor = K8S_VERSION[1:].split(".")[:2]
    values = {
        "gitVersion": K8S_VERSION,
        "gitMajor": major,
        "gitMinor": minor,
        "gitTreeState": "clean",
    }
    flags = ["-s", "-w"]
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [f"-X {pkg}.{key}={val}" for key, val in values.items()]
    return " ".join(flags)


def _download(log, attempts: int = 4) -> None:
    """Fetch every module go.mod lists, retrying: the first build downloads a few hundred
    modules from the proxy, and one TLS handshake timeout must not cost the whole build."""
    for attempt in range(1, attempts + 1):
        try:
            _go("mod", "download")
            return
        except BuildError as exc:
            if attempt == attempts:
                raise BuildError(f"step 'download the Go modules' failed {attempts} times: {exc}") from exc
            log(f"go mod download failed (attempt {attempt} of {attempts}); retrying in {5 * attempt}s")
            time.sleep(5 * attempt)


def _modcache_mib() -> float:
    root = _go("env", "GOMODCACHE", capture=True).strip()
    total = 0
    for dirpath, _dirs, files in os.walk(os.path.join(root, "cache", "download")):
        total += sum(os.path.getsize(os.path.join(dirpath, f)) for f in files if f.endswith(".zip"))
    return total / 2**20


def _go_build(
    out: Path, lock: str, done, what: str, output: str, package: str, record, log, expected: str
) -> dict | None:
    """``go build`` of ``package`` into the folder ``out``, once: under the lock ``lock`` and only while
    ``done()`` is false (another process may have built it while this one waited for the lock); into a
    temporary folder that replaces ``out`` whole, with the STAMP ``record(seconds)`` gives (returned; None
    when ``done()``). Each step is announced through ``log`` and the compile reports its progress."""
    with _lock(out.parent / lock):
        if done():
            return None
        log(f"kube build: building {what} into {out}, once (expected: {expected})")
        t0 = time.monotonic()
        if sync_module():
            log("go.mod regenerated for the new versions; commit lab/kube_build/go.mod and go.sum")
        before = _modcache_mib()
        log("kube build: step 1 of 2, downloading the Go modules it needs from the module proxy ...")
        _download(log)
        after = _modcache_mib()
        log(
            f"kube build: modules ready in {_clock(time.monotonic() - t0)} "
            f"({after - before:.0f} MiB downloaded, {after:.0f} MiB in the module cache)"
        )
        try:
            packages = to_build(package)
        except BuildError as exc:
            raise BuildError(f"step 'list the packages to compile' failed: {exc}") from exc
        log(f"kube build: step 2 of 2, compiling {len(packages)} packages and linking ...")
        tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        try:
            target = str(tmp / output) if output else str(tmp) + "/"
            compile_with_progress(["-ldflags", _ldflags(), "-o", target, package], len(packages), what, expected, log)
        except BuildError:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        stamp = record(round(time.monotonic() - t0, 1))
        (tmp / STAMP).write_text(json.dumps(stamp, indent=1) + "\n")
        shutil.rmtree(out, ignore_errors=True)
        os.replace(tmp, out)
    return stamp


def _expected(cfg) -> str:
    """What the user is told to expect: the last build this machine recorded, else the documented figure."""
    for stamp_path in sorted(Path(cfg.cache, "kube").glob(f"*/{STAMP}")):
        try:
            stamp = json.loads(stamp_path.read_text())
        except (OSError, ValueError):
            continue
        if stamp.get("etcd") and "seconds" in stamp:  # the three binaries' build, not kubeadm's
            return f"about {_clock(stamp['seconds'])}, as the last build on this machine took"
    return EXPECTED_FIRST_BUILD


def build(cfg, force: bool = False, log=print) -> Path:
    """The folder with etcd, kube-apiserver and kube-controller-manager, built if missing."""
    out = cache_dir(cfg)
    if not force and cached(cfg):
        return out

    def record(seconds: float) -> dict:
        # ru_maxrss of RUSAGE_CHILDREN: the largest waited-for descendant (a compile or the link), in KiB.
        peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        stamp = {
            "kubernetes": K8S_VERSION,
            "etcd": ETCD_VERSION,
            "go": _go("env", "GOVERSION", capture=True).strip(),
            "seconds": seconds,
            "peak_rss_mib": round(peak_kib / 1024),
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        return stamp

    what = f"kube-apiserver {K8S_VERSION}, kube-controller-manager, etcd {ETCD_VERSION}"
    stamp = _go_build(
        out, ".build.lock", lambda: not force and cached(cfg), what, "", "./cmd/...", record, log, _expected(cfg)
    )
    if stamp:
        log(f"built in {stamp['seconds']}s, peak RSS {stamp['peak_rss_mib']} MiB")
    return out


KUBEADM = "kubeadm"


def kubeadm_dir(cfg) -> Path:
    return Path(cfg.cache) / "kube" / f"kubeadm-{K8S_VERSION}"


def kubeadm_cached(cfg) -> Path | None:
    """The kubeadm binary built from the same k8s.io/kubernetes release, or None."""
    path = kubeadm_dir(cfg) / KUBEADM
    return path if (kubeadm_dir(cfg) / STAMP).is_file() and os.access(path, os.X_OK) else None


def build_kubeadm(cfg, force: bool = False, log=print) -> Path:
    """kubeadm (tools/kubeadm, the same module and pins as the lab's kube-apiserver), built once.

    Kept beside, not inside, the lab binaries' folder so that adding it never rebuilds or replaces
    the binaries running labs use.  The tests check every kubeadm configuration the collection
    renders with its ``kubeadm config validate``.
    """
    out = kubeadm_dir(cfg)
    if not force and kubeadm_cached(cfg):
        return out / KUBEADM

    def record(seconds: float) -> dict:
        return {"kubernetes": K8S_VERSION, "seconds": seconds}

    done = lambda: not force and kubeadm_cached(cfg)  # noqa: E731
    what = f"kubeadm {K8S_VERSION}"
    stamp = _go_build(out, ".kubeadm.lock", done, what, KUBEADM, "./tools/kubeadm", record, log, "a few minutes")
    if stamp:
        log(f"built kubeadm in {stamp['seconds']}s")
    return out / KUBEADM


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.kube_build.build", description=__doc__.split("\n\n")[0])
    parser.add_argument("--force", action="store_true", help="rebuild even when cached")
    parser.add_argument(
        "--print-gomod",
        action="store_true",
        help="print the generated go.mod (before tidy) and exit",
    )
    parser.add_argument("--kubeadm", action="store_true", help="build kubeadm too (the bootstrap tests need it)")
    args = parser.parse_args(argv)
    if args.print_gomod:
        print(render_gomod(upstream_gomod()), end="")
        return 0
    sys.path.insert(0, str(HERE.parent.parent))
    from lab import config

    cfg = config.load()
    try:
        out = build(cfg, force=args.force)
        if args.kubeadm:
            build_kubeadm(cfg, force=args.force)
    except BuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps({"dir": str(out), **stats(cfg)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
