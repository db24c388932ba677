"""What ``python -m lab up|status`` prints: the services' reports without their secrets."""

from __future__ import annotations

import json

from lab.__main__ import _printable


def test_the_printed_report_hides_the_api_key_and_keeps_the_rest():
    info = {"healthy": True, "url": "http://127.0.0.1:1/MAAS/", "api_key": "c:t:s", "api_key_file": "/x/api_key"}
    out = _printable(info)
    assert "c:t:s" not in out
    assert json.loads(out) == {**info, "api_key": "<redacted>"}
