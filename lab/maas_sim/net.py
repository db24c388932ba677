"""The simulator's one subnet: the lab's ``127.A.2.0/24`` (lab/config.py), given by the lab as
``BMCAPI_MAAS_SIM_NET`` (``127.A.2``) so that two labs' MAAS machines never share an address."""

from __future__ import annotations

import os

NET = os.environ.get("BMCAPI_MAAS_SIM_NET", "127.0.2")
CIDR = f"{NET}.0/24"
GATEWAY = f"{NET}.254"
