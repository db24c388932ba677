"""The current lab's loopback prefix ``127.A`` (lab/config.py, ``BMCAPI_LAB_LOOPBACK``): the tests write the
addresses they put on loopback as ``f"{LOOP}.X.Y"`` so that two labs' test runs never meet on one address."""

from __future__ import annotations

from lab.config import load

LOOP = load().loopback
