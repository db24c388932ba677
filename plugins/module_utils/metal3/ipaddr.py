"""IP pool arithmetic and the IPAM webhooks' validation (pure functions over dicts).

Mirrors metal3-io/ip-address-manager api/v1alpha1/utils.go: ``GetIPAddress(pool, i)``
is ``start + i`` (bounded by ``end`` and ``subnet`` when given) or, with only a
subnet, ``network + 1 + i`` up to the last address of the subnet.  Each pool
entry is therefore one contiguous interval; ``Ranges`` numbers the addresses of
all entries one after the other so that "the first free address" is the lowest
free index.
"""

from __future__ import annotations

import bisect
import ipaddress

from ansible_collections.baremetal.capi.plugins.module_utils.errors import Invalid
from ansible_collections.baremetal.capi.plugins.module_utils.model import meta, names


def parse(value):
    """An ipaddress object, or None when ``value`` is not an IP (net.ParseIP)."""
    if not isinstance(value, str) or not value or "/" in value or "%" in value:
        return None
    try:
        return ipaddress.ip_address(value)
    except ValueError:
        return None


def normalize(value) -> str | None:
    """The canonical text of an IP (Go's ip.String()), or None."""
    ip = parse(value)
    return str(ip) if ip is not None else None


def address_name(name_prefix: str, ip: str) -> str:
    """``<namePrefix>-<ip with . and : replaced by ->``, trailing dashes trimmed (formatAddressName)."""
    return (name_prefix + "-" + ip.replace(":", "-").replace(".", "-")).rstrip("-")


class Range:
    """One pool entry: the interval [lo, hi] of addresses GetIPAddress can render."""

    def __init__(self, entry: dict):
        self.entry = entry
        start, end = parse(entry.get("start")), parse(entry.get("end"))
        net = None
        if entry.get("subnet"):
            net = ipaddress.ip_network(entry["subnet"], strict=False)
        version = (start or end or net).version if (start or end or net) else 4
        self.cls = ipaddress.IPv4Address if version == 4 else ipaddress.IPv6Address
        top = (1 << (32 if version == 4 else 128)) - 1
        # upstream's GetPoolSize: a start without end or subnet is not bounded (random cannot use it)
        self.bounded = bool(net is not None or (start is not None and end is not None))
        if start is not None:
            lo, hi = int(start), int(end) if end is not None else top
            if net is not None:
                if start not in net:
                    lo, hi = 1, 0  # index 0 is already out of the subnet: nothing to render
                else:
                    hi = min(hi, int(net.broadcast_address))
        elif net is not None:
            lo, hi = int(net.network_address) + 1, int(net.broadcast_address)
        else:
            lo, hi = 1, 0
        self.lo, self.hi = lo, hi
        self.size = max(0, hi - lo + 1)

    def at(self, i: int) -> str:
        return str(self.cls(self.lo + i))

    def offset(self, ip) -> int | None:
        if not isinstance(ip, self.cls) or not self.lo <= int(ip) <= self.hi:
            return None
        return int(ip) - self.lo


class Ranges:
    """Every entry of ``spec.pools``, numbered one after the other."""

    def __init__(self, spec: dict):
        self.spec = spec.get("pools") or []
        self.ranges = [Range(e) for e in self.spec]
        self.starts = []
        total = 0
        for r in self.ranges:
            self.starts.append(total)
            total += r.size
        self.total = total

    def iterate(self, first: int = 0):
        """(index, ip, range) from index ``first`` on."""
        for base, r in zip(self.starts, self.ranges, strict=True):
            if first >= base + r.size:
                continue
            for i in range(max(0, first - base), r.size):
                yield base + i, r.at(i), r

    def at(self, idx: int):
        """(ip, range) of index ``idx``, or None past the end."""
        pos = bisect.bisect_right(self.starts, idx) - 1
        while pos >= 0 and pos < len(self.ranges):
            r = self.ranges[pos]
            if idx - self.starts[pos] < r.size:
                return r.at(idx - self.starts[pos]), r
            pos += 1  # an empty range shares its start with the next one
            if pos < len(self.ranges) and idx < self.starts[pos]:
                return None
        return None

    def locate(self, value):
        """(index, range) of an address inside the pools, or None."""
        ip = parse(value) if isinstance(value, str) else value
        if ip is None:
            return None
        for base, r in zip(self.starts, self.ranges, strict=True):
            off = r.offset(ip)
            if off is not None:
                return base + off, r
        return None


# -- webhooks -------------------------------------------------------------------------


def _cmp_key(ip):
    # netip.Addr.Compare: IPv4 sorts before IPv6
    return (ip.version, int(ip))


def in_bounds(spec: dict, value) -> bool:
    """The webhook's isAddressInBonds: start <= ip, ip <= end, ip inside subnet, for some pool entry."""
    ip = parse(value)
    if ip is None:
        return False
    for entry in spec.get("pools") or []:
        start, end = parse(entry.get("start")), parse(entry.get("end"))
        if start is not None and _cmp_key(start) > _cmp_key(ip):
            continue
        if end is not None and _cmp_key(end) < _cmp_key(ip):
            continue
        if entry.get("subnet"):
            try:
                if ip not in ipaddress.ip_network(entry["subnet"], strict=False):
                    continue
            except (ValueError, TypeError):
                continue
        return True
    return False


