# Copyright: Contributors to the baremetal.capi collection
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A static IP on a machine's boot interface (CAPMAAS spectro-master ``spec.staticIP``).

Before deploying, the boot interface's links are replaced by one STATIC link on the subnet of
``staticIP.cidr`` with ``staticIP.ip`` and the subnet's gateway as the default gateway
(``POST nodes/{id}/interfaces/{iface}/ op=unlink_subnet`` then ``op=link_subnet mode=STATIC``). A link that
already is that is left alone, so a re-run changes nothing. ``nameservers`` are the subnet's DNS servers in
MAAS (``subnets/{id}/ dns_servers``), not a per-link setting; they are not applied here.
"""

from __future__ import annotations

import ipaddress

from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta


def check(mm: dict) -> dict | None:
    """``spec.staticIP`` validated: {ip, cidr, gateway?, nameservers?}; None when unset."""
    static = (mm.get("spec") or {}).get("staticIP")
    if not static:
        return None
    where = meta.ref(mm)
    try:
        net = ipaddress.ip_network(static.get("cidr") or "", strict=False)
    except ValueError:
        raise Invalid(
            "staticIP.cidr is not a network (e.g. 10.0.0.0/24)", obj=where, field="spec.staticIP.cidr"
        ) from None
    try:
        ip = ipaddress.ip_address(static.get("ip") or "")
    except ValueError:
        raise Invalid("staticIP.ip is not an IP address", obj=where, field="spec.staticIP.ip") from None
    if ip not in net:
        raise Invalid(f"staticIP.ip {ip} is not in staticIP.cidr {net}", obj=where, field="spec.staticIP.ip")
    return {"ip": str(ip), "cidr": str(net)}


def apply(client, m: dict, static: dict) -> bool:
    """Make the boot interface's only link STATIC ``static['ip']``; True when it changed something."""
    iface = m.get("boot_interface") or (m.get("interface_set") or [{}])[0]
    links = iface.get("links") or []
    if len(links) == 1 and links[0].get("mode") == "static" and links[0].get("ip_address") == static["ip"]:
        return False
    sid = m["system_id"]
    for link in links:
        client.unlink_subnet(sid, iface["id"], link["id"])
    client.link_subnet(sid, iface["id"], mode="STATIC", subnet=f"cidr:{static['cidr']}", ip_address=static["ip"],
                       default_gateway="true")  # fmt: skip
    return True
