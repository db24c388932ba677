"""awx.awx, the real collection, for the tests that check awx/configure.yml against its modules.

Galaxy is not reachable from CI, but PyPI is, and the ``ansible`` package on PyPI bundles awx.awx.
``make awx-collection`` runs this file: pip downloads the wheel pinned (with its hash) in awx-collection.txt
and only ``ansible_collections/awx/awx`` is unpacked, into ``build/awx-collection`` (a collections path of
its own, so no other test or ansible run sees awx.awx).  The unit tests read it there and never fetch.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
PIN = Path(__file__).resolve().parent / "awx-collection.txt"
COLLECTIONS_PATH = REPO / "build" / "awx-collection"
COLLECTION = COLLECTIONS_PATH / "ansible_collections" / "awx" / "awx"
MEMBERS = "ansible_collections/awx/awx/"


def version() -> str:
    return json.loads((COLLECTION / "MANIFEST.json").read_text())["collection_info"]["version"]


def fetch() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:"]
            + ["--require-hashes", "-r", str(PIN), "-d", tmp],
            check=True,
        )
        (wheel,) = Path(tmp).glob("ansible-*.whl")
        staging = Path(tmp) / "out"
        with zipfile.ZipFile(wheel) as archive:
            members = [m for m in archive.namelist() if m.startswith(MEMBERS)]
            if not any(m == MEMBERS + "MANIFEST.json" for m in members):
                sys.exit(f"{wheel.name} has no {MEMBERS}MANIFEST.json")
            archive.extractall(staging, members)
        shutil.rmtree(COLLECTIONS_PATH, ignore_errors=True)
        COLLECTIONS_PATH.mkdir(parents=True)
        shutil.move(str(staging / "ansible_collections"), str(COLLECTIONS_PATH / "ansible_collections"))
    print(f"awx.awx {version()} from {wheel.name} in {COLLECTION.relative_to(REPO)}")


if __name__ == "__main__":
    fetch()