def _ip(value, where, field):
    if parse(value) is None:
        raise Invalid(f"invalid IP address: {value!r}", obj=where, field=field)


def validate_pool(obj: dict, old: dict | None = None, in_use=()) -> None:
    """IPPool webhook: formats, start <= end, bounded random pools, pre-allocations, immutables."""
    where = meta.ref(obj)
    spec = obj.get("spec") or {}
    if not isinstance(spec.get("namePrefix"), str) or not spec.get("namePrefix"):
        raise Invalid("namePrefix is required", obj=where, field="spec.namePrefix")
    strategy = spec.get("allocationStrategy") or "sequential"
    if strategy not in ("sequential", "random"):
        raise Invalid(
            f"allocationStrategy must be sequential or random, got {strategy!r}",
            obj=where,
            field="spec.allocationStrategy",
        )
    for base, entry in [("spec", spec)] + [(f"spec.pools[{i}]", e) for i, e in enumerate(spec.get("pools") or [])]:
        if not isinstance(entry, dict):
            raise Invalid("must be a mapping", obj=where, field=base)
        prefix = entry.get("prefix", 0)
        if not isinstance(prefix, int) or isinstance(prefix, bool) or not 0 <= prefix <= 128:
            raise Invalid(f"prefix must be an integer 0..128, got {prefix!r}", obj=where, field=f"{base}.prefix")
        if entry.get("gateway") is not None:
            _ip(entry["gateway"], where, f"{base}.gateway")
        for j, dns in enumerate(entry.get("dnsServers") or []):
            _ip(dns, where, f"{base}.dnsServers[{j}]")
    if not spec.get("pools"):
        raise Invalid("at least one pool (start, end or subnet) is required", obj=where, field="spec.pools")
    for i, entry in enumerate(spec["pools"]):
        field = f"spec.pools[{i}]"
        if not any(entry.get(k) for k in ("start", "end", "subnet")):
            raise Invalid("start, end or subnet is required", obj=where, field=field)
        for key in ("start", "end"):
            if entry.get(key) is not None:
                _ip(entry[key], where, f"{field}.{key}")
        if entry.get("subnet") is not None:
            try:
                ipaddress.ip_network(entry["subnet"], strict=False)
            except ValueError:
                raise Invalid(f"invalid subnet {entry['subnet']!r}", obj=where, field=f"{field}.subnet") from None
        start, end = parse(entry.get("start")), parse(entry.get("end"))
        if start is not None and end is not None:
            if start.version != end.version:
                raise Invalid("start and end are of different IP versions", obj=where, field=field)
            if start > end:
                raise Invalid(f"start {entry['start']} is greater than end {entry['end']}", obj=where, field=field)
        if strategy == "random" and not Range(entry).bounded:
            raise Invalid(
                "the random strategy needs a bounded pool (start with end or subnet, or a subnet)",
                obj=where,
                field=field,
            )
    seen = {}
    pre = spec.get("preAllocations") or {}
    if not isinstance(pre, dict):
        raise Invalid("preAllocations must be a mapping of claim name to IP", obj=where, field="spec.preAllocations")
    for claim, value in pre.items():
        field = f"spec.preAllocations[{claim}]"
        _ip(value, where, field)
        norm = normalize(value)
        if norm in seen:
            raise Invalid(f"duplicate pre-allocated IP {value} (also for {seen[norm]})", obj=where, field=field)
        seen[norm] = claim
        if not in_bounds(spec, norm):
            raise Invalid(f"{value} is out of bonds of the pools given", obj=where, field=field)
    if old is not None:
        if (old.get("spec") or {}).get("namePrefix") != spec.get("namePrefix"):
            raise Invalid("cannot be modified", obj=where, field="spec.namePrefix")
        if ((old.get("spec") or {}).get("allocationStrategy") or "sequential") != strategy:
            raise Invalid("cannot be modified", obj=where, field="spec.allocationStrategy")
        for address in list(in_use) + list(((old.get("status") or {}).get("indexes") or {}).values()):
            if not in_bounds(spec, address):
                raise Invalid(f"{address} is in use but out of bonds of the pools given", obj=where, field="spec.pools")


def validate_claim(obj: dict, old: dict | None = None) -> None:
    """IPClaim webhook: pool.name required, a valid ipAddress annotation, pool immutable."""
    where = meta.ref(obj)
    pool = (obj.get("spec") or {}).get("pool") or {}
    if not pool.get("name"):
        raise Invalid("pool name is required", obj=where, field="spec.pool.name")
    requested = meta.annotations(obj).get(names.IPADDRESS_ANNOTATION)
    if requested is not None and parse(requested) is None:
        raise Invalid(
            f"invalid IP address {requested!r}", obj=where, field=f"metadata.annotations[{names.IPADDRESS_ANNOTATION}]"
        )
    if old is not None:
        old_pool = (old.get("spec") or {}).get("pool") or {}
        ns = meta.namespace(obj)
        defaults = {"namespace": ns, "kind": ""}
        for key in ("name", "namespace", "kind"):
            if (old_pool.get(key) or defaults.get(key, "")) != (pool.get(key) or defaults.get(key, "")):
                raise Invalid("cannot be modified", obj=where, field=f"spec.pool.{key}")
