#!/usr/bin/env python3
"""ansible-test sanity and ansible-lint for the collection, without Docker.

    python tests/run_sanity.py            # both
    python tests/run_sanity.py --sanity   # ansible-test sanity only (extra args go to ansible-test)
    python tests/run_sanity.py --lint     # ansible-lint --profile production only
    python tests/run_sanity.py --docs     # ansible-doc of every plugin and role, antsibull-docs lint

ansible-test needs the collection at ``.../ansible_collections/baremetal/capi``.
The test run links the work tree there (tests/conftest.py), but ansible-test on
that link would see the whole git tree (lab/, build/ with the link inside it,
.venv) as collection content.  So sanity runs on a copy of exactly what the
galaxy artifact ships: the tracked and untracked-but-not-ignored files minus
galaxy.yml's build_ignore, synced into a folder outside the work tree (under
~/.cache/baremetal-capi/sanity/): ansible-test walks up from the collection to
the nearest .git and lists files with git, so a copy inside this repo's
ignored build/ would look empty to it.

ansible-test bootstraps pip in its venvs with a script it downloads from a host
these machines cannot reach; it uses a cached copy first, so a stand-in that
runs ensurepip and then pip (through the system's pip configuration) is
written there when missing.

What ansible-test sanity demands of this collection (each seen failing here):

* module DOCUMENTATION is valid YAML, and matches argument_spec (types, defaults,
  choices, required, elements); shared options come from doc fragments
  (``baremetal.capi.store``, ``baremetal.capi.maas``, ``baremetal.capi.attributes``
  / ``.info_module``);
* ``author:`` lines read ``Name (@github-handle)`` or ``Name (!UNKNOWN)``;
* RV()/O() markup names return values / options that exist (``RV(ignore:changed)``);
* no variable named ``_`` anywhere (ansible-test's pylint disallows it): use
  ``_unused``-style names;
* third-party imports (yaml, kubernetes, openstack, maas, jinja2) in module_utils
  and modules are guarded (``try: import yaml / except ImportError``): the import
  test runs with ansible-core and the standard library only;
* YAML files hold one document each (yamllint's multiple-yaml-documents);
* modules import after DOCUMENTATION/EXAMPLES/RETURN; every module is in
  meta/runtime.yml's action_groups and carries the two license lines (Apache-2.0,
  and that it is compatible with GPLv3, which validate-modules' GPLv3 header check
  reads), so tests/sanity/ignore-*.txt stay empty -
  tests/unit/modules/test_runtime_meta.py checks all of it.

* module_utils packages' ``__init__.py`` are empty (2.16's empty-init), and no function body is ``...`` on
  the ``def`` line (2.16's pep8 E704): Protocol methods carry a docstring instead.

Sanity on some files only: ``python tests/run_sanity.py --sanity plugins/modules/x.py``.
On the oldest and the newest ansible-core (``make core-venvs``), each with its own ansible-test and Python:
``.venv-core/2.16/bin/python tests/run_sanity.py --sanity`` (Python 3.11) and ``.venv-core/2.21/bin/python
tests/run_sanity.py --sanity`` (Python 3.12); both pass with empty tests/sanity/ignore-2.16.txt and
ignore-2.21.txt. The two share the synced copy: run them one after the other.
"""

from __future__ import annotations

import argparse
import filecmp
import fnmatch
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "baremetal-capi" / "sanity"
# One copy per clone, so two clones on one machine do not share one.
DEST = Path(
    os.environ.get("BAREMETAL_CAPI_SANITY_DIR")
    or _CACHE / hashlib.sha1(str(ROOT).encode()).hexdigest()[:10] / "ansible_collections" / "baremetal" / "capi"
)
BIN = Path(sys.executable).parent

# ansible-galaxy's own ignores, besides galaxy.yml's build_ignore.
DEFAULT_IGNORE = ["galaxy.yml", ".git", "*.pyc", "*.retry", "tests/output", "baremetal-capi-*.tar.gz"]
IGNORE_DIRS = {"CVS", ".bzr", ".hg", ".git", ".svn", "__pycache__", ".tox"}

GET_PIP = """\
# Stand-in for https://ci-files.testing.ansible.com/ansible-test/get-pip-<version>.py
# (unreachable here), written by baremetal.capi's tests/run_sanity.py.
import ensurepip, os, subprocess, sys
ensurepip.bootstrap(upgrade=True)
os.environ.pop('PIP_CONFIG_FILE', None)  # ensurepip sets /dev/null; the system pip.conf must be read
args = [a for a in sys.argv[1:] if a not in ('--no-setuptools', '--no-wheel')]
sys.exit(subprocess.call([sys.executable, '-m', 'pip', 'install', '--upgrade'] + args))
"""


def build_ignore() -> list[str]:
    import yaml

    galaxy = yaml.safe_load((ROOT / "galaxy.yml").read_text())
    return DEFAULT_IGNORE + list(galaxy.get("build_ignore") or [])


def shipped_files(tracked_only: bool = False) -> list[str]:
    """The files ``ansible-galaxy collection build`` would pack, as paths relative to the root."""
    listing = ["git", "ls-files", "-z", "--cached"] + ([] if tracked_only else ["--others", "--exclude-standard"])
    try:
        out = subprocess.run(
            listing,
            cwd=ROOT,
            check=True,
            capture_output=True,
        ).stdout.decode()
        candidates = [p for p in out.split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        candidates = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if p.is_file()]
    patterns = build_ignore()
    keep = []
    for rel in sorted(set(candidates)):
        parts = rel.split("/")
        # ansible-galaxy prunes a directory that matches, so test every prefix.
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        if any(part in IGNORE_DIRS for part in parts[:-1]):
            continue
        if any(fnmatch.fnmatch(prefix, pat) for prefix in prefixes for pat in patterns):
            continue
        if (ROOT / rel).is_file():
            keep.append(rel)
    return keep


def sync_copy(tracked_only: bool = False) -> int:
    files = shipped_files(tracked_only)
    wanted = set(files)
    DEST.mkdir(parents=True, exist_ok=True)
    for path in sorted(DEST.rglob("*"), reverse=True):
        rel = path.relative_to(DEST).as_posix()
        if rel == "tests/output" or rel.startswith("tests/output/"):
            continue
        if path.is_file() or path.is_symlink():
            if rel not in wanted:
                path.unlink()
        elif path.is_dir() and not any(path.iterdir()):
            path.rmdir()
    for rel in files:
        src, dst = ROOT / rel, DEST / rel
        if dst.exists() and filecmp.cmp(src, dst, shallow=False):
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)
    return len(files)


def write_get_pip() -> None:
    import ansible_test

    source = Path(ansible_test.__file__).parent / "_internal" / "python_requirements.py"
    versions = set(re.findall(r"pip='([0-9.]+)'", source.read_text())) or {"24.2"}
    cache = Path.home() / ".ansible" / "test" / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    for version in versions:
        path = cache / f"get_pip_{version.replace('.', '_')}.py"
        if not path.exists():
            path.write_text(GET_PIP)
            print(f"wrote the pip bootstrap stand-in {path}")


def env() -> dict:
    out = dict(os.environ)
    out["PATH"] = f"{BIN}{os.pathsep}{out.get('PATH', '')}"
    return out


def sanity(extra: list[str], tracked_only: bool = False) -> int:
    count = sync_copy(tracked_only)
    write_get_pip()
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    cmd = [str(BIN / "ansible-test"), "sanity", "--venv", "--python", python, "--color", "no", *extra]
    print(f"ansible-test sanity on {count} files in {DEST}: {' '.join(cmd)}", flush=True)
    return subprocess.call(cmd, cwd=DEST, env=env())


def lint() -> int:
    cmd = [str(BIN / "ansible-lint"), "--profile", "production"]
    print(" ".join(cmd), flush=True)
    return subprocess.call(cmd, cwd=ROOT, env=env())


PLUGIN_TYPES = ("module", "filter", "inventory", "callback", "role")


def docs() -> int:
    """``ansible-doc`` of every plugin and role of the shipped copy, and antsibull-docs' collection lint.

    A plugin without documentation (``ansible-doc -l`` says UNDOCUMENTED, or its page fails to load) fails,
    as does anything antsibull-docs lint-collection-docs --plugin-docs reports (RST, markup, schema)."""
    count = sync_copy()
    # the copy leaves galaxy.yml out (ansible-test reads the version from it); ansible-doc and antsibull-docs
    # want it
    shutil.copy2(ROOT / "galaxy.yml", DEST / "galaxy.yml")
    try:
        return _docs(count)
    finally:
        (DEST / "galaxy.yml").unlink()


def _docs(count: int) -> int:
    run_env = env()
    run_env["ANSIBLE_COLLECTIONS_PATH"] = str(DEST.parents[2])
    run_env.pop("ANSIBLE_CONFIG", None)
    bad = []
    for kind in PLUGIN_TYPES:
        listed = subprocess.run(
            [str(BIN / "ansible-doc"), "-t", kind, "-l", "--json", "baremetal.capi"],
            cwd=DEST, env=run_env, capture_output=True, text=True,
        )  # fmt: skip
        if listed.returncode != 0:
            bad.append(f"ansible-doc -t {kind} -l baremetal.capi: {listed.stderr.strip()}")
            continue
        names = sorted(json.loads(listed.stdout or "{}"))
        # one ansible-doc for all of a type's pages (a process each costs seconds on a busy machine)
        shown = subprocess.run(
            [str(BIN / "ansible-doc"), "-t", kind, "--json", *names], cwd=DEST, env=run_env,
            capture_output=True, text=True,
        )  # fmt: skip
        pages = json.loads(shown.stdout or "{}") if shown.returncode == 0 else {}
        for name in names:
            page = pages.get(name) or {}
            if not (page.get("entry_points") if kind == "role" else page.get("doc")):
                bad.append(f"ansible-doc -t {kind} {name}: no documentation {shown.stderr.strip()}")
        print(f"ansible-doc -t {kind}: {len(names)} in baremetal.capi", flush=True)
    for line in bad:
        print(line, flush=True)
    cmd = [str(BIN / "antsibull-docs"), "lint-collection-docs", "--plugin-docs", "--validate-collection-refs", "self"]
    print(f"{' '.join(cmd)} on {count} files in {DEST}", flush=True)
    rc = subprocess.call([*cmd, str(DEST)], cwd=DEST, env=run_env)
    print(f"antsibull-docs lint-collection-docs: rc={rc}", flush=True)
    return 1 if bad or rc else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sanity", action="store_true", help="ansible-test sanity only")
    parser.add_argument("--lint", action="store_true", help="ansible-lint only")
    parser.add_argument("--docs", action="store_true", help="ansible-doc of every plugin, antsibull-docs lint")
    parser.add_argument(
        "--tracked-only", action="store_true", help="sanity on committed/staged files only, not untracked ones"
    )
    args, extra = parser.parse_known_args()
    both = not (args.sanity or args.lint or args.docs)
    rc = 0
    if args.sanity or both:
        rc |= sanity(extra, args.tracked_only)
    if args.lint or both:
        rc |= lint()
    if args.docs or both:
        rc |= docs()
    return rc


if __name__ == "__main__":
    sys.exit(main())
